package bad

// User is referenced by Game.
type User struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

// Game tags an unexported field.
type Game struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	owner string   `noam:"ref=User"`
}
