package bad

// A composite lookup is unique as a whole, not per part.
type Hotel struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	City  string   `noam:"lookup=cityName,unique"`
	Name  string   `noam:"lookup=cityName"`
	Stars int      `noam:"lookup=starsZip"`
	Zip   string   `noam:"lookup=starsZip,unique"`
}
