// Package collection_and_tags names the collection and entry keys
// explicitly and skips fields that are not persisted.
package collection_and_tags

// Customer is stored in collection "customers".
type Customer struct {
	_        struct{} `noam:"aggregate,collection=customers"`
	ID       string   `bson:"cid" noam:"id"`
	FullName string   `bson:"full_name"`
	Email    string   `bson:"email,omitempty"`
	Secret   string   `noam:"-"`
	Cache    string   `bson:"-"`
	internal int
	URLPath  string
	HTTPCode int
	Plain    string `json:"plain_json"`
}
