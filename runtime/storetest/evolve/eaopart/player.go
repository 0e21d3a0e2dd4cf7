// Package eaopart is one version of the evolution suite's model
// (runtime/storetest, Evolution): the aggregate Player of collection
// "players", strategy eao, scores partitioned.
package eaopart

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Player is stored in collection "players" by every version of the model.
type Player struct {
	_      struct{} `noam:"aggregate,collection=players,strategy=eao,partition=scores"`
	ID     string   `noam:"id"`
	Name   string
	Email  string
	City   string
	Scores []Score
}

// Score is one element of Player.Scores.
type Score struct {
	Game   string
	Points int
}
