// Package hotel shows noamgen's lookups and enumerable keys on the examples
// of the modelling-technique references: hotels found by city and stars
// through a composite-key index table (the "Dortmund:4" index), a unique
// lookup on the hotel's name, lookups on slice elements and nested fields,
// and blog posts whose ids come from an atomic counter, with comments
// numbered per post (comment 3 of post 35) so that a page of a post's
// comments is read by computed keys.
package hotel

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// Hotel is an aggregate with several index tables.
type Hotel struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Name    string   `noam:"lookup,unique"`    // GetByName, ListByName
	City    string   `noam:"lookup=cityStars"` // ListByCityStars: by city,
	Stars   int      `noam:"lookup=cityStars"` // then stars
	Tags    []string `noam:"lookup"`           // ListByTags: every tag is indexed
	Address Address
	Rooms   []Room
}

// Address is where a hotel is.
type Address struct {
	Street  string `bson:"street"`
	Zip     string `bson:"zip" noam:"lookup"` // ListByAddressZip: a nested path
	Country string `bson:"country"`
}

// Room is one of a hotel's rooms.
type Room struct {
	Number int    `bson:"number"`
	Kind   string `bson:"kind"`
}

// Post is a blog post; its id is allocated from a counter (56, 57, 58...).
type Post struct {
	_      struct{} `noam:"aggregate"`
	ID     int64    `noam:"id,counter"`
	Title  string
	Author string `noam:"lookup"`
}

// CommentKey is the block key of a comment: its post and its number within
// the post.
type CommentKey struct {
	Post int64 `bson:"post"`
	Seq  int64 `bson:"seq"`
}

// Comment is a comment on a post. Its number is allocated per post, so the
// comments of post 35 are 35/1, 35/2, ...
type Comment struct {
	_      struct{}   `noam:"aggregate"`
	Key    CommentKey `noam:"id,counter"`
	Author string     `noam:"lookup"`
	Text   string
}
