package bad

// Near misses get a suggestion; far ones do not.
type Member struct {
	_     struct{} `noam:"aggregate,partiton=tags"`
	ID    string   `noam:"id"`
	Email string   `noam:"lokup,uniqe"`
	Boss  string   `noam:"refs=Member"`
	Tags  []string `noam:"verison"`
	Note  string   `noam:"indexed"`
}
