package bad

// Tags inside a struct type written in place would be ignored.
type Member struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Home struct {
		City string `noam:"lookup"`
	}
	Pets []struct {
		Owner string `bson:"owner" noam:"ref=Member"`
	}
}
