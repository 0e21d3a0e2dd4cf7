package bad

// Game has no id field.
type Game struct {
	_    struct{} `noam:"aggregate"`
	Name string
}
