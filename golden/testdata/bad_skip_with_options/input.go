package bad

// "-" leaves a field out; options beside it were silently dropped.
type Member struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Email   string   `noam:"-,lookup"`
	Boss    string   `noam:"-,ref=Member"`
	Version int64    `noam:"-,version"`
}
