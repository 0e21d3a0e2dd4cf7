package bad

// Lookup values are strings or integers.
type Member struct {
	_      struct{}          `noam:"aggregate"`
	ID     string            `noam:"id"`
	Labels map[string]string `noam:"lookup"`
	Nick   *string           `noam:"lookup"`
	Any    any               `noam:"lookup"`
	Events chan int          `noam:"lookup"`
	Hook   func()            `noam:"lookup"`
	Weight float32           `noam:"lookup"`
	Home   Address           `noam:"lookup"`
	Grid   [][]string        `noam:"lookup"`
}

type Address struct {
	City string
}
