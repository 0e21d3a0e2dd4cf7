// Package table has lookups kept in index tables on every store
// (noam:"lookup,table"), beside a native one, for explain's tests.
package table

type Hotel struct {
	_     struct{} `noam:"aggregate,partition=rooms"`
	ID    string   `noam:"id"`
	Name  string   `noam:"lookup,unique,table"`
	City  string   `noam:"lookup,table"`
	Stars int      `noam:"lookup"`
	Rooms []Room
}

type Room struct {
	Kind string `bson:"kind" noam:"lookup=roomKind,table"`
}
