package access

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Vars are the values of a template's variables:
//
//	$coll     the collection
//	$block    the example block key in the store's style (KeyStyle)
//	$key      the example block key as the paper writes it: 2345, 2345/3
//	$scope    the scope parts of a counter (thread, post)
//	$field    the field of Set, Add, SetAt, Append, ListElems
//	$version  the version entry's key
//	$created, $updated  the timestamp entries' keys; $expires the
//	          expiry entry's key
//	$counter  the counter (Names.Counter)
//	$index    the index table of the lookup of an Each step, of GetBy and
//	          ListBy (Names.Index); $lookup its name; $value its parts
//	          (<city> ‖ <stars>); $indexKey its example key (the value,
//	          and the block key for a lookup that is not unique)
//	          $paths its dotted paths; $indexPath, $holder its example
//	          entry as a path and its value; $unique, $shared set for a
//	          unique lookup, for another
//	$indexes  the index tables the operation writes, or all of them;
//	          $uniques those of unique lookups
//	$allFields the keys of every field; $ownFields those of partitions
//	          and the version (the fields outside an EAO root); $parts
//	          those of partitions; $lookups the lookups' names; $tables
//	          those kept in index tables; $indexed set when there are
//	          index tables or scope items (Store.ScopeItems); $counted
//	          when keys come from a counter
//	$entry, $type, $elem, $i, $fields  the row of the example block
type Vars map[string]string

var (
	varRE = regexp.MustCompile(`\$[a-zA-Z]+`)
	optRE = regexp.MustCompile(`\[\?([a-zA-Z]+):([^\]]*)\]`)
)

// Expand replaces the variables of template t; an unknown one stays.
// "[?name:text]" is text when variable name is set, else nothing.
func (v Vars) Expand(t string) string {
	t = optRE.ReplaceAllStringFunc(t, func(m string) string {
		sub := optRE.FindStringSubmatch(m)
		if v[sub[1]] == "" {
			return ""
		}
		return sub[2]
	})
	return varRE.ReplaceAllStringFunc(t, func(name string) string {
		if s, ok := v[name[1:]]; ok {
			return s
		}
		return name
	})
}

// with returns v plus the variables of k.
func (v Vars) with(kv ...string) Vars {
	out := Vars{}
	for k, s := range v {
		out[k] = s
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// With binds the variables of lookup l.
func (v Vars) With(st *Store, l Lookup) Vars {
	var parts []string
	for _, p := range l.Paths {
		parts = append(parts, "<"+p+">")
	}
	value := strings.Join(parts, " ‖ ")
	key := value
	if !l.Unique {
		key += " ‖ " + v["key"]
	}
	var dotted, steps []string
	for _, p := range l.Paths {
		dotted = append(dotted, strings.ReplaceAll(p, "[]", ""))
		steps = append(steps, "<"+p+">")
	}
	path := "/" + strings.Join(steps, "/")
	holder := v["key"]
	if !l.Unique {
		path += "/" + v["key"]
		holder = "(empty)"
	}
	unique, shared := "", "yes"
	if l.Unique {
		unique, shared = "yes", ""
	}
	return v.with("lookup", l.Name, "index", v.with("lookup", l.Name).Expand(st.Names.Index), "value", value, "indexKey", key,
		"paths", strings.Join(dotted, ", "), "indexPath", path, "holder", holder, "unique", unique, "shared", shared)
}

// KeyText renders the example key as the paper writes it: "2345/3".
func KeyText(key []KeyValue) string {
	var parts []string
	for _, kv := range key {
		parts = append(parts, fmt.Sprint(kv.Value))
	}
	return strings.Join(parts, "/")
}

// Styled renders key in style k.
func (k KeyStyle) Styled(key []KeyValue) string {
	composite := len(key) > 1 || (len(key) == 1 && key[0].Key != "")
	switch k {
	case KeyDocument:
		show := func(v any) string {
			if s, ok := v.(string); ok {
				return strconv.Quote(s)
			}
			return fmt.Sprint(v)
		}
		if !composite {
			return show(key[0].Value)
		}
		var parts []string
		for _, p := range key {
			parts = append(parts, p.Key+": "+show(p.Value))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case KeyTag:
		if !composite {
			return fmt.Sprint(key[0].Value)
		}
		var parts []string
		for _, p := range key {
			if s, ok := p.Value.(string); ok {
				parts = append(parts, strconv.Quote(s))
			} else {
				parts = append(parts, fmt.Sprint(p.Value))
			}
		}
		return strings.Join(parts, ",")
	case KeyAttribute:
		if !composite {
			if _, ok := key[0].Value.(string); !ok {
				return fmt.Sprintf("N %q", fmt.Sprint(key[0].Value))
			}
		}
		return "B (order-preserving bytes of " + KeyText(key) + ")"
	}
	return KeyText(key)
}

// Vars returns the variables of operation op of s under st.
func (st *Store) Vars(s *Shape, op Op) Vars {
	v := Vars{"coll": s.Collection, "block": st.KeyStyle.Styled(s.Key), "key": KeyText(s.Key),
		"scope": strings.Join(s.Scope, ", "), "field": op.Field}
	var all, own, parts []string
	for _, f := range s.Fields {
		if f.Version {
			v["version"] = f.Key
		}
		if f.Created {
			v["created"] = f.Key
		}
		if f.Updated {
			v["updated"] = f.Key
		}
		if f.Expires {
			v["expires"] = f.Key
		}
		if f.Partition {
			parts = append(parts, f.Key)
		}
		if f.Partition || f.Version {
			own = append(own, f.Key)
		}
		all = append(all, f.Key)
	}
	v["allFields"] = strings.Join(all, ", ")
	v["ownFields"] = strings.Join(own, ", ")
	v["parts"] = strings.Join(parts, ", ")
	if st.indexed(s) {
		v["indexed"] = "yes"
	}
	if s.Counter {
		v["counted"] = "yes"
	}
	var lookups []string
	for _, l := range s.Lookups {
		lookups = append(lookups, l.Name)
	}
	v["lookups"] = strings.Join(lookups, ", ")
	// The counter's example names the example block's scope.
	if s.Counter && len(s.Scope) > 0 {
		v["scopeKey"] = KeyTag.Styled(s.Key[:min(len(s.Scope), len(s.Key))])
	}
	v["counter"] = v.Expand(st.Names.Counter)
	var names []string
	if op.Method != "" && op.Method != Repair && op.Method != Ensure {
		for _, l := range st.written(s, op) {
			names = append(names, v.With(st, l)["index"])
		}
	} else {
		for _, l := range s.Lookups {
			if st.isTable(l) {
				names = append(names, v.With(st, l)["index"])
			}
		}
	}
	v["indexes"] = strings.Join(dedup(names), ", ")
	var uniques []string
	ls := s.Lookups
	if op.Method != "" && op.Method != Repair && op.Method != Ensure {
		ls = st.written(s, op)
	}
	for _, l := range ls {
		if l.Unique && st.isTable(l) {
			uniques = append(uniques, v.With(st, l)["index"])
		}
	}
	v["uniques"] = strings.Join(dedup(uniques), ", ")
	var tables []string
	for _, l := range s.Lookups {
		if st.isTable(l) {
			tables = append(tables, l.Name)
		}
	}
	v["tables"] = strings.Join(tables, ", ")
	var natives []string
	for _, l := range s.Lookups {
		if !st.isTable(l) {
			natives = append(natives, l.Name)
		}
	}
	v["native"] = strings.Join(natives, ", ")
	var writesNative []string
	for _, l := range st.writtenNative(s, op) {
		writesNative = append(writesNative, l.Name)
	}
	v["writesNative"] = strings.Join(writesNative, ", ")
	if l, ok := s.lookup(op.Lookup); ok {
		v = v.With(st, l)
	}
	return v
}

func dedup(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Physical is a declaration's layout rendered for one aggregate class.
type Physical struct {
	// Summary says in a sentence how blocks map to the store.
	Summary string `json:"summary"`
	// Containers are the collections, buckets, tables or keys the
	// aggregate uses: its blocks first, then index tables and counters.
	Containers []Place `json:"containers"`
	// Example shows the stored form of one example block.
	Example []Row `json:"example"`
	// Indexes are the store's native secondary indexes, if any.
	Indexes []NativeIndex `json:"indexes,omitempty"`
	Notes   []string      `json:"notes,omitempty"`
}

// Place is one collection, bucket, table or key family.
type Place struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Role    string `json:"role"`
	Key     string `json:"key"`
	Value   string `json:"value,omitempty"`
	Example string `json:"example,omitempty"`
}

// Row is one stored item of the example block.
type Row struct {
	Key   string `json:"key"`
	Entry string `json:"entry"` // the NoAM entry it holds ("" for none)
	Value string `json:"value"`
}

// NativeIndex is a native secondary index.
type NativeIndex struct {
	Collection string   `json:"collection"`
	Lookup     string   `json:"lookup"`
	Keys       []string `json:"keys"`
	Options    []string `json:"options,omitempty"`
}

// Rendered is what one operation does on one store, as explain shows it.
type Rendered struct {
	// Ops are the commands in order.
	Ops []string `json:"ops"`
	// RoundTrips is the number of requests as a formula: a constant and
	// terms ("2 + 1 per new value of {Hotel.name}"), per deployment
	// ("node: ...; cluster: ...") where they differ.
	RoundTrips string `json:"roundTrips"`
	Atomic     string `json:"atomic"`
}

// Layout renders the layout of s.
func (st *Store) Layout(s *Shape) Physical {
	v := st.Vars(s, Op{})
	p := Physical{Summary: v.Expand(st.Summary)}
	for _, c := range st.Containers {
		if !c.When.Holds(st, s, Op{}) {
			continue
		}
		place := func(v Vars) {
			p.Containers = append(p.Containers, Place{Kind: c.Kind, Name: v.Expand(c.Name), Role: v.Expand(c.Role),
				Key: v.Expand(c.Key), Value: v.Expand(c.Value), Example: v.Expand(c.Example)})
		}
		switch c.Each {
		case "":
			place(v)
		default:
			for _, l := range s.Lookups {
				if st.isTable(l) && (c.Each == "lookup" || l.Unique) {
					place(v.With(st, l))
				}
			}
		}
	}
	p.Example = st.block(s, v)
	if st.NativeIndex != nil {
		for _, l := range s.Lookups {
			if !st.isTable(l) {
				ix := st.NativeIndex(l)
				p.Indexes = append(p.Indexes, NativeIndex{Collection: s.Collection, Lookup: l.Name, Keys: ix.Keys, Options: ix.Options})
			}
		}
	}
	for _, n := range st.Notes {
		if n.When.Holds(st, s, Op{}) {
			p.Notes = append(p.Notes, v.Expand(n.Text))
		}
	}
	return p
}

func (st *Store) block(s *Shape, v Vars) []Row {
	var rows []Row
	var root []string
	for _, f := range s.Fields {
		if s.EAO && !f.Partition && !f.Version {
			root = append(root, f.Key)
		}
	}
	v = v.with("fields", strings.Join(root, ", "))
	for _, b := range st.Block {
		if !b.When.Holds(st, s, Op{}) {
			continue
		}
		row := func(v Vars) {
			rows = append(rows, Row{Key: v.Expand(b.Key), Entry: v.Expand(b.Entry), Value: v.Expand(b.Value)})
		}
		for _, f := range s.Fields {
			fv := v.with("entry", f.Key, "type", f.Type, "elem", f.Elem)
			switch {
			case b.Each == "field" && !f.Partition && !f.Version:
				row(fv)
			case b.Each == "partition" && f.Partition:
				row(fv.with("n", strconv.Itoa(st.Elements)))
			case b.Each == "element" && f.Partition:
				for i := range st.Elements {
					row(fv.with("i", strconv.Itoa(i)))
				}
			case b.Each == "version" && f.Version:
				row(fv)
			}
		}
		if b.Each == "" {
			row(v.with("n", strconv.Itoa(st.Elements)))
		}
	}
	if st.Sorted && len(rows) > 1 {
		sort.SliceStable(rows[1:], func(i, j int) bool { return entryLess(rows[1+i].Entry, rows[1+j].Entry) })
	}
	return rows
}

var elemRE = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// entryLess orders entries as an order-preserving key codec does: by
// name, then the count (no index) before the elements, by index.
func entryLess(a, b string) bool {
	split := func(e string) (string, int) {
		m := elemRE.FindStringSubmatch(e)
		if m == nil {
			return e, -1
		}
		i, _ := strconv.Atoi(m[2])
		return m[1], i
	}
	na, ia := split(a)
	nb, ib := split(b)
	if na != nb {
		return na < nb
	}
	return ia < ib
}

// Render renders the cost of op on s: its commands, round trips and what
// is atomic.
func (st *Store) Render(s *Shape, op Op) Rendered {
	c, ok := st.Cost(s, op)
	if !ok {
		return Rendered{Ops: []string{"(not declared)"}, RoundTrips: "?", Atomic: "?"}
	}
	v := st.Vars(s, op)
	steps := st.steps(s, op, c, v)
	r := Rendered{Ops: []string{}, Atomic: v.Expand(c.Atomic)}
	for _, p := range steps {
		if p.op == "" {
			continue
		}
		if p.Mode != "" {
			r.Ops = append(r.Ops, string(p.Mode)+": "+p.op)
		} else {
			r.Ops = append(r.Ops, p.op)
		}
	}
	if c.Desc != "" {
		r.Ops = append(r.Ops, "descending (PageRequest.Desc): "+v.Expand(c.Desc))
	}
	if st.Embedded {
		r.RoundTrips = "0 (embedded)"
		return r
	}
	modes := st.Modes
	if len(modes) == 0 {
		modes = []Mode{""}
	}
	var formulas []string
	for _, m := range modes {
		formulas = append(formulas, formula(steps, m))
	}
	same := true
	for _, f := range formulas {
		same = same && f == formulas[0]
	}
	if same {
		r.RoundTrips = formulas[0]
		return r
	}
	var parts []string
	for i, m := range modes {
		parts = append(parts, string(m)+": "+formulas[i])
	}
	r.RoundTrips = strings.Join(parts, "; ")
	return r
}

// formula sums the requests of steps in mode: the constant first, then
// the terms in order, equal terms added up.
func formula(steps []step, mode Mode) string {
	n := 0
	var terms []string
	count := map[string]int{}
	for _, p := range steps {
		if p.Mode != "" && p.Mode != mode {
			continue
		}
		if p.Per == "" {
			n += p.N
			continue
		}
		if _, ok := count[p.term]; !ok {
			terms = append(terms, p.term)
		}
		count[p.term] += p.N
	}
	var parts []string
	if n != 0 || len(terms) == 0 {
		parts = append(parts, strconv.Itoa(n))
	}
	for _, t := range terms {
		parts = append(parts, strconv.Itoa(count[t])+" "+t)
	}
	return strings.Join(parts, " + ")
}
