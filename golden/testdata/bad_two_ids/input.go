package bad

// Game has two id fields.
type Game struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Slug string   `noam:"id"`
}
