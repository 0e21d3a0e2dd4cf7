package bad

import "time"

// Timestamps are time.Time fields.
type Game struct {
	_       struct{}   `noam:"aggregate"`
	ID      string     `noam:"id"`
	Created int64      `noam:"created"`
	Updated *time.Time `noam:"updated"`
}

type Stamp time.Time

type Match struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Created Stamp    `noam:"created"`
	Updated string   `noam:"updated"`
}
