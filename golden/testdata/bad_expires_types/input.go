package bad

import "time"

// The expiry field is a time.Time.
type Game struct {
	_       struct{}   `noam:"aggregate"`
	ID      string     `noam:"id"`
	Expires *time.Time `noam:"expires"`
}

type Deadline time.Time

type Match struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Until Deadline `noam:"expires"`
}

type Round struct {
	_   struct{} `noam:"aggregate"`
	ID  string   `noam:"id"`
	TTL int64    `noam:"expires"`
}
