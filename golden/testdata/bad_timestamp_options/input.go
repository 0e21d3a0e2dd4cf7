package bad

import "time"

// Misspelled timestamp options.
type Game struct {
	_       struct{}  `noam:"aggregate,created"`
	ID      string    `noam:"id"`
	Created time.Time `noam:"created=now"`
	Updated time.Time `noam:"updated,updated"`
	Changed time.Time `noam:"update"`
	Made    time.Time `noam:"created,counter"`
	Old     time.Time `noam:"partition=rounds,created"`
}
