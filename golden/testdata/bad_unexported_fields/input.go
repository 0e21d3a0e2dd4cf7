package bad

// Tags on unexported fields of aggregates and of plain structs.
type Game struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	owner string   `noam:"lookup"`
	Moves []Move
}

type Move struct {
	by string `noam:"ref=Game"`
}

var _ = Game{}.owner
var _ = Move{}.by
