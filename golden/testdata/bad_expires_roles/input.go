package bad

import "time"

// The expiry field is a field of its own: not the id, the version or a
// timestamp, and it has no lookup.
type Game struct {
	_       struct{}  `noam:"aggregate"`
	ID      string    `noam:"id"`
	Version int64     `noam:"version,expires"`
	Created time.Time `noam:"created,expires"`
	Until   time.Time `noam:"expires,lookup"`
}

type Event struct {
	_  struct{}  `noam:"aggregate"`
	At time.Time `noam:"id,expires"`
}
