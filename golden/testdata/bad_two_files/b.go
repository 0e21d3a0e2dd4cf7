package bad

type Player struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"idd"`
	X  string   `noam:"lookup=x y"`
}
