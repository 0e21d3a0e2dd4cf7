package bad

// An empty tag and empty options.
type Member struct {
	_     struct{} `noam:"aggregate,"`
	ID    string   `noam:"id,,"`
	Email string   `noam:""`
	Name  string   `noam:"=x"`
}
