package storetest

import (
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var lookupTests = []subtest{
	{name: "LookupEq", fn: testLookupEq},
	{name: "LookupComposite", fn: testLookupComposite},
	{name: "LookupBadQuery", fn: testLookupBadQuery},
	{name: "GetByUnique", fn: testGetBy},
	{name: "UniqueConflicts", fn: testUniqueConflicts},
	{name: "UniqueValuesFreed", fn: testUniqueFreed},
	{name: "LookupValuesMove", fn: testLookupMove},
	{name: "LookupEveryWrite", fn: testLookupEveryWrite},
	{name: "LookupPages", fn: testLookupPages},
	{name: "LookupCursors", fn: testLookupCursors},
	{name: "RepairUniqueHeldTwice", fn: testRepairHeldTwice},
}

func (e *env) byTag(t *testing.T, tag string) []string {
	t.Helper()
	return matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		return e.Matches.ListByTags(bg, tag, req)
	}))
}

func (e *env) byCode(t *testing.T, code string) []string {
	t.Helper()
	return matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		return e.Matches.ListByCode(bg, code, req)
	}))
}

func (e *env) byCity(t *testing.T, city string) []string {
	t.Helper()
	return matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		return e.Matches.ListByVenueCity(bg, city, req)
	}))
}

func (e *env) bySerial(t *testing.T, s string) []string {
	t.Helper()
	return matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		return e.Matches.ListByRoundsSerial(bg, s, req)
	}))
}

func (e *env) byRegion(t *testing.T, q model.MatchRegionLevelQuery) []string {
	t.Helper()
	return matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		return e.Matches.ListByRegionLevel(bg, q, req)
	}))
}

func (e *env) journalsBy(t *testing.T, owner, kind string) []model.JournalID {
	t.Helper()
	var js []*model.Journal
	if owner != "" {
		js = collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) {
			return e.Journals.ListByOwner(bg, owner, req)
		})
	} else {
		js = collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) {
			return e.Journals.ListByLinesKind(bg, kind, req)
		})
	}
	return keysOf(js, func(j *model.Journal) model.JournalID { return j.ID })
}

// seedLookups stores matches with known lookup values:
//
//	id  region level tags        city
//	a   north  4     x y         Rome
//	b   north  2     y           Oslo
//	c   south  5     x x         Rome
//	d   north  4                 Rome
//	e   north  3                 (none)
//	f   west   2     y
func (e *env) seedLookups(t *testing.T) {
	t.Helper()
	for _, s := range []struct {
		id, region string
		level      int
		tags       []string
		city       string
	}{
		{"a", "north", 4, []string{"x", "y"}, "Rome"},
		{"b", "north", 2, []string{"y"}, "Oslo"},
		{"c", "south", 5, []string{"x", "x"}, "Rome"},
		{"d", "north", 4, nil, "Rome"},
		{"e", "north", 3, nil, ""},
		{"f", "west", 2, []string{"y"}, ""},
	} {
		m := newMatch(s.id, 2)
		m.Region, m.Level, m.Tags, m.Venue.City = s.region, s.level, s.tags, s.city
		must(t, e.Matches.Create(bg, m))
	}
}

func testLookupEq(t *testing.T, e *env) {
	e.seedLookups(t)
	eqStrings(t, "ListByCode", e.byCode(t, "code-b"), "b")
	eqStrings(t, "ListByCode of an unknown code", e.byCode(t, "code-z"))
	eqStrings(t, "ListByTags x (c holds it twice: listed once)", e.byTag(t, "x"), "a", "c")
	eqStrings(t, "ListByTags y", e.byTag(t, "y"), "a", "b", "f")
	eqStrings(t, "ListByTags of an unknown tag", e.byTag(t, "z"))
	eqStrings(t, "ListByVenueCity (a nested path)", e.byCity(t, "Rome"), "a", "c", "d")
	eqStrings(t, "ListByVenueCity of the zero value", e.byCity(t, ""), "e", "f")
	eqStrings(t, "ListByRoundsSerial (partition elements)", e.bySerial(t, "c/r1"), "c")
	eqStrings(t, "a prefix of a value matches nothing", e.byCity(t, "Ro"))
	for _, j := range []*model.Journal{
		{Owner: "ann", Lines: []model.Line{{Kind: "k1"}, {Kind: "k2"}}},
		{Owner: "bob", Lines: []model.Line{{Kind: "k2"}}},
		{Owner: "ann"},
	} {
		must(t, e.Journals.Create(bg, j))
	}
	if got := e.journalsBy(t, "ann", ""); fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("ListByOwner (an EAO root field): %v, want [1 3]", got)
	}
	if got := e.journalsBy(t, "", "k2"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("ListByLinesKind (EAO partition elements): %v, want [1 2]", got)
	}
	for _, c := range []*model.Card{{ID: 10, Labels: []string{"l"}}, {ID: -10, Labels: []string{"l", "m"}}, {ID: 0}} {
		must(t, e.Cards.Create(bg, c))
	}
	cs := collect(t, 1, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) {
		return e.Cards.ListByLabels(bg, "l", req)
	})
	if got := keysOf(cs, func(c *model.Card) int32 { return c.ID }); fmt.Sprint(got) != "[-10 10]" {
		t.Fatalf("ListByLabels: %v, want [-10 10] (block-key order)", got)
	}
	for _, thread := range []string{"t2", "t1", "t2"} {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: thread}, Author: "al"}))
	}
	rs := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
		return e.Replies.ListByAuthor(bg, "al", req)
	})
	if got := keysOf(rs, func(r *model.Reply) model.ReplyKey { return r.Key }); fmt.Sprint(got) != "[{t1 1} {t2 1} {t2 2}]" {
		t.Fatalf("ListByAuthor (composite block keys): %v", got)
	}
}

func testLookupComposite(t *testing.T, e *env) {
	e.seedLookups(t)
	type q = model.MatchRegionLevelQuery
	for _, tc := range []struct {
		what string
		q    q
		want []string
	}{
		{"north:4", q{Region: runtime.Eq("north"), Level: runtime.Eq(4)}, []string{"a", "d"}},
		{"north (a prefix, in level order)", q{Region: runtime.Eq("north")}, []string{"b", "e", "a", "d"}},
		{"north, level >= 3", q{Region: runtime.Eq("north"), Level: runtime.Gte(3)}, []string{"e", "a", "d"}},
		{"north, level > 3", q{Region: runtime.Eq("north"), Level: runtime.Gt(3)}, []string{"a", "d"}},
		{"north, level < 4", q{Region: runtime.Eq("north"), Level: runtime.Lt(4)}, []string{"b", "e"}},
		{"north, level <= 3", q{Region: runtime.Eq("north"), Level: runtime.Lte(3)}, []string{"b", "e"}},
		{"north, 3 <= level < 5", q{Region: runtime.Eq("north"), Level: runtime.Between(3, 5)}, []string{"e", "a", "d"}},
		{"north, level >= 9", q{Region: runtime.Eq("north"), Level: runtime.Gte(9)}, nil},
		{"north, negative levels", q{Region: runtime.Eq("north"), Level: runtime.Lt(0)}, nil},
		{"regions from n to t", q{Region: runtime.Between("n", "t")}, []string{"b", "e", "a", "d", "c"}},
		{"regions >= south", q{Region: runtime.Gte("south")}, []string{"c", "f"}},
		{"regions < north", q{Region: runtime.Lt("north")}, nil},
		{"everything", q{}, []string{"b", "e", "a", "d", "c", "f"}},
		{"nort (not a prefix match)", q{Region: runtime.Eq("nort")}, nil},
	} {
		eqStrings(t, "ListByRegionLevel "+tc.what, e.byRegion(t, tc.q), tc.want...)
	}
	// Negative values sort before positive ones.
	must(t, e.Matches.SetLevel(bg, "b", -3))
	eqStrings(t, "north after a negative level", e.byRegion(t, q{Region: runtime.Eq("north")}), "b", "e", "a", "d")
	eqStrings(t, "north, level < 0", e.byRegion(t, q{Region: runtime.Eq("north"), Level: runtime.Lt(0)}), "b")
}

func testLookupBadQuery(t *testing.T, e *env) {
	e.seedLookups(t)
	type q = model.MatchRegionLevelQuery
	for what, bad := range map[string]q{
		"the second part without the first": {Level: runtime.Eq(4)},
		"a range on the second part alone":  {Level: runtime.Gte(4)},
		"a condition after a range":         {Region: runtime.Gte("n"), Level: runtime.Eq(4)},
		"two ranges":                        {Region: runtime.Lt("s"), Level: runtime.Lt(4)},
	} {
		_, err := e.Matches.ListByRegionLevel(bg, bad, runtime.PageRequest{})
		checkErr(t, err, runtime.ErrBadQuery, "ListByRegionLevel with "+what)
	}
}

func testGetBy(t *testing.T, e *env) {
	e.seedLookups(t)
	m, err := e.Matches.GetByCode(bg, "code-c")
	must(t, err)
	if m.ID != "c" || m.Region != "south" || len(m.Rounds) != 2 {
		t.Fatalf("GetByCode: %+v", m)
	}
	_, err = e.Matches.GetByCode(bg, "code-z")
	wantErr(t, err, runtime.ErrNotFound, "GetByCode of an unknown code")
	m, err = e.Matches.GetByRoundsSerial(bg, "d/r1")
	must(t, err)
	if m.ID != "d" {
		t.Fatalf("GetByRoundsSerial: %s", m.ID)
	}
	_, err = e.Matches.GetByRoundsSerial(bg, "d/r2")
	wantErr(t, err, runtime.ErrNotFound, "GetByRoundsSerial of an unknown serial")
}

// testUniqueConflicts: every write that would give a unique value to a
// second block fails with ErrDuplicate and changes nothing.
func testUniqueConflicts(t *testing.T, e *env) {
	e.seedLookups(t)
	before := e.snapshot(t)
	taken := newMatch("new", 1)
	taken.Code = "code-a"
	takenSerial := newMatch("new2", 0)
	takenSerial.Rounds = []model.Round{newRound("new2", 0), {Serial: "b/r0"}}
	put := e.getMatch(t, "b")
	put.Code = "code-a"
	put.Tags = []string{"new"}
	putSerial := e.getMatch(t, "b")
	putSerial.Rounds = append(putSerial.Rounds, model.Round{Serial: "a/r1"})
	_, appendErr := e.Matches.AppendRounds(bg, "b", model.Round{Serial: "a/r0"})
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"Create with a taken code", e.Matches.Create(bg, taken)},
		{"Create with a taken round serial", e.Matches.Create(bg, takenSerial)},
		{"Put (new block) with a taken code", e.Matches.Put(bg, taken)},
		{"Put with a taken code", e.Matches.Put(bg, put)},
		{"Put with a taken round serial", e.Matches.Put(bg, putSerial)},
		{"SetCode to a taken code", e.Matches.SetCode(bg, "b", "code-a")},
		{"Update to a taken code", e.Matches.Update(bg, "b", model.MatchUpdate{Code: ptr("code-a"), Region: ptr("changed"), Tags: &[]string{"new"}})},
		{"AppendRounds with a taken serial", appendErr},
		{"SetRoundsAt with a taken serial", e.Matches.SetRoundsAt(bg, "b", 0, model.Round{Serial: "a/r0"})},
		{"Update of an element with a taken serial", e.Matches.Update(bg, "b", model.MatchUpdate{Level: ptr(99), RoundsAt: map[int]model.Round{1: {Serial: "c/r0"}}})},
	} {
		checkErr(t, tc.err, runtime.ErrDuplicate, tc.what)
	}
	if put.Version != 1 || taken.Version != 0 {
		t.Errorf("failed Puts changed the caller's version: %d, %d", put.Version, taken.Version)
	}
	e.unchanged(t, "writes of taken unique values", before)
	// Writing a block's own value again is no conflict; nor is one block
	// holding a value twice.
	must(t, e.Matches.SetCode(bg, "a", "code-a"))
	must(t, e.Matches.SetRoundsAt(bg, "a", 0, model.Round{Serial: "a/r0", Moves: []string{"again"}}))
	must(t, e.Matches.SetRoundsAt(bg, "a", 1, model.Round{Serial: "a/r0"}))
	eqStrings(t, "a serial held twice by one block", e.bySerial(t, "a/r0"), "a")
	_, err := e.Matches.AppendRounds(bg, "a", model.Round{Serial: "a/r0"})
	must(t, err)
	a := e.getMatch(t, "a")
	must(t, e.Matches.Put(bg, a))
	e.lookupsClean(t, "unique writes")
}

func testUniqueFreed(t *testing.T, e *env) {
	e.seedLookups(t)
	// A value a block gave up is free, whatever write gave it up.
	must(t, e.Matches.SetCode(bg, "a", "tmp"))
	must(t, e.Matches.SetCode(bg, "b", "code-a"))
	must(t, e.Matches.Update(bg, "c", model.MatchUpdate{Code: ptr("code-c2")}))
	must(t, e.Matches.Create(bg, &model.Match{ID: "g", Code: "code-c", Rounds: []model.Round{{Serial: "g/r0"}}}))
	d := e.getMatch(t, "d")
	d.Code = "code-d2"
	must(t, e.Matches.Put(bg, d))
	must(t, e.Matches.SetCode(bg, "e", "code-d"))
	must(t, e.Matches.Delete(bg, "f"))
	must(t, e.Matches.SetCode(bg, "a", "code-f"))
	// Serials: given up by SetRoundsAt, by a Put of fewer rounds, by Delete.
	must(t, e.Matches.SetRoundsAt(bg, "b", 0, model.Round{Serial: "b/new"}))
	_, err := e.Matches.AppendRounds(bg, "c", model.Round{Serial: "b/r0"})
	must(t, err)
	d = e.getMatch(t, "d")
	d.Rounds = d.Rounds[:1]
	must(t, e.Matches.Put(bg, d))
	must(t, e.Matches.SetRoundsAt(bg, "e", 0, model.Round{Serial: "d/r1"}))
	_, err = e.Matches.AppendRounds(bg, "e", model.Round{Serial: "f/r0"})
	must(t, err)
	for code, want := range map[string]string{"code-a": "b", "code-c": "g", "code-d": "e", "code-f": "a", "tmp": "", "code-b": "b"} {
		got, err := e.Matches.GetByCode(bg, code)
		if code == "code-b" {
			wantErr(t, err, runtime.ErrNotFound, "GetByCode of a code given up")
			continue
		}
		if want == "" {
			wantErr(t, err, runtime.ErrNotFound, "GetByCode of "+code)
			continue
		}
		must(t, err)
		if got.ID != want {
			t.Fatalf("GetByCode(%s) = %s, want %s", code, got.ID, want)
		}
	}
	for serial, want := range map[string]string{"b/r0": "c", "d/r1": "e", "f/r0": "e", "b/new": "b"} {
		eqStrings(t, "ListByRoundsSerial "+serial, e.bySerial(t, serial), want)
	}
	e.lookupsClean(t, "unique values moving")
}

// testLookupMove: each write moves the block between lookup values.
func testLookupMove(t *testing.T, e *env) {
	e.seedLookups(t)
	must(t, e.Matches.SetTags(bg, "a", []string{"z"}))
	eqStrings(t, "x after SetTags", e.byTag(t, "x"), "c")
	eqStrings(t, "z after SetTags", e.byTag(t, "z"), "a")
	must(t, e.Matches.SetVenue(bg, "b", model.Venue{City: "Rome"}))
	eqStrings(t, "Rome after SetVenue", e.byCity(t, "Rome"), "a", "b", "c", "d")
	eqStrings(t, "Oslo after SetVenue", e.byCity(t, "Oslo"))
	must(t, e.Matches.SetRegion(bg, "a", "south"))
	eqStrings(t, "south after SetRegion (the other part is kept)", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("south")}), "a", "c")
	must(t, e.Matches.SetLevel(bg, "a", 9))
	eqStrings(t, "south:9 after SetLevel", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("south"), Level: runtime.Eq(9)}), "a")
	eqStrings(t, "south:4 after SetLevel", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("south"), Level: runtime.Eq(4)}))
	must(t, e.Matches.Update(bg, "c", model.MatchUpdate{Tags: &[]string{"y"}, Venue: &model.Venue{City: "Oslo"}, Level: ptr(1)}))
	eqStrings(t, "x after Update", e.byTag(t, "x"))
	eqStrings(t, "y after Update", e.byTag(t, "y"), "b", "c", "f")
	eqStrings(t, "Oslo after Update", e.byCity(t, "Oslo"), "c")
	eqStrings(t, "south after Update", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("south")}), "c", "a")
	d := e.getMatch(t, "d")
	d.Tags, d.Venue.City, d.Region = []string{"x"}, "Oslo", "west"
	must(t, e.Matches.Put(bg, d))
	eqStrings(t, "x after Put", e.byTag(t, "x"), "d")
	eqStrings(t, "Oslo after Put", e.byCity(t, "Oslo"), "c", "d")
	eqStrings(t, "west after Put", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("west")}), "f", "d")
	must(t, e.Matches.Delete(bg, "f"))
	eqStrings(t, "y after Delete", e.byTag(t, "y"), "b", "c")
	eqStrings(t, "west after Delete", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("west")}), "d")
	// Unindexed writes leave the lookups alone.
	must(t, e.Matches.SetMeta(bg, "d", map[string]int{"k": 1}))
	eqStrings(t, "x after SetMeta", e.byTag(t, "x"), "d")
	// Element lookups move with Append and SetAt; EAO lookups with Update of
	// the root and of elements.
	_, err := e.Matches.AppendRounds(bg, "d", model.Round{Serial: "d/new"})
	must(t, err)
	eqStrings(t, "d/new after AppendRounds", e.bySerial(t, "d/new"), "d")
	must(t, e.Matches.SetRoundsAt(bg, "d", 0, model.Round{Serial: "d/newer"}))
	eqStrings(t, "d/r0 after SetRoundsAt", e.bySerial(t, "d/r0"))
	eqStrings(t, "d/newer after SetRoundsAt", e.bySerial(t, "d/newer"), "d")
	j := &model.Journal{Owner: "ann", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	_, err = e.Journals.AppendLines(bg, j.ID, model.Line{Kind: "k2"})
	must(t, err)
	must(t, e.Journals.SetLinesAt(bg, j.ID, 0, model.Line{Kind: "k3"}))
	if got := e.journalsBy(t, "", "k"); len(got) != 0 {
		t.Fatalf("kind k after SetLinesAt: %v", got)
	}
	for _, k := range []string{"k2", "k3"} {
		if got := e.journalsBy(t, "", k); len(got) != 1 {
			t.Fatalf("kind %s after AppendLines and SetLinesAt: %v", k, got)
		}
	}
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "bob"}, LinesAt: map[int]model.Line{1: {Kind: "k4"}}}))
	if got := e.journalsBy(t, "bob", ""); len(got) != 1 {
		t.Fatalf("owner bob after Update: %v", got)
	}
	if got := e.journalsBy(t, "", "k2"); len(got) != 0 {
		t.Fatalf("kind k2 after Update: %v", got)
	}
	e.lookupsClean(t, "lookup values moving")
}

func testLookupPages(t *testing.T, e *env) {
	var want []string
	for i := range 17 {
		id := fmt.Sprintf("m%02d", (i*5)%17)
		m := newMatch(id, 0)
		m.Tags = []string{"all"}
		must(t, e.Matches.Create(bg, m))
	}
	for i := range 17 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	for _, limit := range []int{1, 4, 16, 17, 18} {
		got := matchIDs(collect(t, limit, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByTags(bg, "all", req)
		}))
		eqStrings(t, fmt.Sprintf("ListByTags by pages of %d", limit), got, want...)
	}
	// Changes between pages: nothing skipped or repeated.
	page, err := e.Matches.ListByTags(bg, "all", runtime.PageRequest{Limit: 5}) // m00..m04
	must(t, err)
	must(t, e.Matches.Delete(bg, "m01"))
	must(t, e.Matches.SetTags(bg, "m04", []string{"other"})) // the cursor's block leaves
	must(t, e.Matches.Delete(bg, "m07"))
	must(t, e.Matches.SetTags(bg, "m08", nil))
	for _, id := range []string{"m00a", "m05a"} {
		m := newMatch(id, 0)
		m.Tags = []string{"all"}
		must(t, e.Matches.Create(bg, m))
	}
	rest := matchIDs(collect(t, 5, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		if req.Cursor == "" {
			req.Cursor = page.Next
		}
		return e.Matches.ListByTags(bg, "all", req)
	}))
	eqStrings(t, "ListByTags pages after changes", rest, "m05", "m05a", "m06", "m09", "m10", "m11", "m12", "m13", "m14", "m15", "m16")
	// Composite lookups page in (value, key) order.
	for i := range 6 {
		m := newMatch(fmt.Sprintf("r%d", i), 0)
		m.Region, m.Level = "r", 5-i%3
		must(t, e.Matches.Create(bg, m))
	}
	eqStrings(t, "ListByRegionLevel by pages", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("r")}), "r2", "r5", "r1", "r4", "r0", "r3")
}

func testLookupCursors(t *testing.T, e *env) {
	e.seedLookups(t)
	q := model.MatchRegionLevelQuery{Region: runtime.Eq("north")}
	first, err := e.Matches.ListByRegionLevel(bg, q, runtime.PageRequest{Limit: 1})
	must(t, err)
	good := first.Next
	tags, err := e.Matches.ListByTags(bg, "y", runtime.PageRequest{Limit: 1})
	must(t, err)
	list, err := e.Matches.List(bg, runtime.PageRequest{Limit: 1})
	must(t, err)
	flip := []byte(good)
	flip[len(flip)/2] ^= 2
	for what, c := range map[string]string{
		"tampered":  string(flip),
		"truncated": good[:len(good)-2],
		"extended":  good + "x",
		"garbage":   "%%%",
		"of a tag":  tags.Next,
		"of List":   list.Next,
	} {
		noPanic(t, "ListByRegionLevel with a cursor "+what, func() {
			_, err := e.Matches.ListByRegionLevel(bg, q, runtime.PageRequest{Limit: 1, Cursor: c})
			checkErr(t, err, runtime.ErrBadCursor, "ListByRegionLevel with a cursor "+what)
		})
	}
	_, err = e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq("south")}, runtime.PageRequest{Limit: 1, Cursor: good})
	checkErr(t, err, runtime.ErrBadCursor, "a north cursor used for south")
	_, err = e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq("north"), Level: runtime.Gte(1)}, runtime.PageRequest{Limit: 1, Cursor: good})
	checkErr(t, err, runtime.ErrBadCursor, "a cursor used with other conditions")
	_, err = e.Matches.ListByTags(bg, "x", runtime.PageRequest{Limit: 1, Cursor: tags.Next})
	checkErr(t, err, runtime.ErrBadCursor, "a tag cursor used for another tag")
	_, err = e.Matches.ListByCode(bg, "y", runtime.PageRequest{Limit: 1, Cursor: tags.Next})
	checkErr(t, err, runtime.ErrBadCursor, "a tag cursor used by another lookup with the same value")
	_, err = e.Matches.List(bg, runtime.PageRequest{Limit: 1, Cursor: good})
	checkErr(t, err, runtime.ErrBadCursor, "a lookup cursor used by List")
	// Forged positions, signed with the default key, outside the query's
	// range or not index keys of this store at all.
	rng := runtime.NewKeyRange(nil)
	rng = runtime.Narrow(rng, "region", runtime.Eq("north"), func(b []byte, v string) []byte { return runtime.AppendString(b, v) })
	rng = runtime.Narrow(rng, "level", runtime.Cond[int]{}, func(b []byte, v int) []byte { return runtime.AppendInt(b, int64(v)) })
	query := rng.Query("Match.regionLevel")
	for _, pos := range [][]byte{
		runtime.AppendString(nil, "south"),
		runtime.AppendString(nil, "zzz"),
		nil,
		{0xff, 0xff},
		runtime.AppendInt(runtime.AppendString(nil, "north"), 1<<40),
		append(runtime.AppendInt(runtime.AppendString(nil, "north"), 4), 0xff),
	} {
		c := runtime.EncodeCursor(query, pos)
		noPanic(t, fmt.Sprintf("ListByRegionLevel after a forged position %x", pos), func() {
			page, err := e.Matches.ListByRegionLevel(bg, q, runtime.PageRequest{Limit: 1, Cursor: c})
			if err != nil {
				checkErr(t, err, runtime.ErrBadCursor, fmt.Sprintf("ListByRegionLevel after a forged position %x", pos))
				return
			}
			for _, m := range page.Items {
				if m.Region != "north" {
					t.Errorf("a forged position %x gave a match of region %s", pos, m.Region)
				}
			}
		})
	}
	if _, err := e.Matches.ListByRegionLevel(bg, q, runtime.PageRequest{Limit: 1, Cursor: good}); err != nil {
		t.Fatalf("the good cursor after all that: %v", err)
	}
}
