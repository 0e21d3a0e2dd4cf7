package bad

import "time"

// Timestamps are top-level fields of an aggregate: not in a partition
// element, not in a nested struct.
type Game struct {
	_      struct{} `noam:"aggregate,partition=rounds"`
	ID     string   `noam:"id"`
	Rounds []Round
	Venue  Venue
}

type Round struct {
	Played time.Time `noam:"updated"`
}

type Venue struct {
	Opened time.Time `noam:"created"`
}
