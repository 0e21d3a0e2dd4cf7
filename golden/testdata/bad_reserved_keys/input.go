package bad

// Entry keys the stores keep for themselves, and keys that are not keys.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Doc   string   `bson:"_id"`
	Len   int      `bson:"_len"`
	Seq   int64    `bson:"_seq"`
	Inc   string   `bson:"_inc"`
	Dots  string   `bson:"a.b"`
	Price int      `bson:"$price"`
}
