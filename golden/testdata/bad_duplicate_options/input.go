package bad

// An option given twice.
type Member struct {
	_     struct{} `noam:"aggregate,strategy=eao,strategy=etf"`
	ID    string   `noam:"id,id"`
	Email string   `noam:"lookup,unique,lookup"`
	Boss  string   `noam:"ref=Member,ref=Member"`
	Tags  []string
}
