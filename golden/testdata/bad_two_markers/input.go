package bad

// Two markers: which options win?
type Game struct {
	_  struct{} `noam:"aggregate"`
	_  struct{} `noam:"aggregate,strategy=eao"`
	ID string   `noam:"id"`
}
