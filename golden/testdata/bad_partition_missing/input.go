package bad

// partition= names no field at all, a skipped field, and the id.
type Game struct {
	_      struct{} `noam:"aggregate,partition=players,partition=cache,partition=id"`
	ID     string   `noam:"id"`
	Cache  []string `noam:"-"`
	Rounds []string
}
