package bad

// A misspelled partition name gets a suggestion.
type Game struct {
	_      struct{} `noam:"aggregate,partition=roudns"`
	ID     string   `noam:"id"`
	Rounds []Round
}

type Round struct {
	Moves []string
}
