package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// Counts (Count, CountByF): a count is the number of aggregates the
// matching listing returns over all its pages, whether the store counts
// natively (runtime.CountStore) or the repository counts through the
// listing's reads. Each check below compares a count with the listing it
// stands for, on the model's unique, multi-valued, nested, partition and
// composite lookups, after writes that move values; and a store whose
// lookups are atomic with their blocks must count natively.

var countTests = []subtest{
	{name: "Counts", fn: testCounts},
	{name: "CountsStaleEntry", fn: testCountsStale},
	{name: "CountsNativeOrListing", fn: testCountsNative},
	{name: "CountsBeforeEnsureIndexes", startUp: true, fn: testCountsStartUp},
}

type regionQ = model.MatchRegionLevelQuery

// countQueries are the composite queries every check counts.
var countQueries = []struct {
	what string
	q    regionQ
}{
	{"north:4", regionQ{Region: runtime.Eq("north"), Level: runtime.Eq(4)}},
	{"north (a prefix)", regionQ{Region: runtime.Eq("north")}},
	{"north, level >= 3", regionQ{Region: runtime.Eq("north"), Level: runtime.Gte(3)}},
	{"north, level > 3", regionQ{Region: runtime.Eq("north"), Level: runtime.Gt(3)}},
	{"north, level < 4", regionQ{Region: runtime.Eq("north"), Level: runtime.Lt(4)}},
	{"north, level <= 3", regionQ{Region: runtime.Eq("north"), Level: runtime.Lte(3)}},
	{"north, 3 <= level < 5", regionQ{Region: runtime.Eq("north"), Level: runtime.Between(3, 5)}},
	{"north, negative levels", regionQ{Region: runtime.Eq("north"), Level: runtime.Lt(0)}},
	{"regions from n to t", regionQ{Region: runtime.Between("n", "t")}},
	{"regions >= south", regionQ{Region: runtime.Gte("south")}},
	{"regions < north (none)", regionQ{Region: runtime.Lt("north")}},
	{"nort (no prefix match)", regionQ{Region: runtime.Eq("nort")}},
	{"everything", regionQ{}},
}

// wantCount fails t unless count returns n without error.
func wantCount(t *testing.T, what string, n int, count func() (int64, error)) {
	t.Helper()
	got, err := count()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != int64(n) {
		t.Fatalf("%s: %d, want %d (as many as the listing returns)", what, got, n)
	}
}

// countsAgree checks every count of the model against its listing.
func (e *env) countsAgree(t *testing.T, when string) {
	t.Helper()
	ms := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) { return e.Matches.List(bg, req) })
	wantCount(t, when+": Count of matches", len(ms), func() (int64, error) { return e.Matches.Count(bg) })
	for _, v := range []string{"code-a", "code-b", "code-z", ""} {
		wantCount(t, fmt.Sprintf("%s: CountByCode %q", when, v), len(e.byCode(t, v)), func() (int64, error) { return e.Matches.CountByCode(bg, v) })
	}
	for _, v := range []string{"x", "y", "z", "t1", ""} {
		wantCount(t, fmt.Sprintf("%s: CountByTags %q", when, v), len(e.byTag(t, v)), func() (int64, error) { return e.Matches.CountByTags(bg, v) })
	}
	for _, v := range []string{"Rome", "Oslo", "", "Ro"} {
		wantCount(t, fmt.Sprintf("%s: CountByVenueCity %q", when, v), len(e.byCity(t, v)), func() (int64, error) { return e.Matches.CountByVenueCity(bg, v) })
	}
	for _, v := range []string{"a/r0", "c/r1", "c/r9"} {
		wantCount(t, fmt.Sprintf("%s: CountByRoundsSerial %q", when, v), len(e.bySerial(t, v)), func() (int64, error) { return e.Matches.CountByRoundsSerial(bg, v) })
	}
	for _, c := range countQueries {
		wantCount(t, when+": CountByRegionLevel "+c.what, len(e.byRegion(t, c.q)), func() (int64, error) { return e.Matches.CountByRegionLevel(bg, c.q) })
	}
	js := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) { return e.Journals.List(bg, req) })
	wantCount(t, when+": Count of journals", len(js), func() (int64, error) { return e.Journals.Count(bg) })
	for _, v := range []string{"ann", "bob", "eve"} {
		wantCount(t, fmt.Sprintf("%s: CountByOwner %q", when, v), len(e.journalsBy(t, v, "")), func() (int64, error) { return e.Journals.CountByOwner(bg, v) })
	}
	for _, v := range []string{"k1", "k2", "k3"} {
		wantCount(t, fmt.Sprintf("%s: CountByLinesKind %q", when, v), len(e.journalsBy(t, "", v)), func() (int64, error) { return e.Journals.CountByLinesKind(bg, v) })
	}
	cs := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) { return e.Cards.List(bg, req) })
	wantCount(t, when+": Count of cards", len(cs), func() (int64, error) { return e.Cards.Count(bg) })
	for _, v := range []string{"l", "m", "n"} {
		cs := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) {
			return e.Cards.ListByLabels(bg, v, req)
		})
		wantCount(t, fmt.Sprintf("%s: CountByLabels %q", when, v), len(cs), func() (int64, error) { return e.Cards.CountByLabels(bg, v) })
	}
	rs := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) { return e.Replies.List(bg, req) })
	wantCount(t, when+": Count of replies", len(rs), func() (int64, error) { return e.Replies.Count(bg) })
	for _, v := range []string{"al", "bo"} {
		rs := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByAuthor(bg, v, req)
		})
		wantCount(t, fmt.Sprintf("%s: CountByAuthor %q", when, v), len(rs), func() (int64, error) { return e.Replies.CountByAuthor(bg, v) })
	}
}

// seedCounts stores the matches of seedLookups and a few journals, cards
// and replies.
func (e *env) seedCounts(t *testing.T) {
	t.Helper()
	e.seedLookups(t)
	for _, j := range []*model.Journal{
		{Owner: "ann", Lines: []model.Line{{Kind: "k1"}, {Kind: "k2"}, {Kind: "k2"}}},
		{Owner: "bob", Lines: []model.Line{{Kind: "k2"}}},
		{Owner: "ann"},
	} {
		must(t, e.Journals.Create(bg, j))
	}
	for _, c := range []*model.Card{{ID: 10, Labels: []string{"l"}}, {ID: -10, Labels: []string{"l", "m"}}, {ID: 0}} {
		must(t, e.Cards.Create(bg, c))
	}
	for _, thread := range []string{"t2", "t1", "t2"} {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: thread}, Author: "al"}))
	}
}

func testCounts(t *testing.T, e *env) {
	e.countsAgree(t, "an empty database")
	e.seedCounts(t)
	// The numbers themselves once, so that a count and a listing that
	// both miss everything do not agree by accident.
	for _, c := range []struct {
		what  string
		n     int
		count func() (int64, error)
	}{
		{"Count", 6, func() (int64, error) { return e.Matches.Count(bg) }},
		{"CountByCode code-b", 1, func() (int64, error) { return e.Matches.CountByCode(bg, "code-b") }},
		{"CountByTags x (c holds it twice: counted once)", 2, func() (int64, error) { return e.Matches.CountByTags(bg, "x") }},
		{"CountByTags y", 3, func() (int64, error) { return e.Matches.CountByTags(bg, "y") }},
		{"CountByVenueCity of the zero value", 2, func() (int64, error) { return e.Matches.CountByVenueCity(bg, "") }},
		{"CountByVenueCity of a prefix of a value", 0, func() (int64, error) { return e.Matches.CountByVenueCity(bg, "Ro") }},
		{"CountByRoundsSerial", 1, func() (int64, error) { return e.Matches.CountByRoundsSerial(bg, "c/r1") }},
		{"CountByRegionLevel north", 4, func() (int64, error) { return e.Matches.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("north")}) }},
		{"CountByRegionLevel north, level >= 3", 3, func() (int64, error) {
			return e.Matches.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("north"), Level: runtime.Gte(3)})
		}},
		{"CountByLinesKind k2 (held twice by journal 1)", 2, func() (int64, error) { return e.Journals.CountByLinesKind(bg, "k2") }},
		{"Count of cards", 3, func() (int64, error) { return e.Cards.Count(bg) }},
		{"CountByAuthor", 3, func() (int64, error) { return e.Replies.CountByAuthor(bg, "al") }},
	} {
		wantCount(t, c.what, c.n, c.count)
	}
	e.countsAgree(t, "the seed")

	// Writes that move values, gain and lose them.
	must(t, e.Matches.SetTags(bg, "a", []string{"y", "z"}))
	must(t, e.Matches.SetLevel(bg, "b", -3))
	must(t, e.Matches.Update(bg, "e", model.MatchUpdate{Region: ptr("south"), Code: ptr("code-z")}))
	_, err := e.Matches.AppendRounds(bg, "c", newRound("c", 9))
	must(t, err)
	d := e.getMatch(t, "d")
	d.Venue.City, d.Tags = "Oslo", []string{"x"}
	must(t, e.Matches.Put(bg, d))
	must(t, e.Journals.Update(bg, 2, model.JournalUpdate{Root: &model.Journal{Owner: "eve"}}))
	must(t, e.Journals.SetLinesAt(bg, 1, 1, model.Line{Kind: "k3"}))
	must(t, e.Cards.Put(bg, &model.Card{ID: 10, Labels: []string{"m", "n"}}))
	wantCount(t, "CountByTags z after SetTags", 1, func() (int64, error) { return e.Matches.CountByTags(bg, "z") })
	wantCount(t, "CountByRegionLevel north, level < 0 after SetLevel", 1, func() (int64, error) {
		return e.Matches.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("north"), Level: runtime.Lt(0)})
	})
	e.countsAgree(t, "updates")

	// Deletes, and a block created again.
	must(t, e.Matches.Delete(bg, "c"))
	must(t, e.Matches.Delete(bg, "f"))
	must(t, e.Journals.Delete(bg, 1))
	must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "t2", Seq: 1}))
	wantCount(t, "Count after deletes", 4, func() (int64, error) { return e.Matches.Count(bg) })
	e.countsAgree(t, "deletes")
	must(t, e.Matches.Create(bg, newMatch("c", 1)))
	e.countsAgree(t, "a block created again")

	// Refused queries: as ListBy refuses them.
	for what, bad := range map[string]regionQ{
		"the second part without the first": {Level: runtime.Eq(4)},
		"a condition after a range":         {Region: runtime.Gte("n"), Level: runtime.Eq(4)},
		"two ranges":                        {Region: runtime.Lt("s"), Level: runtime.Lt(4)},
	} {
		_, err := e.Matches.CountByRegionLevel(bg, bad)
		checkErr(t, err, runtime.ErrBadQuery, "CountByRegionLevel with "+what)
	}
	_, err = e.Matches.CountByTags(bg, "\xff")
	checkErr(t, err, runtime.ErrInvalidValue, "CountByTags of a string that is not UTF-8")
	_, err = e.Matches.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("no\xffrth"), Level: runtime.Gte(2)})
	checkErr(t, err, runtime.ErrInvalidValue, "CountByRegionLevel of a string that is not UTF-8")

	// What a hook sees: the method, no error, the requests sent.
	rec := &recorder{store: e.h.Caps.Name}
	hooked := repos.On(t, e.db, runtime.WithHook(rec.hook)).Matches
	for i, c := range []struct {
		op    string
		n     int
		count func() (int64, error)
	}{
		{"Count", 5, func() (int64, error) { return hooked.Count(bg) }},
		{"CountByTags", 2, func() (int64, error) { return hooked.CountByTags(bg, "y") }},
		{"CountByRegionLevel", 4, func() (int64, error) { return hooked.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("north")}) }},
		{"CountByTags", 2, func() (int64, error) { return hooked.CountByTags(bg, "y") }},
	} {
		wantCount(t, c.op+" through a hook", c.n, c.count)
		got := rec.last(t)
		got.check(t, c.op, nil)
		// bbolt counts in one read transaction, once the repository knows
		// its lookups ready (the first CountBy reads the schema record).
		if e.h.Name == "bolt" && i != 1 && got.RoundTrips != 1 {
			t.Errorf("%s on bbolt: %d transactions, want 1 (a cursor over a bucket, no block read)", c.op, got.RoundTrips)
		}
	}
}

// testCountsStale: an index entry whose block does not hold its value (a
// crash of a lookup protocol leaves one until Repair) is not counted, as
// it is not listed. Only a store that keeps a lookup apart from its
// blocks can have one: the entry is written with the store's index
// primitives (runtime/index), behind the repository's back.
func testCountsStale(t *testing.T, e *env) {
	e.seedLookups(t)
	if !e.staleTag(t, "x", "b") || !e.staleTag(t, "x", "gone") || !e.staleTag(t, "w", "b") {
		t.Skipf("%s: the tags lookup is atomic with its blocks (a store with atomic lookups, or a native index): no stale entry to count", e.h.Name)
	}
	// Counted before anything is listed: a listing may remove the stale
	// entries it meets.
	wantCount(t, "CountByTags x with stale entries", 2, func() (int64, error) { return e.Matches.CountByTags(bg, "x") })
	wantCount(t, "CountByTags w with a stale entry", 0, func() (int64, error) { return e.Matches.CountByTags(bg, "w") })
	eqStrings(t, "ListByTags x with stale entries", e.byTag(t, "x"), "a", "c")
	eqStrings(t, "ListByTags w with a stale entry", e.byTag(t, "w"))
	e.countsAgree(t, "stale entries")
	_, err := e.Matches.Repair(bg)
	must(t, err)
	e.countsAgree(t, "Repair")
	wantCount(t, "CountByTags x after Repair", 2, func() (int64, error) { return e.Matches.CountByTags(bg, "x") })
}

// staleTag writes an index entry of tag for the match with key id that
// does not hold it (or does not exist), through the index primitives of
// the store of e.Matches; it reports false where the store has none for
// the tags lookup (lookups atomic with their blocks, or native).
func (e *env) staleTag(t *testing.T, tag, id string) bool {
	t.Helper()
	r, ok := repoOf[model.Match, string](e.Matches)
	if !ok || r.S.Caps().AtomicLookups {
		return false
	}
	ps, ok := r.S.(interface {
		Primitives() index.Primitives[*model.Match]
	})
	if !ok || ps.Primitives() == nil {
		return false
	}
	native, _ := r.S.(interface{ Native(name string) bool })
	l := 0 // the position of tags among the lookups in index tables
	for _, x := range r.D.Lookups {
		if x.Name == "tags" {
			break
		}
		if native == nil || !native.Native(x.Name) {
			l++
		}
	}
	if native != nil && native.Native("tags") {
		return false
	}
	bk := r.D.Keys.Bytes(id)
	key := append(runtime.AppendString(nil, tag), bk...)
	ok, _, err := ps.Primitives().PutItem(bg, l, index.Item{Key: key, Block: bk, Inc: 1, Seq: time.Now().UnixNano()}, index.Cond{Kind: index.Always})
	must(t, err)
	if !ok {
		t.Fatalf("writing a stale entry of tag %q for %s: the condition did not hold", tag, id)
	}
	return true
}

// countSpy forwards a store's counts and records how it answered.
type countSpy[T any, K comparable] struct {
	runtime.Store[T, K]
	cs                 runtime.CountStore[T, K]
	answered, declined []string
}

func (s *countSpy[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	n, ok, err := s.cs.Count(ctx, op, l, rng, now)
	if err == nil && ok {
		s.answered = append(s.answered, op)
	} else if err == nil {
		s.declined = append(s.declined, op)
	}
	return n, ok, err
}

// noCounts hides a store's counts: the repository counts through the
// listing.
type noCounts[T any, K comparable] struct{ runtime.Store[T, K] }

// testCountsNative: a store whose lookups are atomic with their blocks
// counts natively (its index holds exactly what the listing returns), and
// the count through the listing, which a store that declines gets, gives
// the same numbers.
func testCountsNative(t *testing.T, e *env) {
	e.seedLookups(t)
	r, ok := repoOf[model.Match, string](e.Matches)
	if !ok {
		t.Skip("the Match repository does not reveal its runtime.Repo")
	}
	lookup := func(name string) *runtime.Lookup[model.Match] {
		for _, l := range r.D.Lookups {
			if l.Name == name {
				return l
			}
		}
		t.Fatalf("Match has no lookup %s", name)
		return nil
	}
	type count struct {
		op     string
		l      *runtime.Lookup[model.Match]
		prefix []byte
		n      int64
	}
	counts := []count{
		{"Count", nil, nil, 6},
		{"CountByTags", lookup("tags"), runtime.AppendString(nil, "y"), 3},
		{"CountByRegionLevel", lookup("regionLevel"), runtime.AppendString(nil, "north"), 4},
		{"CountByRegionLevel", lookup("regionLevel"), runtime.AppendInt(runtime.AppendString(nil, "north"), 4), 2},
		{"CountByCode", lookup("code"), runtime.AppendString(nil, "code-z"), 0},
	}
	run := func(repo runtime.Repo[model.Match, string], c count) int64 {
		t.Helper()
		var n int64
		var err error
		if c.l == nil {
			n, err = repo.Count(bg)
		} else {
			n, err = repo.CountBy(bg, c.op, c.l, runtime.NewKeyRange(c.prefix))
		}
		must(t, err)
		return n
	}
	cs, native := r.S.(runtime.CountStore[model.Match, string])
	if !native && r.S.Caps().AtomicLookups {
		t.Errorf("%s: the lookups are atomic with their blocks, but the store does not count natively (runtime.CountStore)", e.h.Name)
	}
	if native {
		spy := &countSpy[model.Match, string]{Store: r.S, cs: cs}
		spied := runtime.NewRepo(r.D, runtime.Store[model.Match, string](spy))
		for _, c := range counts {
			if got := run(spied, c); got != c.n {
				t.Errorf("%s %x: %d, want %d", c.op, c.prefix, got, c.n)
			}
		}
		if r.S.Caps().AtomicLookups && r.D.Expires == nil && len(spy.declined) > 0 {
			t.Errorf("%s: the lookups are atomic with their blocks, but the store declined to count %v (answered %v)", e.h.Name, spy.declined, spy.answered)
		}
		t.Logf("%s: counted natively %v, through the listing %v", e.h.Name, spy.answered, spy.declined)
	}
	listing := runtime.NewRepo(r.D, runtime.Store[model.Match, string](noCounts[model.Match, string]{r.S}))
	for _, c := range counts {
		if got := run(listing, c); got != c.n {
			t.Errorf("%s %x through the listing: %d, want %d", c.op, c.prefix, got, c.n)
		}
	}
	if _, ok := any(noCounts[model.Match, string]{r.S}).(runtime.CountStore[model.Match, string]); ok {
		t.Fatal("noCounts counts natively")
	}
}

// testCountsStartUp: before EnsureIndexes a count works, or fails with
// ErrNotReady exactly where the listing does.
func testCountsStartUp(t *testing.T, e *env) {
	_, listErr := e.Matches.ListByTags(bg, "x", runtime.PageRequest{Limit: 5})
	n, err := e.Matches.CountByTags(bg, "x")
	if errors.Is(listErr, runtime.ErrNotReady) != errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("before EnsureIndexes: ListByTags fails with %v, CountByTags with %v: a count must be refused where its listing is", listErr, err)
	}
	if err == nil && n != 0 {
		t.Fatalf("CountByTags of an empty collection: %d", n)
	}
	if err != nil && !notReadyOr(t, "CountByTags", err) {
		return
	}
	_, listErr = e.Matches.ListByRegionLevel(bg, regionQ{Region: runtime.Eq("north")}, runtime.PageRequest{Limit: 5})
	_, err = e.Matches.CountByRegionLevel(bg, regionQ{Region: runtime.Eq("north")})
	if errors.Is(listErr, runtime.ErrNotReady) != errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("before EnsureIndexes: ListByRegionLevel fails with %v, CountByRegionLevel with %v", listErr, err)
	}
	_, err = e.Matches.Count(bg)
	notReadyOr(t, "Count", err)
	e.ensure(t)
	must(t, e.Matches.Create(bg, &model.Match{ID: "s1", Code: "start", Tags: []string{"x"}}))
	wantCount(t, "CountByTags after EnsureIndexes", 1, func() (int64, error) { return e.Matches.CountByTags(bg, "x") })
	wantCount(t, "Count after EnsureIndexes", 1, func() (int64, error) { return e.Matches.Count(bg) })
}
