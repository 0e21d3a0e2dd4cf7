package bad

// Field options on the marker, marker options on fields and on plain structs.
type Game struct {
	_      struct{} `noam:"aggregate,lookup,id"`
	ID     string   `noam:"id,collection=games"`
	Rounds []Round  `noam:"partition=rounds"`
	_      int      `noam:"lookup"`
}

type Round struct {
	Moves   []string `noam:"strategy=eao"`
	Version int64    `noam:"version"`
}
