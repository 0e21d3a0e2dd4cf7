package bad

import "time"

// A timestamp is a field of its own: not both timestamps, not the id or
// the version, no lookup.
type Game struct {
	_       struct{}  `noam:"aggregate"`
	ID      string    `noam:"id"`
	Version int64     `noam:"version,updated"`
	At      time.Time `noam:"created,updated"`
	Seen    time.Time `noam:"updated,lookup"`
}

type Event struct {
	_  struct{}  `noam:"aggregate"`
	At time.Time `noam:"id,created"`
}
