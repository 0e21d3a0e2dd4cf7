package timestamps

import "time"

// Article keeps when it was created and last written: Create sets both,
// every write (SetTitle, AppendComments, SetCommentsAt, Update, Put)
// sets UpdatedAt, and no setter writes them.
type Article struct {
	_         struct{} `noam:"aggregate,partition=comments"`
	ID        string   `noam:"id"`
	Title     string   `noam:"lookup"`
	Comments  []Comment
	CreatedAt time.Time `bson:"createdAt" noam:"created"`
	UpdatedAt time.Time `bson:"updatedAt" noam:"updated"`
	Version   int64     `noam:"version"`
}

// Comment is one element of an article's comments.
type Comment struct {
	By   string
	Text string
}

// Draft has only an updated timestamp and no version.
type Draft struct {
	_       struct{} `noam:"aggregate"`
	ID      int64    `noam:"id"`
	Body    string
	Touched time.Time `noam:"updated"`
}
