package bad

// zeros only means something on a unique lookup.
type Member struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	City  string   `noam:"lookup,zeros"`
	Email string   `noam:"lookup=contact,unique,zeros"`
	Phone string   `noam:"lookup=contact,unique"`
}
