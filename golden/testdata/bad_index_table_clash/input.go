package bad

// Audit's collection is named like Member's index tables on MongoDB
// (Member__email) and on bbolt (Member.email).
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Email string   `noam:"lookup,unique"`
}

type Audit struct {
	_  struct{} `noam:"aggregate,collection=Member__email"`
	ID string   `noam:"id"`
}

type Log struct {
	_  struct{} `noam:"aggregate,collection=Member.email"`
	ID string   `noam:"id"`
}
