package explain

import (
	"slices"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/templates"
)

// Access is what a method reads and writes, store-independently: NoAM
// entries of the block (entry keys in the paper's notation: "firstPlayer",
// "rounds[i]", "rounds[*]" for every element, "ε" for the EAO root) and
// index entries of lookups (by lookup name).
type Access struct {
	Reads       []string `json:"reads,omitempty"`
	Writes      []string `json:"writes,omitempty"`
	Deletes     []string `json:"deletes,omitempty"`
	ReadsIndex  []string `json:"readsIndex,omitempty"`
	WritesIndex []string `json:"writesIndex,omitempty"`
	// Blocks says how many blocks the method touches: "one", "page" (a
	// page of blocks), "many" (the given keys) or "all".
	Blocks  string `json:"blocks"`
	Counter bool   `json:"counter,omitempty"` // allocates a block key from the counter
	Version bool   `json:"version,omitempty"` // checks or bumps the version entry
}

// KindName names a method kind in the JSON format (access.Method).
func KindName(k templates.MethodKind) string { return string(methodOf(k)) }

// OpOf is method m of a as the stores' declarations see it.
func OpOf(a *model.Aggregate, m templates.Method) access.Op {
	return opOf(m, AccessOf(a, m))
}

func opOf(m templates.Method, acc Access) access.Op {
	op := access.Op{Method: methodOf(m.Kind), Writes: acc.WritesIndex}
	if m.Field != nil {
		op.Field = m.Field.Key
	}
	if m.Lookup != nil {
		op.Lookup = m.Lookup.Name
	}
	return op
}

func methodOf(k templates.MethodKind) access.Method {
	switch k {
	case templates.MGet:
		return access.Get
	case templates.MCreate:
		return access.Create
	case templates.MPut:
		return access.Put
	case templates.MDelete:
		return access.Delete
	case templates.MSet:
		return access.Set
	case templates.MAdd:
		return access.Add
	case templates.MAppend:
		return access.Append
	case templates.MSetAt:
		return access.SetAt
	case templates.MListElems:
		return access.ListElems
	case templates.MUpdate:
		return access.Update
	case templates.MList:
		return access.List
	case templates.MAll:
		return access.All
	case templates.MGetMany:
		return access.GetMany
	case templates.MListBy:
		return access.ListBy
	case templates.MGetBy:
		return access.GetBy
	case templates.MListScope:
		return access.ListScope
	case templates.MCount:
		return access.Count
	case templates.MCountBy:
		return access.CountBy
	case templates.MCountScope:
		return access.CountScope
	case templates.MCreateMany:
		return access.CreateMany
	case templates.MPutMany:
		return access.PutMany
	case templates.MDeleteMany:
		return access.DeleteMany
	case templates.MSweep:
		return access.Sweep
	case templates.MRepair:
		return access.Repair
	case templates.MEnsure:
		return access.Ensure
	case templates.MMigrate:
		return access.Migrate
	}
	return "unknown"
}

// allEntries lists every entry of a block in the paper's notation, each
// partition as its count and "f[*]" (every element).
func allEntries(a *model.Aggregate) []string {
	var out []string
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
			out = append(out, "ε")
		case e.Partition:
			k := e.Fields[0].Key
			out = append(out, k, k+"[*]")
		default:
			out = append(out, e.Key)
		}
	}
	return out
}

// entryOf is the entry holding field f: its own (ETF, partitions), or ε
// (a root field of an EAO aggregate).
func entryOf(a *model.Aggregate, f *model.Field) string {
	if a.Strategy == model.EAO && !f.Partition && !f.IsVersion {
		return "ε"
	}
	return f.Key
}

// indexedEntries lists the entries holding the values of lookups ls.
func indexedEntries(a *model.Aggregate, ls []*model.Lookup) []string {
	var out []string
	for _, l := range ls {
		for _, p := range l.Parts {
			e := entryOf(a, p.Field)
			if p.Field.Partition {
				out = appendNew(out, p.Field.Key, p.Field.Key+"[*]")
				continue
			}
			out = appendNew(out, e)
		}
	}
	return out
}

func lookupNames(ls []*model.Lookup) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// AccessOf says which entries and index entries method m of a reads and
// writes, whatever the store: what runtime.Repo and the store contract
// (runtime.Store) ask of every adapter.
func AccessOf(a *model.Aggregate, m templates.Method) Access {
	var acc Access
	ver := ""
	if a.Version != nil {
		ver = a.Version.Key
	}
	bump := func() {
		if ver != "" {
			acc.Writes = appendNew(acc.Writes, ver)
			acc.Version = true
		}
	}
	all := allEntries(a)
	acc.Blocks = "one"
	// A batch writes each block as its single call does.
	if single, ok := map[templates.MethodKind]templates.MethodKind{templates.MCreateMany: templates.MCreate, templates.MPutMany: templates.MPut, templates.MDeleteMany: templates.MDelete}[m.Kind]; ok {
		m.Kind = single
		acc = AccessOf(a, m)
		acc.Blocks = "many"
		return acc
	}
	switch m.Kind {
	case templates.MCount:
		acc.Blocks = "all"
	case templates.MCountBy:
		acc.ReadsIndex = []string{m.Lookup.Name}
		acc.Blocks = "many"
	case templates.MCountScope:
		acc.Blocks = "many"
	case templates.MSweep:
		acc.Reads = []string{a.Expires.Key}
		acc.Deletes = all
		acc.WritesIndex = lookupNames(a.Lookups)
		acc.Blocks = "all"
	case templates.MGet:
		acc.Reads = all
	case templates.MCreate:
		acc.Writes = all
		acc.WritesIndex = lookupNames(a.Lookups)
		acc.Counter = a.Counter
		acc.Version = ver != ""
	case templates.MPut:
		if ver != "" {
			acc.Reads = []string{ver}
			acc.Version = true
		}
		acc.Reads = appendNew(acc.Reads, indexedEntries(a, a.Lookups)...)
		acc.Writes = all
		// A shorter partition loses its last elements.
		for _, f := range a.Partitions() {
			acc.Deletes = append(acc.Deletes, f.Key+"[n..]")
		}
		acc.WritesIndex = lookupNames(a.Lookups)
		acc.Counter = a.Counter
	case templates.MDelete:
		acc.Reads = indexedEntries(a, a.Lookups)
		acc.Deletes = all
		acc.WritesIndex = lookupNames(a.Lookups)
	case templates.MSet:
		ls := a.LookupsOf(m.Field)
		acc.Reads = indexedEntries(a, ls)
		acc.Writes = []string{m.Field.Key}
		bump()
		acc.WritesIndex = lookupNames(ls)
	case templates.MAdd:
		acc.Reads = []string{m.Field.Key}
		acc.Writes = []string{m.Field.Key}
		bump()
	case templates.MAppend:
		k := m.Field.Key
		acc.Reads = []string{k}
		acc.Writes = []string{k + "[n]", k}
		bump()
		acc.WritesIndex = lookupNames(a.LookupsOf(m.Field))
	case templates.MSetAt:
		k := m.Field.Key
		ls := a.LookupsOf(m.Field)
		acc.Reads = appendNew([]string{k}, indexedEntries(a, ls)...)
		acc.Writes = []string{k + "[i]"}
		bump()
		acc.WritesIndex = lookupNames(ls)
	case templates.MListElems:
		k := m.Field.Key
		acc.Reads = []string{k, k + "[i..i+n]"}
	case templates.MUpdate:
		var ls []*model.Lookup
		for _, f := range a.Settable() {
			acc.Writes = append(acc.Writes, f.Key)
			ls = appendLookups(ls, a.LookupsOf(f))
		}
		for _, f := range a.Partitions() {
			acc.Writes = append(acc.Writes, f.Key+"[i]")
			ls = appendLookups(ls, a.LookupsOf(f))
		}
		if ver != "" {
			acc.Reads = []string{ver}
		}
		for _, f := range a.Addable() {
			acc.Reads = appendNew(acc.Reads, f.Key)
		}
		for _, f := range a.Partitions() {
			acc.Reads = appendNew(acc.Reads, f.Key)
		}
		acc.Reads = appendNew(acc.Reads, indexedEntries(a, ls)...)
		bump()
		acc.WritesIndex = lookupNames(ls)
	case templates.MList, templates.MAll:
		acc.Reads = all
		acc.Blocks = "page"
		if m.Kind == templates.MAll {
			acc.Blocks = "all"
		}
	case templates.MGetMany:
		acc.Reads = all
		acc.Blocks = "many"
	case templates.MListBy:
		acc.ReadsIndex = []string{m.Lookup.Name}
		acc.Reads = all
		acc.Blocks = "page"
	case templates.MGetBy:
		acc.ReadsIndex = []string{m.Lookup.Name}
		acc.Reads = all
	case templates.MListScope:
		acc.Reads = all
		acc.Blocks = "page"
	case templates.MRepair:
		acc.Reads = indexedEntries(a, a.Lookups)
		acc.ReadsIndex = lookupNames(a.Lookups)
		acc.WritesIndex = lookupNames(a.Lookups)
		acc.Blocks = "all"
	case templates.MEnsure:
		acc.Blocks = "none"
	case templates.MMigrate:
		acc.Reads = all
		acc.Writes = all
		acc.Blocks = "all"
	}
	return acc
}

func appendLookups(s, ls []*model.Lookup) []*model.Lookup {
	for _, l := range ls {
		if !slices.Contains(s, l) {
			s = append(s, l)
		}
	}
	return s
}
