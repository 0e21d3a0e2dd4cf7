package bad

// The parts of a composite lookup lie in two different slices.
type Hotel struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Rooms []Room
	Staff []Person
}

type Room struct {
	Kind string `noam:"lookup=kindName"`
}

type Person struct {
	Name string `noam:"lookup=kindName"`
}
