package bad

type CommentKey struct {
	Post int64
	Seq  int64
}

// Comment has a lookup named post and a counter scoped by Post: both would
// be ListByPost.
type Comment struct {
	_    struct{}   `noam:"aggregate"`
	Key  CommentKey `noam:"id,counter"`
	Post string     `noam:"lookup"`
}
