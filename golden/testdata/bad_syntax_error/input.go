package bad

// A syntax error is reported with its position.
type Game struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
