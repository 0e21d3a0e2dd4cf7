// Package tally is the model of the conformance suite's Add subtests
// (runtime/storetest): numbers that writes add to (noam:"add"), of each
// signed integer width, with a version and an updated timestamp (Tally)
// and without either (Count). Package old is Tally as written before it
// had its numbers.
package tally

import "time"

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Tally has one add field of each width, a version and a timestamp.
type Tally struct {
	_       struct{}  `noam:"aggregate,collection=tallies"`
	ID      string    `noam:"id"`
	Name    string    `noam:"lookup"`
	Hits    int64     `noam:"add"`
	Small   int8      `noam:"add"`
	Mid     int32     `noam:"add"`
	Plain   int       `noam:"add"`
	Touched time.Time `noam:"updated"`
	Version int64     `noam:"version"`
}

// Count is an add field alone: no version, no timestamp.
type Count struct {
	_  struct{} `noam:"aggregate,collection=counts"`
	ID string   `noam:"id"`
	N  int16    `noam:"add"`
}
