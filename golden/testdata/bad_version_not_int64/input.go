package bad

// Game has an int version.
type Game struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Version int      `noam:"version"`
}
