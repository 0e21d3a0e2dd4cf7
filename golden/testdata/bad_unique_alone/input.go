package bad

// unique alone is not a lookup.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Email string   `noam:"unique"`
}
