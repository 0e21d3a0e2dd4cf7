package bad

// Repositories are named after the aggregate type, so it is exported.
type member struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}
