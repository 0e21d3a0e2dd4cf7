package bench

type CheckProbe struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}
