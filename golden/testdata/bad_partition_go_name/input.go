package bad

// partition= takes the entry key (rounds), not the Go field name.
type Game struct {
	_      struct{} `noam:"aggregate,partition=Rounds"`
	ID     string   `noam:"id"`
	Rounds []Round
}

type Round struct {
	Moves []string
}
