// Package partition is the paper's Fig. 3: a Game stored one entry per
// top-level field, and one entry per round (partition=rounds).
package partition

// Game has one entry per round: rounds[0], rounds[1], ...
type Game struct {
	_            struct{} `noam:"aggregate,partition=rounds"`
	ID           string   `noam:"id"`
	FirstPlayer  string
	SecondPlayer string
	Rounds       []Round
}

// Round is one round of a game.
type Round struct {
	Moves    []string `bson:"moves"`
	Comments []string `bson:"comments,omitempty"`
}
