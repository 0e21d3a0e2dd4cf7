package bad

// Entry keys that are not keys on any store: access paths use . [ ] and /.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Dots  string   `bson:"a.b"`
	Index string   `bson:"x[1]"`
	Slash string   `bson:"a/b"`
}
