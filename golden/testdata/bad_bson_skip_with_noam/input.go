package bad

// bson:"-" leaves the field out of the stored value, so a lookup on it
// cannot be kept.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Email string   `bson:"-" noam:"lookup,unique"`
	Home  Address
}

type Address struct {
	City string `bson:"-" noam:"lookup"`
}
