package bad

// Errors in two files are sorted by file, then by line.
type Game struct {
	_  struct{} `noam:"aggregate,strategy=eoa"`
	ID string   `noam:"id"`
}
