package bad

// Block keys must be strings, integers or structs of them.
type MapID struct {
	_  struct{}       `noam:"aggregate"`
	ID map[string]int `noam:"id"`
}

type PtrID struct {
	_  struct{} `noam:"aggregate"`
	ID *string  `noam:"id"`
}

type IfaceID struct {
	_  struct{} `noam:"aggregate"`
	ID any      `noam:"id"`
}

type ChanID struct {
	_  struct{} `noam:"aggregate"`
	ID chan int `noam:"id"`
}

type FuncID struct {
	_  struct{} `noam:"aggregate"`
	ID func()   `noam:"id"`
}

type SliceID struct {
	_  struct{} `noam:"aggregate"`
	ID []byte   `noam:"id"`
}

type KeyWithFloat struct {
	A string
	B float64
}

type CompositeID struct {
	_  struct{}     `noam:"aggregate"`
	ID KeyWithFloat `noam:"id"`
}
