package bad

// A value type that contains itself does not compile; noamgen reports the
// compiler's error.
type Game struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Root Node
}

type Node struct {
	Label string
	Next  Node
}
