package bad

import "time"

// An add field is a signed integer of an etf aggregate, written on its
// own: not the id, the version, a lookup or a time, and not nested.
type Score struct {
	_       struct{}  `noam:"aggregate"`
	ID      int64     `noam:"id,add"`
	Version int64     `noam:"version,add"`
	Points  int64     `noam:"lookup,add"`
	Seen    time.Time `noam:"updated,add"`
	Hits    uint32    `noam:"add"`
	Ratio   float64   `noam:"add"`
	Likes   int       `noam:"add"`
}

type Root struct {
	_     struct{} `noam:"aggregate,strategy=eao"`
	ID    string   `noam:"id"`
	Count int32    `noam:"add"`
}

type Inner struct {
	N int64 `noam:"add"`
}
