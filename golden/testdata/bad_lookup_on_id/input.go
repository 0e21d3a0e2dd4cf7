package bad

type Post struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id,lookup"`
	Title string
}
