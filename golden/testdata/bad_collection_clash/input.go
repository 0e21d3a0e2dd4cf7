package bad

// Branch takes the collection of Member: both would read each other's blocks.
type Member struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

type Branch struct {
	_  struct{} `noam:"aggregate,collection=Member"`
	ID string   `noam:"id"`
}
