package bad

// Game partitions a string field.
type Game struct {
	_    struct{} `noam:"aggregate,partition=name"`
	ID   string   `noam:"id"`
	Name string
}
