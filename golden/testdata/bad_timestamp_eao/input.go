package bad

import "time"

// Under strategy=eao a timestamp would be inside the root entry, which
// AppendRounds does not rewrite.
type Game struct {
	_       struct{}  `noam:"aggregate,strategy=eao,partition=rounds"`
	ID      string    `noam:"id"`
	Created time.Time `noam:"created"`
	Updated time.Time `noam:"updated"`
	Rounds  []Round
}

type Round struct {
	Moves int
}

// Also without partitions: Put replaces the root whole.
type Player struct {
	_       struct{}  `noam:"aggregate,strategy=eao"`
	ID      string    `noam:"id"`
	Updated time.Time `noam:"updated"`
}
