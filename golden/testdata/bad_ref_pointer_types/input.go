package bad

// A ref holds the target's id type (through slices and pointers only).
type Player struct {
	_  struct{} `noam:"aggregate"`
	ID int64    `noam:"id"`
}

type Game struct {
	_       struct{}         `noam:"aggregate"`
	ID      string           `noam:"id"`
	Winner  *string          `noam:"ref=Player"`
	Players map[string]int64 `noam:"ref=Player"`
	Judges  []uint64         `noam:"ref=Player"`
}
