// Package lookups has every kind of lookup and enumerable key: a unique
// lookup, a composite lookup, a lookup on a nested field path, lookups on
// the elements of a slice field (also a partitioned one, and a unique one),
// lookups on an EAO aggregate's root, and counters on a scalar id and on
// the last part of a composite id, with integer types that need conversions.
package lookups

// Shop has lookups on separate entries (ETF).
type Shop struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Email   string   `noam:"lookup,unique"`     // GetByEmail
	Region  string   `noam:"lookup=regionRank"` // ListByRegionRank: region,
	Rank    uint16   `noam:"lookup=regionRank"` // then rank
	Labels  []string `noam:"lookup"`            // every label
	Codes   []int32  `noam:"lookup,unique"`     // unique slice elements
	Address Location `bson:"address"`           // ListByAddressCity
	Notes   string
}

// Location is a plain struct with a looked-up field.
type Location struct {
	City   string `bson:"city" noam:"lookup"`
	Street string `bson:"street"`
}

// Ticket is an EAO aggregate with a counter id, a partitioned field whose
// elements are looked up, and a version.
type Ticket struct {
	_       struct{} `noam:"aggregate,strategy=eao,partition=events"`
	ID      TicketID `noam:"id,counter"`
	Owner   string   `noam:"lookup"`
	Events  []Event
	Version int64 `noam:"version"`
}

// TicketID is a named integer id type.
type TicketID uint32

// Event is one element of a ticket's partitioned events.
type Event struct {
	Kind string `bson:"kind" noam:"lookup"`
	Text string `bson:"text"`
}

// ReplyKey is a composite block key: a reply is numbered per ticket.
type ReplyKey struct {
	Ticket TicketID `bson:"ticket"`
	Seq    int16    `bson:"seq"`
}

// Reply is numbered per ticket by a scoped counter.
type Reply struct {
	_      struct{} `noam:"aggregate"`
	Key    ReplyKey `noam:"id,counter"`
	Author string   `noam:"lookup"`
	Body   string
}

// Badge has a unique lookup that indexes zero values too (zeros): at most
// one badge may have no code.
type Badge struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Code string   `noam:"lookup,unique,zeros"`
}
