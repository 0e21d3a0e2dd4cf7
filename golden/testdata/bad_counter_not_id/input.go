package bad

// counter belongs on the id field.
type Member struct {
	_   struct{} `noam:"aggregate"`
	ID  int64    `noam:"id"`
	Seq int64    `noam:"counter"`
}
