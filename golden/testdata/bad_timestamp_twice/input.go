package bad

import "time"

// One created and one updated field per aggregate.
type Game struct {
	_        struct{}  `noam:"aggregate"`
	ID       string    `noam:"id"`
	Created  time.Time `noam:"created"`
	Opened   time.Time `noam:"created"`
	Updated  time.Time `noam:"updated"`
	Modified time.Time `noam:"updated"`
}
