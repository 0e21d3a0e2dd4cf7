package bad

// The marker must be of type struct{}.
type Game struct {
	_  int    `noam:"aggregate"`
	ID string `noam:"id"`
}

type Round struct {
	_  struct{ X int } `noam:"aggregate"`
	ID string          `noam:"id"`
}
