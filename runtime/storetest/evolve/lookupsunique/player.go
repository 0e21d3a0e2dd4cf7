// Package lookupsunique is one version of the evolution suite's model
// (runtime/storetest, Evolution): the aggregate Player of collection
// "players", strategy etf with only the unique lookup on email (the
// version "lookups" without its lookup on city).
package lookupsunique

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Player is stored in collection "players" by every version of the model.
type Player struct {
	_      struct{} `noam:"aggregate,collection=players"`
	ID     string   `noam:"id"`
	Name   string
	Email  string `noam:"lookup,unique"`
	City   string
	Scores []Score
}

// Score is one element of Player.Scores.
type Score struct {
	Game   string
	Points int
}
