package templates

import (
	"sort"

	"github.com/noamgen/noamgen/runtime/access"
)

// Each store declares its physical layout and what every repository
// operation sends to it as data (runtime/access), in a leaf package of its
// adapter (runtime/<store>store/layout) that imports no driver, and
// registers the declaration from its template's init with RegisterLayout.
// `noamgen explain` (package explain) renders every declaration the same
// way; the conformance suite checks each against the adapter.

var layouts = map[string]*access.Store{}

// RegisterLayout makes a store's declaration available to `noamgen
// explain`; stores call it from init, beside Register.
func RegisterLayout(d *access.Store) {
	if _, dup := layouts[d.Name]; dup {
		panic("templates: layout of store " + d.Name + " registered twice")
	}
	layouts[d.Name] = d
}

// LayoutOf returns the declaration of a store, if it registered one.
func LayoutOf(store string) (*access.Store, bool) {
	d, ok := layouts[store]
	return d, ok
}

// LayoutStores lists the stores with a declaration, sorted.
func LayoutStores() []string {
	var out []string
	for n := range layouts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
