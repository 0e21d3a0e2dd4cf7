package bad

// Generic types cannot be aggregates.
type Box[T any] struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Value T
}
