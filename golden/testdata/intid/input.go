// Package intid has block keys of integer and named string types.
package intid

// GameID is a named string type used as a block key.
type GameID string

// Counter has a signed integer block key.
type Counter struct {
	_     struct{} `noam:"aggregate"`
	ID    int64    `noam:"id"`
	Count int
}

// Shard has an unsigned integer block key.
type Shard struct {
	_    struct{} `noam:"aggregate,strategy=eao"`
	Num  uint32   `noam:"id"`
	Host string
}

// Match has a named string block key.
type Match struct {
	_     struct{} `noam:"aggregate"`
	ID    GameID   `noam:"id"`
	Title string
}
