package bad

// Reading has a float64 id.
type Reading struct {
	_     struct{} `noam:"aggregate"`
	At    float64  `noam:"id"`
	Value int
}
