// Package lookups is one version of the evolution suite's model
// (runtime/storetest, Evolution): the aggregate Player of collection
// "players", strategy etf with a lookup on city and a unique lookup on email.
package lookups

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Player is stored in collection "players" by every version of the model.
type Player struct {
	_      struct{} `noam:"aggregate,collection=players"`
	ID     string   `noam:"id"`
	Name   string
	Email  string `noam:"lookup,unique"`
	City   string `noam:"lookup"`
	Scores []Score
}

// Score is one element of Player.Scores.
type Score struct {
	Game   string
	Points int
}
