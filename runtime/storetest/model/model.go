// Package model is the conformance suite's model (runtime/storetest): a few
// tagged aggregates that together use every feature of noamgen, so that
// running the suite against a store's generated repositories exercises every
// operation of the store contract (runtime.Store) on that store.
//
//   - Match: strategy etf, a version, a partition (rounds) whose elements
//     carry a unique lookup, a unique lookup, a composite lookup (string,
//     int), a lookup on slice elements, a lookup on a nested path, a
//     time.Time, a map and nested structs in values, a recursive value
//     (Node, for the depth limit), a collection name and bson entry keys.
//   - Journal: strategy eao with a partition (the paper's ROUNDS layout),
//     a version, a scalar counter id of a named integer type, a lookup on
//     the root entry and one on the partition's elements, and a second
//     partition (notes) that no lookup reads.
//   - Card: strategy eao without a version, an integer id (negative ids
//     too), a lookup on slice elements inside the root entry, pointers and
//     maps of slices in values.
//   - Reply: strategy etf without a version, a composite id (string, int)
//     whose last part a scoped counter numbers (ListByThread), a lookup
//     and a partition (edits) that no lookup reads.
package model

import "time"

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Match is an ETF aggregate like the paper's Game, with lookups.
type Match struct {
	_       struct{}       `noam:"aggregate,collection=matches,partition=rounds"`
	ID      string         `noam:"id"`
	Code    string         `noam:"lookup,unique"`      // GetByCode
	Region  string         `noam:"lookup=regionLevel"` // ListByRegionLevel: region,
	Level   int            `noam:"lookup=regionLevel"` // then level
	Tags    []string       `noam:"lookup"`             // every tag
	Venue   Venue          `bson:"venue"`              // ListByVenueCity
	Start   time.Time      `bson:"start"`
	Meta    map[string]int `bson:"meta"`
	Tree    *Node          `bson:"tree,omitempty"` // as deep as a test makes it
	Rounds  []Round
	Version int64 `noam:"version"`
}

// Venue is a nested struct with a looked-up field.
type Venue struct {
	City  string   `bson:"city" noam:"lookup"`
	Seats int      `bson:"seats"`
	Geo   *Geo     `bson:"geo"`
	Doors []string `bson:"doors"`
}

// Geo is a struct behind a pointer.
type Geo struct {
	Lat float64 `bson:"lat"`
	Lon float64 `bson:"lon"`
}

// Round is one element of Match's partition; its serial is unique across
// every round of every match.
type Round struct {
	Serial string            `bson:"serial" noam:"lookup,unique"`
	Moves  []string          `bson:"moves"`
	Score  map[string]int    `bson:"score"`
	At     time.Time         `bson:"at"`
	Notes  map[string]string `bson:"notes,omitempty"`
	Tree   *Node             `bson:"tree,omitempty"`
}

// Node is a recursive value, nested as deep as a test makes it: Next is
// one level (a document), a kid two (an array and a document).
type Node struct {
	Label string `bson:"label,omitempty"`
	Next  *Node  `bson:"next,omitempty"`
	Kids  []Node `bson:"kids,omitempty"`
}

// JournalID is a named integer id type.
type JournalID int64

// Journal is an EAO aggregate with a partition (ROUNDS), a version and a
// counted id.
type Journal struct {
	_       struct{}  `noam:"aggregate,strategy=eao,partition=lines,partition=notes"`
	ID      JournalID `noam:"id,counter"`
	Owner   string    `noam:"lookup"`
	Title   string
	Opened  time.Time
	Lines   []Line
	Notes   []string `bson:"notes"` // a partition no lookup reads
	Version int64    `noam:"version"`
}

// Line is one element of a journal's lines.
type Line struct {
	Kind string `bson:"kind" noam:"lookup"`
	Text string `bson:"text"`
}

// Card is an EAO aggregate without a version, with an integer id.
type Card struct {
	_      struct{} `noam:"aggregate,strategy=eao"`
	ID     int32    `noam:"id"`
	Title  string
	Labels []string `noam:"lookup"`
	Props  map[string][]int
	Parent *Ref
}

// Ref is a struct behind a pointer inside an EAO root.
type Ref struct {
	Card int32  `bson:"card"`
	Note string `bson:"note"`
}

// ReplyKey is a composite block key: a reply is numbered per thread.
type ReplyKey struct {
	Thread string `bson:"thread"`
	Seq    int64  `bson:"seq"`
}

// Reply is an ETF aggregate without a version, numbered per thread by a
// scoped counter.
type Reply struct {
	_      struct{} `noam:"aggregate,partition=edits"`
	Key    ReplyKey `noam:"id,counter"`
	Author string   `noam:"lookup"`
	Body   string
	Posted time.Time
	Edits  []string `bson:"edits"` // a partition no lookup reads
}
