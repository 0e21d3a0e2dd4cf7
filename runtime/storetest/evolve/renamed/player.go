// Package renamed is one version of the evolution suite's model
// (runtime/storetest, Evolution): the aggregate Player of collection
// "players", strategy etf, with field City renamed Town (its bson tag keeps
// the entry key "city"), field Email removed and field Nick added.
package renamed

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Player is stored in collection "players" by every version of the model.
type Player struct {
	_      struct{} `noam:"aggregate,collection=players"`
	ID     string   `noam:"id"`
	Name   string
	Town   string `bson:"city"`
	Nick   string
	Scores []Score
}

// Score is one element of Player.Scores.
type Score struct {
	Game   string
	Points int
}
