package bad

// Options that take no value, and options that need one.
type Member struct {
	_     struct{} `noam:"aggregate=yes,collection="`
	ID    string   `noam:"id=1"`
	Email string   `noam:"lookup,unique=true"`
	Boss  string   `noam:"ref="`
}
