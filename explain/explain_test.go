package explain_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/templates"
)

func load(t *testing.T, example string) *model.Schema {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "example", example))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEveryStoreExplained: every store noamgen generates for declares
// its layout (templates.RegisterLayout with runtime/<store>store/layout),
// with a cost for every method of every example aggregate.
func TestEveryStoreExplained(t *testing.T) {
	table, err := parser.Load(parser.Config{Dir: mustAbs(t, filepath.Join("testdata", "table")), Pattern: ".", BaseDir: mustAbs(t, filepath.Join("testdata", "table"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range templates.StoreNames() {
		d, ok := templates.LayoutOf(st)
		if !ok {
			t.Errorf("store %s declares no layout: add runtime/%sstore/layout and register it in templates/%s (see STORES.md)", st, st, st)
			continue
		}
		// The expiring model of the conformance suite has the methods of
		// noam:"expires" (Sweep).
		expiring, err := parser.Load(parser.Config{Dir: mustAbs(t, filepath.Join("..", "runtime", "storetest", "expiring")), Pattern: ".", BaseDir: mustAbs(t, filepath.Join("..", "runtime", "storetest", "expiring"))})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*model.Schema{load(t, "game"), load(t, "hotel"), table, expiring} {
			for _, a := range s.Aggregates {
				for _, m := range templates.Methods(a) {
					if r := d.Render(templates.ShapeOf(a), explain.OpOf(a, m)); r.RoundTrips == "?" {
						t.Errorf("%s: %s.%s has no declared cost", st, a.Name, m.Name)
					}
				}
			}
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestNotation(t *testing.T) {
	g := load(t, "game")
	h := load(t, "hotel")
	for _, c := range []struct {
		a    *model.Aggregate
		want string
	}{
		{g.Aggregate("Game"), "Game:2345 -> {firstPlayer, secondPlayer, rounds, rounds[0], rounds[1], ..., version}"},
		{g.Aggregate("Player"), "Player:2345 -> {firstName, lastName, score, games}"},
		{g.Aggregate("Tournament"), "Tournament:2345 -> {ε: {name, games}}"},
		{h.Aggregate("Comment"), "Comment:2345/3 -> {author, text}"},
	} {
		if got := explain.Notation(c.a); got != c.want {
			t.Errorf("%s: %s, want %s", c.a.Name, got, c.want)
		}
	}
}

// TestAccess checks the store-independent accesses of the paper's
// methods: an append touches the new element, the count and the version,
// not the other rounds; a setter of an indexed field reads it and writes
// its lookup's entries (and the lookup's other parts).
func TestAccess(t *testing.T) {
	g := load(t, "game")
	h := load(t, "hotel")
	acc := func(a *model.Aggregate, name string) explain.Access {
		for _, m := range templates.Methods(a) {
			if m.Name == name {
				return explain.AccessOf(a, m)
			}
		}
		t.Fatalf("%s has no method %s", a.Name, name)
		return explain.Access{}
	}
	str := func(ss []string) string { return strings.Join(ss, ",") }
	app := acc(g.Aggregate("Game"), "AppendRounds")
	if str(app.Writes) != "rounds[n],rounds,version" || str(app.Reads) != "rounds" || len(app.WritesIndex) != 0 || !app.Version {
		t.Errorf("AppendRounds: %+v", app)
	}
	set := acc(h.Aggregate("Hotel"), "SetCity")
	if str(set.Reads) != "city,stars" || str(set.Writes) != "city" || str(set.WritesIndex) != "cityStars" {
		t.Errorf("SetCity: %+v", set)
	}
	rooms := acc(h.Aggregate("Hotel"), "SetRooms")
	if len(rooms.Reads) != 0 || len(rooms.WritesIndex) != 0 {
		t.Errorf("SetRooms touches no lookup: %+v", rooms)
	}
	get := acc(g.Aggregate("Tournament"), "Get")
	if str(get.Reads) != "ε" {
		t.Errorf("Tournament.Get reads %v, want the root entry", get.Reads)
	}
	create := acc(h.Aggregate("Post"), "Create")
	if !create.Counter || str(create.WritesIndex) != "author" {
		t.Errorf("Post.Create: %+v", create)
	}
}

func TestBuild(t *testing.T) {
	s := load(t, "hotel")
	if _, err := explain.Build(s, explain.Config{Stores: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `unknown store "nope"`) {
		t.Fatalf("unknown store: %v", err)
	}
	r, err := explain.Build(s, explain.Config{Stores: []string{"mongo", "mongo"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stores) != 1 || r.Version != explain.FormatVersion {
		t.Fatalf("stores %v, version %d", r.Stores, r.Version)
	}
	hotel := r.Aggregates[0]
	ms := hotel.Stores["mongo"]
	if len(ms.Indexes) != 4 || ms.Indexes[0].Lookup != "name" || !strings.Contains(strings.Join(ms.Indexes[0].Options, ";"), "unique: true") {
		t.Errorf("native indexes of Hotel: %+v", ms.Indexes)
	}
	for _, m := range hotel.Methods {
		c, ok := m.Stores["mongo"]
		if !ok || len(c.Ops) == 0 || c.RoundTrips == "" || c.Atomic == "" {
			t.Errorf("%s: mongo cost %+v", m.Name, c)
		}
		if m.Name == "GetByName" && (c.RoundTrips != "1" || !strings.HasPrefix(c.Ops[0], "findOne Hotel {name}")) {
			t.Errorf("GetByName with a native index: %+v", c)
		}
	}
	// JSON round-trips and keeps the version field first.
	var buf bytes.Buffer
	if err := explain.JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "{\n  \"version\": 1,") {
		t.Errorf("JSON starts %q", buf.String()[:40])
	}
	var back explain.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Aggregates) != 3 || back.Aggregates[0].Methods[0].Stores["mongo"].RoundTrips != "1" {
		t.Fatalf("JSON does not read back: %v", err)
	}
}

// TestSampleWarnings: blocks over half a per-document limit, or entries
// over half a per-value limit, are warned about.
func TestSampleWarnings(t *testing.T) {
	a := load(t, "game").Aggregate("Game")
	doc := explain.NewSampleSizes(a)
	doc.Entry("firstPlayer", 10)
	doc.Entry("rounds[]", 590)
	doc.Block("big", 600, []explain.PartitionSize{{Key: "big", Field: "rounds", Elements: 1, Bytes: 590}})
	doc.Block("small", 400, nil)
	s := &explain.Sample{MaxValueBytes: 1000, LimitOf: "document"}
	doc.Fill(s)
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "block big: 600 bytes") {
		t.Errorf("document warnings %q", s.Warnings)
	}
	if s.Largest[0].Key != "big" || s.Entries[0].Entry != "firstPlayer" || s.Entries[1].Entry != "rounds[]" {
		t.Errorf("sample %+v", s)
	}
	val := explain.NewSampleSizes(a)
	val.Entry("rounds[]", 600)
	val.Entry("rounds[]", 100)
	val.Block("big", 700, nil)
	s = &explain.Sample{MaxValueBytes: 1000, LimitOf: "value"}
	val.Fill(s)
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "entry rounds[]: a value of 600 bytes") {
		t.Errorf("value warnings %q", s.Warnings)
	}
	s = &explain.Sample{}
	explain.NewSampleSizes(a).Fill(s)
	if len(s.Warnings) != 0 {
		t.Errorf("no limit, warnings %q", s.Warnings)
	}
}

// TestMongoTables: lookups with the table option stay index-table
// collections kept by the lookup protocol; the others are native indexes.
func TestMongoTables(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "table"))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r, err := explain.Build(s, explain.Config{Stores: []string{"mongo"}})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Aggregates[0]
	p := h.Stores["mongo"]
	var names []string
	for _, c := range p.Containers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Hotel,Hotel__name,Hotel__city,Hotel__roomKind" {
		t.Errorf("containers %v", names)
	}
	if len(p.Indexes) != 1 || p.Indexes[0].Lookup != "stars" {
		t.Errorf("native indexes %+v, want stars only", p.Indexes)
	}
	cost := func(name string) access.Rendered {
		for _, m := range h.Methods {
			if m.Name == name {
				return m.Stores["mongo"]
			}
		}
		t.Fatalf("no method %s", name)
		return access.Rendered{}
	}
	if c := cost("SetCity"); c.RoundTrips != "2 + 1 per new value of Hotel__city + 1 if Hotel__city loses entries" || !strings.Contains(c.Atomic, "not atomic") {
		t.Errorf("SetCity through an index table: %+v", c)
	}
	if c := cost("SetStars"); c.RoundTrips != "1" || len(c.Ops) != 1 {
		t.Errorf("SetStars with a native index: %+v", c)
	}
	if c := cost("GetByName"); c.RoundTrips != "2" {
		t.Errorf("GetByName through an index table: %+v", c)
	}
	if c := cost("AppendRooms"); !strings.HasPrefix(c.RoundTrips, "2 + 1 per new value of Hotel__roomKind") {
		t.Errorf("AppendRooms with an element lookup in a table: %+v", c)
	}
	if c := cost("Repair"); c.RoundTrips == "0" {
		t.Errorf("Repair with index tables: %+v", c)
	}
	if c := cost("Delete"); !strings.HasPrefix(c.RoundTrips, "4 + 1 the first time per client") || c.Ops[1] != "deleteMany Hotel__name {id, inc}" || c.Ops[2] != "deleteMany Hotel__city {id, inc}" {
		t.Errorf("Delete: %+v", c)
	}
}

// TestDynamoSingleTable: Config.DynamoSingleTable draws DynamoDB in the
// single-table design: every container of every aggregate is the one
// table, the requests go to it with their number unchanged, but for an
// aggregate with a counter per scope (Comment, keyed by post and number):
// its blocks share their scope's partition, so it has no scope items to
// write and ListBy<scope> is one Query a page.
func TestDynamoSingleTable(t *testing.T) {
	s := load(t, "hotel")
	plain, err := explain.Build(s, explain.Config{Stores: []string{"dynamo"}})
	if err != nil {
		t.Fatal(err)
	}
	one, err := explain.Build(s, explain.Config{Stores: []string{"dynamo"}, DynamoSingleTable: "app"})
	if err != nil {
		t.Fatal(err)
	}
	scopedSeen := false
	for i, a := range one.Aggregates {
		p := a.Stores["dynamo"]
		was := plain.Aggregates[i].Stores["dynamo"].Containers
		scoped := slices.ContainsFunc(was, func(c access.Place) bool { return strings.HasPrefix(c.Role, "scope items") })
		scopedSeen = scopedSeen || scoped
		if want := len(was) - map[bool]int{true: 1}[scoped]; len(p.Containers) != want {
			t.Errorf("%s: %d containers, want %d (a table per collection has %d)", a.Name, len(p.Containers), want, len(was))
		}
		for _, c := range p.Containers {
			if c.Name != "app" || !strings.Contains(c.Key, "_pk") {
				t.Errorf("%s: container %+v, want the table app keyed by _pk", a.Name, c)
			}
		}
		for j, m := range a.Methods {
			r, was := m.Stores["dynamo"], plain.Aggregates[i].Methods[j].Stores["dynamo"]
			switch {
			case scoped && m.Kind == string(access.ListScope):
				if r.RoundTrips != "1 per page" || !strings.Contains(r.Ops[0], "Query app {_pk = the scope's first key component") {
					t.Errorf("%s.%s in the single table: %+v, want one Query of the scope's partition a page", a.Name, m.Name, r)
				}
			case scoped:
				if strings.Contains(r.RoundTrips, "index entr") {
					t.Errorf("%s.%s in the single table: round trips %q count index entries, but it has no index items", a.Name, m.Name, r.RoundTrips)
				}
			case r.RoundTrips != was.RoundTrips:
				t.Errorf("%s.%s: round trips %q, %q with a table per collection", a.Name, m.Name, r.RoundTrips, was.RoundTrips)
			}
			for _, op := range r.Ops {
				if strings.Contains(op, "__index") || strings.Contains(op, "{_id") || strings.Contains(op, "noam_counters") || strings.Contains(op, "gsi_") {
					t.Errorf("%s.%s: %q names the table-per-collection layout", a.Name, m.Name, op)
				}
			}
		}
	}
	if !scopedSeen {
		t.Error("no aggregate of the hotel example has scope items: the check of the scope's partition ran on nothing")
	}
	if !strings.Contains(one.Aggregates[0].Stores["dynamo"].Summary, `Table "app"`) {
		t.Errorf("summary %q", one.Aggregates[0].Stores["dynamo"].Summary)
	}
}
