// Package game is the NoAM paper's running example: an on-line social game
// with players, games and rounds (Bugiotti et al., Fig. 1-3 and 8).
//
// A Game is partitioned by rounds: each round is its own entry rounds[i], so
// that completing a round appends one entry instead of rewriting the game.
// A Player is stored one entry per top-level field (ETF).
package game

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Player is an aggregate: a player with the games she plays.
type Player struct {
	_         struct{} `noam:"aggregate,collection=Player"`
	Username  string   `noam:"id"`
	FirstName string
	LastName  string
	Score     int
	Games     []GameRef
}

// GameRef is a player's reference to one of her games and its opponent.
type GameRef struct {
	Game     string `bson:"game" noam:"ref=Game,lookup=game"`
	Opponent string `bson:"opponent" noam:"ref=Player"`
}

// Game is an aggregate: two players and the rounds they played, one entry
// per round (Fig. 3), with a version entry for optimistic concurrency.
type Game struct {
	_            struct{} `noam:"aggregate,partition=rounds"`
	ID           string   `noam:"id"`
	FirstPlayer  string   `noam:"ref=Player"`
	SecondPlayer string   `noam:"ref=Player"`
	Rounds       []Round
	Version      int64 `noam:"version"`
}

// Round is one round of a game.
type Round struct {
	Moves    []string `bson:"moves"`
	Comments []string `bson:"comments,omitempty"`
	Actions  []string `bson:"actions,omitempty"`
	Spell    string   `bson:"spell,omitempty"`
}

// Tournament is an aggregate stored as one entry (EAO): it is small and
// always read and written whole. Its block key is an integer, so tournaments
// list in numeric order.
type Tournament struct {
	_     struct{} `noam:"aggregate,strategy=eao"`
	ID    int64    `noam:"id"`
	Name  string
	Games []string `noam:"ref=Game"`
}
