// Package ref_local_names has aggregates named like the locals of the
// generated reference collectors (add, seen, zero, k, out): an aggregate
// Add with a ref once generated add(add.Owner), which did not compile.
package ref_local_names

// Owner is referenced by the others.
type Owner struct {
	_  struct{} `noam:"aggregate"`
	ID string   `noam:"id"`
}

// Add's parameter name is add, the collector's closure.
type Add struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner string   `noam:"ref=Owner"`
}

// Seen's parameter name is seen, the collector's set.
type Seen struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner string   `noam:"ref=Owner"`
}

// Zero's parameter name is zero, the collector's zero key.
type Zero struct {
	_      struct{} `noam:"aggregate"`
	ID     string   `noam:"id"`
	Owners []string `noam:"ref=Owner"`
}

// K's parameter name is k, the closure's parameter.
type K struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner string   `noam:"ref=Owner"`
}

// Out's parameter name is out, the collector's result.
type Out struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Owner string   `noam:"ref=Owner"`
}
