package templates

import (
	"fmt"
	"strings"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/access"
)

// storeCosts says, for a store's repository type, what the methods whose
// cost depends most on the store send to it (Count, each CountByF, the
// batch writes), rendered from the store's own declaration
// (runtime/<store>store/layout, as `noamgen explain` renders it), so that
// the store-independent interface names no store and a new store brings
// its own words. "" when the store declares no layout.
func storeCosts(a *model.Aggregate, store string) string {
	d, ok := LayoutOf(store)
	if !ok {
		return ""
	}
	shape := ShapeOf(a)
	all := make([]string, len(a.Lookups))
	for i, l := range a.Lookups {
		all[i] = l.Name
	}
	type method struct {
		name string
		op   access.Op
	}
	ms := []method{{"Count", access.Op{Method: access.Count}}}
	for _, l := range a.Lookups {
		ms = append(ms, method{"CountBy" + LookupTitle(l), access.Op{Method: access.CountBy, Lookup: l.Name}})
	}
	if a.Counter && len(a.Scope()) > 0 {
		ms = append(ms, method{CountScope(a), access.Op{Method: access.CountScope}})
	}
	ms = append(ms, method{"CreateMany", access.Op{Method: access.CreateMany, Writes: all}},
		method{"PutMany", access.Op{Method: access.PutMany, Writes: all}},
		method{"DeleteMany", access.Op{Method: access.DeleteMany, Writes: all}})
	var paras []string
	var names []string
	last := ""
	flush := func() {
		if len(names) > 0 {
			paras = append(paras, andList(names)+": "+last)
		}
	}
	for _, m := range ms {
		r := d.Render(shape, m.op)
		if len(r.Ops) == 1 && r.Ops[0] == "(not declared)" {
			continue
		}
		text := fmt.Sprintf("%s. Round trips: %s. Atomic: %s.", strings.Join(r.Ops, "; "), r.RoundTrips, r.Atomic)
		if text == last {
			names = append(names, m.name)
			continue
		}
		flush()
		names, last = []string{m.name}, text
	}
	flush()
	if len(paras) == 0 {
		return ""
	}
	return "\n\nWhat the counts and batch writes send to " + d.Title + " (as noamgen explain shows it):\n\n" + strings.Join(paras, "\n\n")
}
