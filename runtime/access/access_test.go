package access_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime/access"
	bolt "github.com/noamgen/noamgen/runtime/boltstore/layout"
	dynamo "github.com/noamgen/noamgen/runtime/dynamostore/layout"
	mongo "github.com/noamgen/noamgen/runtime/mongostore/layout"
	redis "github.com/noamgen/noamgen/runtime/redisstore/layout"
)

var stores = []*access.Store{bolt.Store, dynamo.Store, mongo.Store, redis.Store}

func TestExpand(t *testing.T) {
	v := access.Vars{"coll": "Game", "version": "version"}
	for in, want := range map[string]string{
		"find $coll":                        "find Game",
		"$coll[?version:, $inc $version]":   "Game, $inc version",
		"$coll[?counted:; raise $counter]":  "Game",
		"$unknown stays":                    "$unknown stays",
		"[?coll:a][?nope:b][?version:c]end": "acend",
	} {
		if got := v.Expand(in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeyStyles(t *testing.T) {
	scalar := []access.KeyValue{{Value: int64(2345)}}
	str := []access.KeyValue{{Value: "2345"}}
	comp := []access.KeyValue{{Key: "post", Value: int64(2345)}, {Key: "seq", Value: "3"}}
	for _, c := range []struct {
		style access.KeyStyle
		key   []access.KeyValue
		want  string
	}{
		{access.KeyPath, comp, "2345/3"},
		{access.KeyDocument, str, `"2345"`},
		{access.KeyDocument, comp, `{post: 2345, seq: "3"}`},
		{access.KeyTag, scalar, "2345"},
		{access.KeyTag, comp, `2345,"3"`},
		{access.KeyAttribute, scalar, `N "2345"`},
		{access.KeyAttribute, str, "B (order-preserving bytes of 2345)"},
	} {
		if got := c.style.Styled(c.key); got != c.want {
			t.Errorf("style %d of %v: %q, want %q", c.style, c.key, got, c.want)
		}
	}
}

// shapes are aggregate classes that meet every condition declarations use.
var shapes = []*access.Shape{
	{Collection: "Game", Key: []access.KeyValue{{Value: "2345"}},
		Fields: []access.Field{{Key: "firstPlayer", Type: "string"}, {Key: "rounds", Type: "[]Round", Elem: "Round", Partition: true}, {Key: "version", Type: "int64", Version: true}}},
	{Collection: "Hotel", Key: []access.KeyValue{{Value: "2345"}},
		Fields:  []access.Field{{Key: "name", Type: "string"}, {Key: "city", Type: "string"}, {Key: "tags", Type: "[]string"}},
		Lookups: []access.Lookup{{Name: "name", Unique: true, Paths: []string{"name"}}, {Name: "city", Table: true, Paths: []string{"city"}}, {Name: "tags", Multi: true, Paths: []string{"tags[]"}}}},
	{Collection: "Comment", EAO: true, Key: []access.KeyValue{{Key: "post", Value: int64(2345)}, {Key: "seq", Value: int64(3)}}, Counter: true, Scope: []string{"post"},
		Fields:  []access.Field{{Key: "author", Type: "string"}, {Key: "edits", Type: "[]Edit", Elem: "Edit", Partition: true}, {Key: "version", Type: "int64", Version: true}},
		Lookups: []access.Lookup{{Name: "author", Paths: []string{"author"}}}},
}

var methods = []access.Method{access.Get, access.GetMany, access.Create, access.Put, access.Delete, access.Set, access.SetAt, access.Append,
	access.Update, access.ListElems, access.List, access.All, access.ListScope, access.ListBy, access.GetBy, access.Repair, access.Ensure, access.Migrate}

// mongoOps are MongoDB operators, which templates write with a $ too.
var leftover = regexp.MustCompile(`\$[a-zA-Z]+|\[\?`)

var mongoOps = map[string]bool{"$inc": true, "$set": true, "$push": true, "$max": true, "$in": true, "$gt": true, "$lt": true, "$slice": true, "$exists": true}

// TestDeclarations renders every declaration for every shape and
// operation: each has a cost, and no template variable is left.
func TestDeclarations(t *testing.T) {
	check := func(st *access.Store, what, s string) {
		for _, m := range leftover.FindAllString(s, -1) {
			if !mongoOps[m] {
				t.Errorf("%s %s: %q is left in %q", st.Name, what, m, s)
			}
		}
	}
	for _, st := range stores {
		for _, s := range shapes {
			p := st.Layout(s)
			check(st, s.Collection+" summary", p.Summary)
			for _, c := range p.Containers {
				check(st, s.Collection+" container", strings.Join([]string{c.Name, c.Role, c.Key, c.Value, c.Example}, " | "))
			}
			for _, r := range p.Example {
				check(st, s.Collection+" example", strings.Join([]string{r.Key, r.Entry, r.Value}, " | "))
			}
			for _, n := range p.Notes {
				check(st, s.Collection+" note", n)
			}
			for _, m := range methods {
				op := access.Op{Method: m, Field: "rounds"}
				switch m {
				case access.ListBy, access.GetBy:
					if len(s.Lookups) == 0 {
						continue
					}
					op.Lookup = s.Lookups[0].Name
				case access.Set:
					op.Field = s.Fields[0].Key
				}
				for _, l := range s.Lookups {
					op.Writes = append(op.Writes, l.Name)
				}
				if _, ok := st.Cost(s, op); !ok {
					t.Errorf("%s declares no cost of %s for %s", st.Name, m, s.Collection)
					continue
				}
				r := st.Render(s, op)
				check(st, s.Collection+" "+string(m), strings.Join(append(r.Ops, r.RoundTrips, r.Atomic), " | "))
				if st.Embedded != (r.RoundTrips == "0 (embedded)") {
					t.Errorf("%s %s: round trips %q", st.Name, m, r.RoundTrips)
				}
			}
		}
	}
}

// TestRequests evaluates a declaration: constants, terms per lookup and
// per deployment, and a term the facts do not give.
func TestRequests(t *testing.T) {
	s := shapes[1]
	op := access.Op{Method: access.Set, Field: "name", Writes: []string{"name"}}
	facts := func(term access.Term, lookup string) (int, bool) {
		switch term {
		case access.PerValueGained, access.IfLoses:
			return 1, lookup == "name"
		}
		return 0, false
	}
	for _, c := range []struct {
		mode access.Mode
		want int
	}{{redis.Node, 2}, {redis.Cluster, 4}} {
		n, err := redis.Store.Requests(s, op, c.mode, facts)
		if err != nil || n != c.want {
			t.Errorf("redis %s SetName: %d requests, %v; want %d", c.mode, n, err, c.want)
		}
	}
	if r := redis.Store.Render(s, op).RoundTrips; r != "node: 2; cluster: 2 + 1 per new value of {Hotel.name} + 1 if {Hotel.name} loses entries" {
		t.Errorf("redis SetName round trips %q", r)
	}
	if _, err := dynamo.Store.Requests(s, access.Op{Method: access.ListBy, Lookup: "city"}, "", facts); err == nil || !strings.Contains(err.Error(), "per page") {
		t.Errorf("a term the facts do not give: %v", err)
	}
	if _, err := (&access.Store{Name: "empty"}).Requests(s, op, "", facts); err == nil {
		t.Error("a declaration without the cost: no error")
	}
}
