// Package old is package tally's Tally before it had its numbers: the
// blocks it writes have no entry for them.
package old

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Tally is stored in collection "tallies", as tally.Tally is.
type Tally struct {
	_       struct{} `noam:"aggregate,collection=tallies"`
	ID      string   `noam:"id"`
	Name    string   `noam:"lookup"`
	Version int64    `noam:"version"`
}
