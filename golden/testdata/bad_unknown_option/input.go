package bad

// Game misspells collection.
type Game struct {
	_  struct{} `noam:"aggregate,colection=games"`
	ID string   `noam:"id"`
}
