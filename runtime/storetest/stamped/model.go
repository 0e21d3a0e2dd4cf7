// Package stamped is the model of the conformance suite's Timestamps
// subtest (runtime/storetest): aggregates with noam:"created" and
// noam:"updated" fields.
//
//   - Post: strategy etf, a version, a partition (edits), no lookup.
//   - Note: strategy etf without a version, a lookup (an index table on
//     every store but MongoDB, where the suite's harness may map it to
//     one), a partition (lines).
//   - Event and Token: UUID ids (versions 7 and 4), for the UUIDKeys
//     subtest.
package stamped

import "time"

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Post has timestamps and a version.
type Post struct {
	_       struct{} `noam:"aggregate,collection=posts,partition=edits"`
	ID      string   `noam:"id"`
	Title   string
	Edits   []string
	Created time.Time `noam:"created"`
	Updated time.Time `bson:"changed" noam:"updated"`
	Version int64     `noam:"version"`
}

// Note has timestamps, a lookup and no version.
type Note struct {
	_       struct{} `noam:"aggregate,collection=notes,partition=lines"`
	ID      string   `noam:"id"`
	Author  string   `noam:"lookup"`
	Lines   []string
	Created time.Time `noam:"created"`
	Updated time.Time `noam:"updated"`
}

// Event has a UUID id (version 7, time-ordered), a created timestamp and
// a lookup.
type Event struct {
	_       struct{}  `noam:"aggregate,collection=events"`
	ID      string    `noam:"id,uuid"`
	Kind    string    `noam:"lookup"`
	Created time.Time `noam:"created"`
}

// Token has a random UUID id (version 4).
type Token struct {
	_      struct{} `noam:"aggregate,collection=tokens"`
	ID     string   `noam:"id,uuid=v4"`
	Holder string
}
