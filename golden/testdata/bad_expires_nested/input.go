package bad

import "time"

// The expiry field is a top-level field of an aggregate: not in a
// partition element, not in a nested struct.
type Game struct {
	_      struct{} `noam:"aggregate,partition=rounds"`
	ID     string   `noam:"id"`
	Rounds []Round
	Venue  Venue
}

type Round struct {
	Ends time.Time `noam:"expires"`
}

type Venue struct {
	Closes time.Time `noam:"expires"`
}
