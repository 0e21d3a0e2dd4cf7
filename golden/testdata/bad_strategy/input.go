package bad

// Game names an unknown strategy.
type Game struct {
	_  struct{} `noam:"aggregate,strategy=eav"`
	ID string   `noam:"id"`
}
