package bad

// User has a string block key.
type User struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

// Game holds rounds in two fields.
type Game struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Rounds  []Round
	Replays []Round
}

// Round refers to a user with the wrong key type, and to no aggregate.
type Round struct {
	Winner int    `noam:"ref=User"`
	Judge  string `noam:"ref=Nobody"`
}
