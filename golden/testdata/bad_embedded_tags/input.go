package bad

// Embedded fields are not supported unless left out.
type Base struct {
	Created int64
}

type Game struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
	Base
	*Extra `noam:"lookup"`
}

type Extra struct {
	Note string
}
