package bad

// Game has a tag without quotes around its value.
type Game struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Name string   `noam:name`
}
