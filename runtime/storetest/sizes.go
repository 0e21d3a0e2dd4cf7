package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// The size tests build keys, lookup values and values just over and just
// under the limits the store declares (Harness.Caps: MaxKeyBytes,
// MaxIndexKeyBytes, MaxValueBytes). Past a limit every write fails with
// runtime.ErrTooLarge naming the limit and writes nothing, and a read of
// a key or value no write can store finds nothing (ErrNotFound, an empty
// page).
var sizeTests = []subtest{
	{name: "KeyTooLarge", fn: testKeyTooLarge},
	{name: "LookupValueTooLarge", fn: testLookupValueTooLarge},
	{name: "ValueTooLarge", fn: testValueTooLarge},
}

// RunSizes runs only the size tests, for a store whose own test lowers its
// limits (and declares the lowered ones in h.Caps) so that they can be
// passed without allocating hundreds of megabytes.
func RunSizes(t *testing.T, h Harness) {
	runTests(t, h, sizeTests)
}

// maxAlloc bounds the size of one value the size tests allocate: a limit
// above it (bbolt's 2 GiB value, Redis's 512 MB) is skipped here and left
// to the store's own tests with a lowered limit (RunSizes).
const maxAlloc = 64 << 20

// keyLimit is the limit of a block key: MaxKeyBytes, or the value limit
// when the key lives in the value (MongoDB's _id).
func keyLimit(c runtime.Caps) int {
	if c.MaxKeyBytes > 0 {
		return c.MaxKeyBytes
	}
	return c.MaxValueBytes
}

// indexLimit is the limit of an index key made of a lookup value.
func indexLimit(c runtime.Caps) int {
	if c.MaxIndexKeyBytes > 0 {
		return c.MaxIndexKeyBytes
	}
	return keyLimit(c)
}

// underLimit is a length just under limit that a write must accept:
// limit less the bytes a store adds to a key (encoding, entry key, the
// block key after a non-unique lookup value), or a quarter of it when the
// limit is the value's (the key shares the document with the rest).
func underLimit(limit int, own bool) int {
	if !own {
		return limit / 4
	}
	return limit - 96
}

func skipLimit(t *testing.T, e *env, what string, limit int) {
	t.Helper()
	switch {
	case limit == 0:
		t.Skipf("%s declares no %s limit", e.h.Name, what)
	case limit > maxAlloc:
		t.Skipf("%s's %s limit is %d bytes: passing it here would allocate more than %d (the store's own tests lower it)", e.h.Name, what, limit, maxAlloc)
	}
}

// wantTooLarge fails t unless err is a runtime.ErrTooLarge *runtime.Error
// that names the limit (its number of bytes, or one of the others given:
// a lookup value over the index key limit is often in a value over the
// value limit too) in a message of readable size.
func wantTooLarge(t *testing.T, err error, limit int, what string, or ...int) {
	t.Helper()
	named := strings.Contains(fmt.Sprint(err), strconv.Itoa(limit))
	for _, l := range or {
		named = named || (l > 0 && strings.Contains(fmt.Sprint(err), strconv.Itoa(l)))
	}
	var re *runtime.Error
	switch {
	case !errors.Is(err, runtime.ErrTooLarge):
		msg := "<nil>"
		if err != nil {
			msg = err.Error()
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
		}
		t.Errorf("%s: got error %s, want %v", what, msg, runtime.ErrTooLarge)
	case !errors.As(err, &re):
		t.Errorf("%s: the error %.300s is no *runtime.Error", what, err)
	case !named:
		t.Errorf("%s: the error %.300s does not name the limit of %d bytes", what, err, limit)
	case len(err.Error()) > 1000:
		t.Errorf("%s: an error of %d bytes (the oversized key belongs shortened in it): %.300s", what, len(err.Error()), err)
	}
}

// testKeyTooLarge: a block key whose encoding alone is over the key limit
// is refused by every write and found by no read; one just under it works.
func testKeyTooLarge(t *testing.T, e *env) {
	limit := keyLimit(e.h.Caps)
	skipLimit(t, e, "key", limit)
	e.createMatch(t, "m", 1)
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	before := e.snapshot(t)

	long := strings.Repeat("k", limit) // with the codec's tag and terminator: over
	withID := func(id string) *model.Match {
		m := newMatch("x", 1)
		m.ID = id
		return m
	}
	_, appendErr := e.Matches.AppendRounds(bg, long, newRound("y", 0))
	for what, err := range map[string]error{
		"Create":       e.Matches.Create(bg, withID(long)),
		"Put":          e.Matches.Put(bg, withID(long)),
		"SetRegion":    e.Matches.SetRegion(bg, long, "r"),
		"Update":       e.Matches.Update(bg, long, model.MatchUpdate{Level: ptr(3)}),
		"AppendRounds": appendErr,
		"Delete":       e.Matches.Delete(bg, long),
		// A scope of a counted key: the counter is named after it.
		"Reply Create": e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: long}}),
	} {
		wantTooLarge(t, err, limit, what+" with a block key of "+strconv.Itoa(len(long))+" bytes")
	}
	_, err := e.Matches.Get(bg, long)
	checkErr(t, err, runtime.ErrNotFound, "Get of a block key over the limit")
	got, err := e.Matches.GetMany(bg, []string{"m", long})
	if checkErr(t, err, nil, "GetMany with a block key over the limit") && (len(got) != 1 || got["m"] == nil) {
		t.Errorf("GetMany with a block key over the limit: got %d blocks, want m only", len(got))
	}
	_, err = e.Matches.ListRounds(bg, long, runtime.PageRequest{})
	checkErr(t, err, runtime.ErrNotFound, "ListRounds of a block key over the limit")
	e.unchanged(t, "writes with a block key over the limit", before)

	// Just under the limit (and under the index limit: non-unique index
	// keys hold the block key).
	under := withID(strings.Repeat("u", underLimit(min(limit, indexLimit(e.h.Caps)), e.h.Caps.MaxKeyBytes > 0)))
	under.Code = "code-u"
	must(t, e.Matches.Create(bg, under))
	e.wantSame(t, "a block key just under the limit", e.getMatch(t, under.ID), under)
	must(t, e.Matches.SetRegion(bg, under.ID, "south"))
	eqStrings(t, "ListByRegionLevel of the block key under the limit", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("south")}), under.ID)
	must(t, e.Matches.Delete(bg, under.ID))
}

// testLookupValueTooLarge: a lookup value (unique, part of a composite,
// element of a slice, in a partition's element) over the index key limit
// is refused by every write, found by no read; one just under it works.
func testLookupValueTooLarge(t *testing.T, e *env) {
	limit := indexLimit(e.h.Caps)
	skipLimit(t, e, "index key", limit)
	e.createMatch(t, "m", 1)
	before := e.snapshot(t)

	long := strings.Repeat("v", limit)
	with := func(f func(m *model.Match)) *model.Match {
		m := newMatch("x", 1)
		f(m)
		return m
	}
	_, appendErr := e.Matches.AppendRounds(bg, "m", model.Round{Serial: long})
	for what, err := range map[string]error{
		"Create with a unique value":      e.Matches.Create(bg, with(func(m *model.Match) { m.Code = long })),
		"Create with a composite part":    e.Matches.Create(bg, with(func(m *model.Match) { m.Region = long })),
		"Create with a slice element":     e.Matches.Create(bg, with(func(m *model.Match) { m.Tags = []string{"a", long} })),
		"Create with a nested value":      e.Matches.Create(bg, with(func(m *model.Match) { m.Venue.City = long })),
		"SetCode":                         e.Matches.SetCode(bg, "m", long),
		"SetTags":                         e.Matches.SetTags(bg, "m", []string{long}),
		"Update of a composite part":      e.Matches.Update(bg, "m", model.MatchUpdate{Region: ptr(long)}),
		"AppendRounds of a unique serial": appendErr,
	} {
		wantTooLarge(t, err, limit, what+" of "+strconv.Itoa(len(long))+" bytes", e.h.Caps.MaxValueBytes)
	}
	_, err := e.Matches.GetByCode(bg, long)
	checkErr(t, err, runtime.ErrNotFound, "GetByCode of a value over the limit")
	eqStrings(t, "ListByTags of a value over the limit", e.byTag(t, long))
	eqStrings(t, "ListByRegionLevel of a value over the limit", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq(long)}))
	e.unchanged(t, "writes with a lookup value over the limit", before)

	// Just under the limit: the unique value alone, the composite's first
	// part followed by the level and the block key.
	n := underLimit(limit, e.h.Caps.MaxIndexKeyBytes > 0)
	u := with(func(m *model.Match) {
		m.ID = "u"
		m.Code = strings.Repeat("c", n)
		m.Region = strings.Repeat("r", n)
	})
	must(t, e.Matches.Create(bg, u))
	eqStrings(t, "GetByCode of a value just under the limit", e.byCode(t, u.Code), "u")
	eqStrings(t, "ListByRegionLevel of a value just under the limit", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq(u.Region)}), "u")
	e.lookupsClean(t, "values just under the limit")

	// Index keys of exactly the limit (a tag's tag and terminator, then
	// the block key "a1" or "a2", 4 bytes), read a page at a time: the
	// next page starts just after a key of the limit's length (where the
	// value holding such a tag fits the value limit).
	if c := e.h.Caps; c.MaxIndexKeyBytes > 0 && (c.MaxValueBytes == 0 || c.MaxValueBytes > limit+1024) {
		tag := strings.Repeat("t", limit-2-4)
		for _, id := range []string{"a1", "a2", "a3"} {
			m := newMatch(id, 0)
			m.Tags = []string{tag}
			must(t, e.Matches.Create(bg, m))
		}
		got := matchIDs(collect(t, 1, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByTags(bg, tag, req)
		}))
		eqStrings(t, "ListByTags of index keys of the limit's length, a page at a time", got, "a1", "a2", "a3")
	}
}

// testValueTooLarge: a value over the value limit (a block, an entry, an
// element) is refused by every write; one just under it works.
func testValueTooLarge(t *testing.T, e *env) {
	limit := e.h.Caps.MaxValueBytes
	skipLimit(t, e, "value", limit)
	e.createMatch(t, "m", 1)
	must(t, e.Cards.Create(bg, &model.Card{ID: 1, Title: "c"}))
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	before := e.snapshot(t)

	big := strings.Repeat("b", limit)
	_, appendErr := e.Journals.AppendLines(bg, j.ID, model.Line{Kind: "k", Text: big})
	for what, err := range map[string]error{
		"Card Create":          e.Cards.Create(bg, &model.Card{ID: 2, Title: big}),
		"Card Put":             e.Cards.Put(bg, &model.Card{ID: 1, Title: big}),
		"Journal AppendLines":  appendErr,
		"Match SetRoundsAt":    e.Matches.SetRoundsAt(bg, "m", 0, model.Round{Serial: "m/r0", Moves: []string{big}}),
		"Match Update of Meta": e.Matches.Update(bg, "m", model.MatchUpdate{Venue: &model.Venue{Doors: []string{big}}}),
		"Reply Create":         e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}, Body: big}),
	} {
		wantTooLarge(t, err, limit, what+" with a value of "+strconv.Itoa(len(big))+" bytes")
	}
	e.unchanged(t, "writes with a value over the limit", before)
	// The refused Reply took no number from the counter.
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}}
	must(t, e.Replies.Create(bg, r))
	if r.Key.Seq != 1 {
		t.Errorf("the first reply of thread t after a refused Create got number %d, want 1", r.Key.Seq)
	}
	// Nor did a refused lookup value.
	if limit := indexLimit(e.h.Caps); limit <= maxAlloc {
		err := e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: strings.Repeat("a", limit)})
		wantTooLarge(t, err, limit, "Reply Create with an author over the index key limit", e.h.Caps.MaxValueBytes)
		r := &model.Reply{Key: model.ReplyKey{Thread: "t"}}
		must(t, e.Replies.Create(bg, r))
		if r.Key.Seq != 2 {
			t.Errorf("the second reply of thread t after a refused Create got number %d, want 2", r.Key.Seq)
		}
	}

	c := &model.Card{ID: 3, Title: strings.Repeat("b", limit-1024)}
	must(t, e.Cards.Create(bg, c))
	got, err := e.Cards.Get(bg, 3)
	must(t, err)
	if got.Title != c.Title {
		t.Fatalf("a value just under the limit came back with %d bytes, want %d", len(got.Title), len(c.Title))
	}
}
