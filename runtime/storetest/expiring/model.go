// Package expiring is the model of the conformance suite's Expiry subtest
// (runtime/storetest): aggregates with a noam:"expires" field.
//
//   - Session: strategy etf, a version, a unique lookup (token), a
//     non-unique lookup (user), a partition (events).
//   - Lease: strategy eao, a unique lookup (holder), no version.
//   - Ticket: strategy etf, no lookup, no version, a created timestamp:
//     the stores' deletes without index entries.
package expiring

import "time"

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Session expires at Expires.
type Session struct {
	_       struct{} `noam:"aggregate,collection=sessions,partition=events"`
	ID      string   `noam:"id"`
	Token   string   `noam:"lookup,unique"`
	User    string   `noam:"lookup"`
	Events  []string
	Expires time.Time `noam:"expires"`
	Version int64     `noam:"version"`
}

// Lease is stored as one document per block (EAO) and expires at Until.
type Lease struct {
	_      struct{}  `noam:"aggregate,collection=leases,strategy=eao"`
	ID     string    `noam:"id"`
	Holder string    `noam:"lookup,unique"`
	Until  time.Time `bson:"until" noam:"expires"`
}

// Ticket has no lookup and no version.
type Ticket struct {
	_       struct{} `noam:"aggregate,collection=tickets"`
	ID      string   `noam:"id"`
	Seat    string
	Expires time.Time `noam:"expires"`
	// Created is when the ticket was created: a Put over an expired
	// ticket creates it anew.
	Created time.Time `noam:"created"`
}
