// Package eao_partition is the paper's Fig. 8 ROUNDS: a Game stored as one
// root entry, plus one entry per round.
package eao_partition

// Game has the root entry (firstPlayer, secondPlayer) and rounds[i].
type Game struct {
	_            struct{} `noam:"aggregate,strategy=eao,partition=rounds"`
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
