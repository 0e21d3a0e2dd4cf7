package bad

// User has no id.
type User struct {
	_    struct{} `noam:"aggregate,strategy=eav"`
	Name string
}

// Game has many problems.
type Game struct {
	_       struct{} `noam:"aggregate,partition=title,sharded"`
	ID      float64  `noam:"id"`
	Title   string
	Version int32  `noam:"version"`
	Owner   string `noam:"ref=Nobody"`
	Other   string `noam:"idd"`
}

// Round is not an aggregate but carries an id tag.
type Round struct {
	Num int `noam:"id"`
}
