package bad

// Options are separated by commas alone.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Email string   `noam:"lookup, unique"`
}
