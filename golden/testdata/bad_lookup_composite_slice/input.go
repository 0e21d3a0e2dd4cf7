package bad

type Hotel struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	City string   `noam:"lookup=cityTags"`
	Tags []string `noam:"lookup=cityTags"`
}
