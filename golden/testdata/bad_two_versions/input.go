package bad

// Two version fields.
type Game struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	V1   int64    `noam:"version"`
	V2   int64    `noam:"version"`
	Both int64    `noam:"id,version"`
}
