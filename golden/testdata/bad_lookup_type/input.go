package bad

type Hotel struct {
	_      struct{} `noam:"aggregate"`
	ID     string   `noam:"id"`
	Rating float64  `noam:"lookup"`
}
