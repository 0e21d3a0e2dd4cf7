package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var listTests = []subtest{
	{name: "ListEmpty", fn: testListEmpty},
	{name: "ListCompleteAndOrdered", fn: testListComplete},
	{name: "AllCompleteAndOrdered", fn: testAllComplete},
	{name: "ListChangesBetweenPages", fn: testListChanges},
	{name: "ListCursors", fn: testListCursors},
}

func testListEmpty(t *testing.T, e *env) {
	for what, list := range map[string]func(runtime.PageRequest) (int, string, error){
		"Match": func(req runtime.PageRequest) (int, string, error) {
			p, err := e.Matches.List(bg, req)
			return len(p.Items), p.Next, err
		},
		"Card": func(req runtime.PageRequest) (int, string, error) {
			p, err := e.Cards.List(bg, req)
			return len(p.Items), p.Next, err
		},
	} {
		n, next, err := list(runtime.PageRequest{Limit: 3})
		must(t, err)
		if n != 0 || next != "" {
			t.Fatalf("List of an empty %s collection: %d items, Next %q", what, n, next)
		}
	}
	for range e.Replies.All(bg) {
		t.Fatal("All of an empty collection yielded")
	}
}

// seedListing stores blocks of every aggregate, in an order unlike their
// key order, and returns their keys in key order.
func (e *env) seedListing(t *testing.T, n int) (matches []string, journals []model.JournalID, cards []int32, replies []model.ReplyKey) {
	t.Helper()
	for i := range n {
		k := (i * 7) % n // out of order
		id := fmt.Sprintf("m%03d", k)
		must(t, e.Matches.Create(bg, newMatch(id, k%3)))
		matches = append(matches, id)
		card := int32(k*1000 - n*500) // negative and positive
		must(t, e.Cards.Create(bg, &model.Card{ID: card, Title: id}))
		cards = append(cards, card)
		j := &model.Journal{Owner: id}
		must(t, e.Journals.Create(bg, j))
		journals = append(journals, j.ID)
		r := &model.Reply{Key: model.ReplyKey{Thread: []string{"b", "a", "ab", ""}[k%4]}}
		must(t, e.Replies.Create(bg, r))
		replies = append(replies, r.Key)
	}
	slices.Sort(matches)
	slices.Sort(journals)
	slices.Sort(cards)
	slices.SortFunc(replies, func(a, b model.ReplyKey) int {
		return cmp.Or(cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Seq, b.Seq))
	})
	return
}

// checkListed fails t unless got has every key of want exactly once, in
// want's order when ordered.
func checkListed[K comparable](t *testing.T, what string, got, want []K, ordered bool) {
	t.Helper()
	count := map[K]int{}
	for _, k := range got {
		count[k]++
	}
	for _, k := range want {
		if count[k] != 1 {
			t.Fatalf("%s: %v listed %d times, want once (listed %v)", what, k, count[k], got)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d (listed %v)", what, len(got), len(want), got)
	}
	if ordered && !slices.Equal(got, want) {
		t.Fatalf("%s: order %v, want block-key order %v", what, got, want)
	}
}

func keysOf[T any, K any](items []*T, key func(*T) K) []K {
	out := make([]K, 0, len(items))
	for _, x := range items {
		out = append(out, key(x))
	}
	return out
}

func testListComplete(t *testing.T, e *env) {
	matches, journals, cards, replies := e.seedListing(t, 23)
	ordered := e.h.Caps.OrderedScan
	for _, limit := range []int{1, 2, 5, 22, 23, 24, 0} {
		what := fmt.Sprintf("List by pages of %d", limit)
		ms := collect(t, limit, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) { return e.Matches.List(bg, req) })
		checkListed(t, "Match "+what, matchIDs(ms), matches, ordered)
		js := collect(t, limit, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) { return e.Journals.List(bg, req) })
		checkListed(t, "Journal "+what, keysOf(js, func(j *model.Journal) model.JournalID { return j.ID }), journals, ordered)
		cs := collect(t, limit, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) { return e.Cards.List(bg, req) })
		checkListed(t, "Card "+what, keysOf(cs, func(c *model.Card) int32 { return c.ID }), cards, ordered)
		rs := collect(t, limit, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) { return e.Replies.List(bg, req) })
		checkListed(t, "Reply "+what, keysOf(rs, func(r *model.Reply) model.ReplyKey { return r.Key }), replies, ordered)
	}
	page, err := e.Matches.List(bg, runtime.PageRequest{Limit: 23})
	must(t, err)
	if len(page.Items) != 23 || page.Next != "" {
		t.Fatalf("List with a limit equal to the count: %d items, Next %q (want no Next)", len(page.Items), page.Next)
	}
}

func testAllComplete(t *testing.T, e *env) {
	// More cards than one page of All (runtime.DefaultPageLimit).
	var want []int32
	for i := range runtime.DefaultPageLimit*2 + 17 {
		id := int32((i*37)%251 - 120)
		must(t, e.Cards.Create(bg, &model.Card{ID: id}))
		want = append(want, id)
	}
	slices.Sort(want)
	var got []int32
	for c, err := range e.Cards.All(bg) {
		must(t, err)
		got = append(got, c.ID)
		if len(got)%50 == 0 {
			// Writing while iterating: All holds nothing open between
			// pages, and a new block after the position may or may not be
			// seen, but none is seen twice.
			must(t, e.Cards.Put(bg, &model.Card{ID: c.ID, Title: "seen"}))
		}
	}
	checkListed(t, "All", got, want, e.h.Caps.OrderedScan)
	n := 0
	for _, err := range e.Cards.All(bg) {
		must(t, err)
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("breaking out of All after 3 items: %d", n)
	}
	ms, _, _, _ := e.seedListing(t, 5)
	var all []string
	for m, err := range e.Matches.All(bg) {
		must(t, err)
		all = append(all, m.ID)
	}
	checkListed(t, "All of matches", all, ms, e.h.Caps.OrderedScan)
}

// testListChanges: inserting or deleting blocks between pages makes no
// page repeat a block, and skips none that stayed: with an ordered scan,
// the pages after the cursor are exactly the blocks after it.
func testListChanges(t *testing.T, e *env) {
	for i := range 10 {
		e.createMatch(t, fmt.Sprintf("p%d", i), 0)
	}
	first, err := e.Matches.List(bg, runtime.PageRequest{Limit: 4}) // p0..p3 when ordered
	must(t, err)
	seen := matchIDs(first.Items)
	// Delete a block seen, the cursor's own block and one not yet seen;
	// create one before the cursor and one after it; rewrite one.
	last := seen[len(seen)-1]
	for _, id := range []string{seen[1], last, "p6"} {
		if id != "p6" || !slices.Contains(seen, "p6") {
			must(t, e.Matches.Delete(bg, id))
		}
	}
	e.createMatch(t, "p0a", 0)
	e.createMatch(t, "p7a", 0)
	must(t, e.Matches.Put(bg, newMatchVersion(e, t, seen[0])))
	rest := matchIDs(collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
		if req.Cursor == "" {
			req.Cursor = first.Next
		}
		return e.Matches.List(bg, req)
	}))
	if e.h.Caps.OrderedScan {
		eqStrings(t, "the pages after the changes", rest, "p4", "p5", "p7", "p7a", "p8", "p9")
		return
	}
	count := map[string]int{}
	for _, id := range append(seen, rest...) {
		count[id]++
	}
	for id, n := range count {
		if n > 1 {
			t.Fatalf("%s listed %d times across the pages", id, n)
		}
	}
	for i := range 10 {
		id := fmt.Sprintf("p%d", i)
		if id != seen[1] && id != last && id != "p6" && count[id] != 1 {
			t.Fatalf("%s, never changed, was skipped by the pages", id)
		}
	}
}

func newMatchVersion(e *env, t *testing.T, id string) *model.Match {
	m := e.getMatch(t, id)
	m.Level++
	return m
}

func testListCursors(t *testing.T, e *env) {
	e.seedListing(t, 6)
	page, err := e.Matches.List(bg, runtime.PageRequest{Limit: 2})
	must(t, err)
	good := page.Next
	cards, err := e.Cards.List(bg, runtime.PageRequest{Limit: 2})
	must(t, err)
	rounds, err := e.Matches.ListRounds(bg, "m002", runtime.PageRequest{Limit: 1})
	must(t, err)
	byTag, err := e.Matches.ListByTags(bg, "t1", runtime.PageRequest{Limit: 1})
	must(t, err)
	flip := []byte(good)
	flip[len(flip)/2] ^= 1
	for what, c := range map[string]string{
		"tampered":        string(flip),
		"truncated":       good[:len(good)-3],
		"extended":        good + "AA",
		"garbage":         "!!not a cursor!!",
		"empty payload":   "AQ",
		"of another kind": cards.Next,
		"of ListRounds":   rounds.Next,
		"of ListByTags":   byTag.Next,
	} {
		noPanic(t, "List with a cursor "+what, func() {
			_, err := e.Matches.List(bg, runtime.PageRequest{Limit: 2, Cursor: c})
			checkErr(t, err, runtime.ErrBadCursor, "List with a cursor "+what)
		})
	}
	noPanic(t, "Card List with a Match cursor", func() {
		_, err := e.Cards.List(bg, runtime.PageRequest{Cursor: good})
		checkErr(t, err, runtime.ErrBadCursor, "Card List with a Match cursor")
	})
	// Forged positions signed with the default key: not block keys, or
	// block keys far past the end.
	for _, tc := range []struct {
		what    string
		query   string
		payload []byte
	}{
		{"Match: no key", "Match.List", nil},
		{"Match: an integer", "Match.List", runtime.AppendInt(nil, 7)},
		{"Match: a key and more", "Match.List", append(runtime.AppendString(nil, "m001"), 1, 2)},
		{"Card: a string", "Card.List", runtime.AppendString(nil, "x")},
		{"Reply: half a key", "Reply.List", runtime.AppendString(nil, "a")},
	} {
		c := runtime.EncodeCursor(tc.query, tc.payload)
		noPanic(t, "List with a forged position ("+tc.what+")", func() {
			var err error
			switch tc.query {
			case "Match.List":
				_, err = e.Matches.List(bg, runtime.PageRequest{Cursor: c})
			case "Card.List":
				_, err = e.Cards.List(bg, runtime.PageRequest{Cursor: c})
			case "Reply.List":
				_, err = e.Replies.List(bg, runtime.PageRequest{Cursor: c})
			}
			// Signed with the default key, a forged position is no damaged
			// cursor: a store may refuse it or read from it.
			if err != nil {
				checkErr(t, err, runtime.ErrBadCursor, "List with a forged position ("+tc.what+")")
			} else {
				t.Logf("%s reads from a forged position (%s)", e.h.Name, tc.what)
			}
		})
	}
	far := runtime.EncodeCursor("Match.List", runtime.AppendString(nil, "zzzz"))
	noPanic(t, "List after a forged position past the end", func() {
		page, err := e.Matches.List(bg, runtime.PageRequest{Cursor: far})
		if err != nil {
			checkErr(t, err, runtime.ErrBadCursor, "List after a forged position past the end")
		} else if e.h.Caps.OrderedScan && len(page.Items) != 0 {
			t.Errorf("List after a forged position past the end: %d matches", len(page.Items))
		}
	})
	if _, err := e.Matches.List(bg, runtime.PageRequest{Limit: 2, Cursor: good}); err != nil {
		t.Fatalf("the good cursor after all that: %v", err)
	}
}
