package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// descTests page in descending order (runtime.PageRequest.Desc) through
// every kind of listing.
var descTests = []subtest{
	{name: "DescendingList", fn: testDescList},
	{name: "DescendingLookups", fn: testDescLookups},
	{name: "DescendingScopes", fn: testDescScopes},
	{name: "DescendingElements", fn: testDescElements},
}

// listing is one listing of the descending tests: a page of it, its items
// shown as strings.
type listing struct {
	name string
	// least is the fewest items the listing must have, so that a check
	// of its order cannot pass on an empty listing.
	least int
	page  func(req runtime.PageRequest) ([]string, string, error)
}

func pageOf[T any](key func(T) string, list func(runtime.PageRequest) (runtime.Page[T], error)) func(runtime.PageRequest) ([]string, string, error) {
	return func(req runtime.PageRequest) ([]string, string, error) {
		p, err := list(req)
		out := make([]string, 0, len(p.Items))
		for _, x := range p.Items {
			out = append(out, key(x))
		}
		return out, p.Next, err
	}
}

// pages follows l's cursors from req (its Limit, its direction, its
// Cursor: "" for the first page) and returns every item.
func (l listing) pages(t *testing.T, req runtime.PageRequest) []string {
	t.Helper()
	var out []string
	for range 10000 {
		items, next, err := l.page(req)
		if err != nil {
			t.Fatalf("%s (desc %v, limit %d): %v", l.name, req.Desc, req.Limit, err)
		}
		if len(items) > req.Size() {
			t.Fatalf("%s: a page of %d items with limit %d", l.name, len(items), req.Limit)
		}
		out = append(out, items...)
		if next == "" {
			return out
		}
		if len(items) == 0 {
			t.Fatalf("%s: an empty page with a Next cursor", l.name)
		}
		req.Cursor = next
	}
	t.Fatalf("%s: the listing does not end", l.name)
	return nil
}

// checkDesc checks that l's descending pages, of every size, are its
// ascending listing in exact reverse order, and that a cursor of one
// direction is refused by a page of the other with ErrBadCursor.
func checkDesc(t *testing.T, l listing) {
	t.Helper()
	asc := l.pages(t, runtime.PageRequest{Limit: 1000})
	if len(asc) < l.least {
		t.Fatalf("%s: %d items %v, want at least %d", l.name, len(asc), asc, l.least)
	}
	want := slices.Clone(asc)
	slices.Reverse(want)
	for _, limit := range []int{1, 2, 3, 0} {
		got := l.pages(t, runtime.PageRequest{Limit: limit, Desc: true})
		if !slices.Equal(got, want) {
			t.Fatalf("%s, descending by pages of %d: %v, want %v (the ascending listing reversed)", l.name, limit, got, want)
		}
	}
	if len(asc) < 2 {
		return
	}
	for _, desc := range []bool{false, true} {
		_, next, err := l.page(runtime.PageRequest{Limit: 1, Desc: desc})
		must(t, err)
		if next == "" {
			t.Fatalf("%s (desc %v): a first page of 1 of %d items has no Next", l.name, desc, len(asc))
		}
		_, _, err = l.page(runtime.PageRequest{Limit: 1, Desc: !desc, Cursor: next})
		checkErr(t, err, runtime.ErrBadCursor, fmt.Sprintf("%s: a cursor of a page with desc %v, passed with desc %v", l.name, desc, !desc))
	}
}

func matchKey(m *model.Match) string     { return m.ID }
func replyKey(r *model.Reply) string     { return fmt.Sprintf("%s/%d", r.Key.Thread, r.Key.Seq) }
func cardKey(c *model.Card) string       { return fmt.Sprint(c.ID) }
func journalKey(j *model.Journal) string { return fmt.Sprint(j.ID) }

// testDescList: List in descending order is List's order reversed on a
// store with an ordered scan, and ErrUnsupported on one without; keyset
// pages see the blocks created and deleted between pages as ascending
// pages do.
func testDescList(t *testing.T, e *env) {
	e.seedListing(t, 11)
	lists := []listing{
		{"Match List", 11, pageOf(matchKey, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) { return e.Matches.List(bg, req) })},
		{"Journal List", 11, pageOf(journalKey, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) { return e.Journals.List(bg, req) })},
		{"Card List", 11, pageOf(cardKey, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) { return e.Cards.List(bg, req) })},
		{"Reply List", 11, pageOf(replyKey, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) { return e.Replies.List(bg, req) })},
	}
	if !e.h.Caps.OrderedScan {
		for _, l := range lists {
			_, _, err := l.page(runtime.PageRequest{Desc: true})
			if !checkErr(t, err, runtime.ErrUnsupported, l.name+" in descending order, on a store without an ordered scan") {
				continue
			}
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("%s: %v is not errors.ErrUnsupported", l.name, err)
			}
		}
		return
	}
	for _, l := range lists {
		checkDesc(t, l)
	}

	// Changes between pages, as testListChanges but newest first.
	for i := range 10 {
		e.createMatch(t, fmt.Sprintf("q%d", i), 0)
	}
	inQ := func(ids []string) []string {
		return slices.DeleteFunc(ids, func(id string) bool { return id[0] != 'q' })
	}
	// The matches of seedListing (m...) come before every q.
	first, err := e.Matches.List(bg, runtime.PageRequest{Limit: 4, Desc: true})
	must(t, err)
	eqStrings(t, "the first descending page", matchIDs(first.Items), "q9", "q8", "q7", "q6")
	// Delete a block seen, the cursor's own block and one not yet seen;
	// create one before the cursor and one after it; rewrite one.
	for _, id := range []string{"q8", "q6", "q3"} {
		must(t, e.Matches.Delete(bg, id))
	}
	e.createMatch(t, "q0a", 0)
	e.createMatch(t, "q7a", 0)
	must(t, e.Matches.Put(bg, newMatchVersion(e, t, "q9")))
	rest := matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		req.Desc = true
		if req.Cursor == "" {
			req.Cursor = first.Next
		}
		return e.Matches.List(bg, req)
	}))
	eqStrings(t, "the descending pages after the changes", inQ(rest), "q5", "q4", "q2", "q1", "q0a", "q0")
}

// testDescLookups: ListBy<Lookup> in descending order, for unique,
// non-unique, multi-valued and composite lookups, with and without a
// range, is the ascending listing reversed, also across changes between
// pages.
func testDescLookups(t *testing.T, e *env) {
	for i := range 13 {
		m := newMatch(fmt.Sprintf("d%02d", (i*5)%13), 0)
		m.Region = []string{"north", "south"}[i%2]
		m.Level = i % 4
		m.Tags = []string{"t1", fmt.Sprint("g", i%3)}
		must(t, e.Matches.Create(bg, m))
	}
	for i := range 5 {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: fmt.Sprint("th", i%2)}, Author: "ann"}))
	}
	byTag := func(tag string) listing {
		return listing{"ListByTags " + tag, 4, pageOf(matchKey, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByTags(bg, tag, req)
		})}
	}
	byRegionLevel := func(what string, least int, q model.MatchRegionLevelQuery) listing {
		return listing{"ListByRegionLevel " + what, least, pageOf(matchKey, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByRegionLevel(bg, q, req)
		})}
	}
	for _, l := range []listing{
		byTag("t1"), byTag("g0"), byTag("g2"),
		{"ListByVenueCity", 13, pageOf(matchKey, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByVenueCity(bg, "Rome", req)
		})},
		{"ListByCode (unique)", 1, pageOf(matchKey, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByCode(bg, "code-d03", req)
		})},
		byRegionLevel("north", 7, model.MatchRegionLevelQuery{}.RegionEq("north")),
		byRegionLevel("every region", 13, model.MatchRegionLevelQuery{}),
		byRegionLevel("north, level in [1, 3)", 3, model.MatchRegionLevelQuery{}.RegionEq("north").LevelGte(1).LevelLt(3)),
		byRegionLevel("south, level > 0", 4, model.MatchRegionLevelQuery{}.RegionEq("south").LevelGt(0)),
		byRegionLevel("region >= north", 13, model.MatchRegionLevelQuery{}.RegionGte("north")),
		{"ListByAuthor", 5, pageOf(replyKey, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByAuthor(bg, "ann", req)
		})},
	} {
		checkDesc(t, l)
	}

	// Changes between pages: the lookup's order is (value, block key).
	for i := range 10 {
		m := newMatch(fmt.Sprintf("x%d", i), 0)
		m.Tags = []string{"chg"}
		must(t, e.Matches.Create(bg, m))
	}
	list := func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		req.Desc = true
		return e.Matches.ListByTags(bg, "chg", req)
	}
	first, err := list(runtime.PageRequest{Limit: 4})
	must(t, err)
	eqStrings(t, "the first descending page of ListByTags", matchIDs(first.Items), "x9", "x8", "x7", "x6")
	for _, id := range []string{"x8", "x6", "x3"} {
		must(t, e.Matches.Delete(bg, id))
	}
	for _, id := range []string{"x0a", "x7a"} {
		m := newMatch(id, 0)
		m.Tags = []string{"chg"}
		must(t, e.Matches.Create(bg, m))
	}
	// x5 loses the tag, x9 (seen) keeps it.
	must(t, e.Matches.SetTags(bg, "x5", []string{"other"}))
	must(t, e.Matches.SetTags(bg, "x9", []string{"chg", "more"}))
	rest := matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		if req.Cursor == "" {
			req.Cursor = first.Next
		}
		return list(req)
	}))
	eqStrings(t, "the descending pages of ListByTags after the changes", rest, "x4", "x2", "x1", "x0a", "x0")
}

// testDescScopes: ListBy<Scope> in descending order is the scope's
// number order reversed, whatever the gaps, also across changes between
// pages; a scope that is a prefix of another lists its own blocks only.
func testDescScopes(t *testing.T, e *env) {
	for range 10 {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a"}}))
	}
	for _, th := range []string{"ab", "", "b", "ab"} {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: th}}))
	}
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a", Seq: 1000}}))
	must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: 4}))
	byThread := func(th string, least int) listing {
		return listing{fmt.Sprintf("ListByThread %q", th), least, pageOf(replyKey, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByThread(bg, th, req)
		})}
	}
	for _, l := range []listing{byThread("a", 10), byThread("ab", 2), byThread("", 1), byThread("b", 1)} {
		checkDesc(t, l)
	}
	got := byThread("a", 0).pages(t, runtime.PageRequest{Limit: 4, Desc: true})
	if want := []string{"a/1000", "a/10", "a/9", "a/8", "a/7", "a/6", "a/5", "a/3", "a/2", "a/1"}; !slices.Equal(got, want) {
		t.Fatalf("ListByThread a, descending: %v, want %v", got, want)
	}

	// Changes between pages.
	list := func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
		req.Desc = true
		return e.Replies.ListByThread(bg, "a", req)
	}
	first, err := list(runtime.PageRequest{Limit: 3}) // 1000, 10, 9
	must(t, err)
	for _, seq := range []int64{10, 9, 6} { // seen, the cursor's, not yet seen
		must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: seq}))
	}
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a"}}))         // a new number, above the cursor
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a", Seq: 4}})) // below it
	rest := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
		if req.Cursor == "" {
			req.Cursor = first.Next
		}
		return list(req)
	})
	got = keysOf(rest, replyKey)
	if want := []string{"a/8", "a/7", "a/5", "a/4", "a/3", "a/2", "a/1"}; !slices.Equal(got, want) {
		t.Fatalf("ListByThread a, descending pages after the changes: %v, want %v", got, want)
	}
}

// testDescElements: List<Partition> in descending order is the elements
// in reverse index order, also across appends and element writes between
// pages (an element appended after the first page is above the cursor:
// not listed).
func testDescElements(t *testing.T, e *env) {
	e.createMatch(t, "r7", 7)
	e.createMatch(t, "r0", 0)
	j := &model.Journal{Owner: "ann", Lines: []model.Line{{Kind: "a", Text: "0"}, {Kind: "b", Text: "1"}, {Kind: "c", Text: "2"}}, Notes: []string{"n0", "n1"}}
	must(t, e.Journals.Create(bg, j))
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Edits: []string{"e0", "e1", "e2", "e3"}}
	must(t, e.Replies.Create(bg, r))
	serial := func(x model.Round) string { return x.Serial }
	rounds := func(id string, least int) listing {
		return listing{"ListRounds " + id, least, pageOf(serial, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
			return e.Matches.ListRounds(bg, id, req)
		})}
	}
	str := func(x string) string { return x }
	for _, l := range []listing{
		rounds("r7", 7), rounds("r0", 0),
		{"ListLines", 3, pageOf(func(x model.Line) string { return x.Text }, func(req runtime.PageRequest) (runtime.Page[model.Line], error) {
			return e.Journals.ListLines(bg, j.ID, req)
		})},
		{"ListNotes", 2, pageOf(str, func(req runtime.PageRequest) (runtime.Page[string], error) {
			return e.Journals.ListNotes(bg, j.ID, req)
		})},
		{"ListEdits", 4, pageOf(str, func(req runtime.PageRequest) (runtime.Page[string], error) {
			return e.Replies.ListEdits(bg, r.Key, req)
		})},
	} {
		checkDesc(t, l)
	}
	_, err := e.Matches.ListRounds(bg, "none", runtime.PageRequest{Desc: true})
	checkErr(t, err, runtime.ErrNotFound, "ListRounds of a missing block, descending")

	// Changes between pages.
	list := func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
		req.Desc = true
		return e.Matches.ListRounds(bg, "r7", req)
	}
	first, err := list(runtime.PageRequest{Limit: 3})
	must(t, err)
	if got := keysOfElems(first.Items, serial); !slices.Equal(got, []string{"r7/r6", "r7/r5", "r7/r4"}) {
		t.Fatalf("the first descending page of ListRounds: %v", got)
	}
	for i := range 2 {
		_, err := e.Matches.AppendRounds(bg, "r7", newRound("r7", 7+i))
		must(t, err)
	}
	must(t, e.Matches.SetRoundsAt(bg, "r7", 2, newRound("r7", 20)))
	rest := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
		if req.Cursor == "" {
			req.Cursor = first.Next
		}
		return list(req)
	})
	if got := keysOfElems(rest, serial); !slices.Equal(got, []string{"r7/r3", "r7/r20", "r7/r1", "r7/r0"}) {
		t.Fatalf("the descending pages of ListRounds after the changes: %v", got)
	}
}

func keysOfElems[E any](items []E, key func(E) string) []string {
	out := make([]string, 0, len(items))
	for _, x := range items {
		out = append(out, key(x))
	}
	return out
}
