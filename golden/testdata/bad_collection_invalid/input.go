package bad

// MongoDB refuses collection names with $ or the system. prefix.
type Price struct {
	_  struct{} `noam:"aggregate,collection=price$"`
	ID string   `noam:"id"`
}

type Log struct {
	_  struct{} `noam:"aggregate,collection=system.log"`
	ID string   `noam:"id"`
}
