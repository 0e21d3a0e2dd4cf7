package bad

import "time"

// An aggregate expires at one time.
type Game struct {
	_       struct{}  `noam:"aggregate"`
	ID      string    `noam:"id"`
	Expires time.Time `noam:"expires"`
	Until   time.Time `noam:"expires"`
}
