package bad

// User is an aggregate.
type User struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

// Game references a misspelled aggregate.
type Game struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner string   `noam:"ref=Usr"`
}
