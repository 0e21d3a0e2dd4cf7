package bad

// User has a string block key.
type User struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

// Game references users with the wrong key types.
type Game struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Owner   int64    `noam:"ref=User"`
	Players []int    `noam:"ref=User"`
}
