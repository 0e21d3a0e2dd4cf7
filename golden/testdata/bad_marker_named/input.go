package bad

// The marker must be a blank field.
type Game struct {
	Meta struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
}
