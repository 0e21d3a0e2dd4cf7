package bad

// The version is an int64.
type A struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Version *int64   `noam:"version"`
}

type B struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Version float64  `noam:"version"`
}

type C struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Version uint64   `noam:"version"`
}
