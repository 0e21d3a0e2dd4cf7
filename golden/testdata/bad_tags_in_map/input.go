package bad

// Lookups and refs inside map values would be ignored.
type Member struct {
	_         struct{} `noam:"aggregate"`
	ID        string   `noam:"id"`
	Addresses map[string]Address
	Friends   map[string][]Friend
}

type Address struct {
	City string `noam:"lookup"`
}

type Friend struct {
	ID string `noam:"ref=Member"`
}
