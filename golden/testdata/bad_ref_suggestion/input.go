package bad

// refs to unknown aggregates, near and far, and to a plain struct.
type Player struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

type Game struct {
	_      struct{} `noam:"aggregate"`
	ID     string   `noam:"id"`
	First  string   `noam:"ref=Plyer"`
	Second string   `noam:"ref=player"`
	Third  string   `noam:"ref=Team"`
	Fourth string   `noam:"ref=Move"`
}

type Move struct {
	By string
}
