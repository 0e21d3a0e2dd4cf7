package bad

// A counter allocates integers.
type Key struct {
	Post int64
	Slug string
}

type Comment struct {
	_   struct{} `noam:"aggregate"`
	Key Key      `noam:"id,counter"`
}

type Note struct {
	_  struct{} `noam:"aggregate"`
	ID float64  `noam:"id,counter"`
}
