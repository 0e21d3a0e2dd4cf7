package bad

// Two fields with the same entry key.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Name  string
	Alias string `bson:"name"`
	Email string `bson:"mail,omitempty"`
	Mail  string
}
