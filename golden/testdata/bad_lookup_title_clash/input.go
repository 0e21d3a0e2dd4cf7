package bad

// Two lookups whose methods would share a name: the lookup on A.BC and
// the lookup on ABC (stored as "x") both make ListByABC.
type Item struct {
	_   struct{} `noam:"aggregate"`
	ID  string   `noam:"id"`
	A   Inner
	ABC string `bson:"x" noam:"lookup"`
}

// Inner holds the other looked-up field.
type Inner struct {
	BC string `noam:"lookup"`
}
