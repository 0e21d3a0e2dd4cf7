package bad

// lookup= without a name.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	City  string   `noam:"lookup="`
	Email string   `noam:"lookup=,unique"`
}
