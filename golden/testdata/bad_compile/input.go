package bad

// Game uses an undefined type.
type Game struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner Player
}
