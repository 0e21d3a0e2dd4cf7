package bad

// A composite lookup whose query type would have a field CityEq and a
// method CityEq (the condition == on the part City).
type Hotel struct {
	_      struct{} `noam:"aggregate"`
	ID     string   `noam:"id"`
	City   string   `noam:"lookup=place"`
	CityEq string   `noam:"lookup=place"`
}
