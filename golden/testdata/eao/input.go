// Package eao stores a Player as one entry (Entry per Aggregate Object).
package eao

// Player is stored as a single root entry holding every field but the id.
type Player struct {
	_         struct{} `noam:"aggregate,strategy=eao"`
	Username  string   `noam:"id"`
	FirstName string
	LastName  string
	Score     int
}
