package bad

// Entry keys a store keeps for itself: refused for the stores generated
// for (all of them here), by the store's template.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Doc   string   `bson:"_id"`
	Len   int      `bson:"_len"`
	Seq   int64    `bson:"_seq"`
	Inc   string   `bson:"_inc"`
	Price int      `bson:"$price"`
}
