// Package initialisms has lookups on fields whose Go names hold
// initialisms: the lookup methods follow the Go names (GetBySKU,
// ListByURL, ListByVendorID), as the setters do (SetSKU), while what is
// stored keeps the entry keys (sku, url, vendor.id). A composite lookup on
// an int64 part gets query methods that take an int64, so that constants
// convert (PriceLt(3999)).
package initialisms

// Product is an online shop's product.
type Product struct {
	_        struct{} `noam:"aggregate"`
	ID       string   `noam:"id"`
	SKU      string   `noam:"lookup,unique"`
	URL      string   `noam:"lookup"`
	Vendor   Vendor
	Category string `noam:"lookup=categoryPrice"`
	Price    int64  `noam:"lookup=categoryPrice"`
}

// Vendor is a plain struct with a looked-up field.
type Vendor struct {
	ID   string `noam:"lookup"`
	Name string
}
