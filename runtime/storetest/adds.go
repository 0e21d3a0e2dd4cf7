package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/tally"
	"github.com/noamgen/noamgen/runtime/storetest/tally/old"
)

// The Add subtests: fields that writes add to (noam:"add"), on the
// tally model. Every store compiles the add change (runtime.AddTo) to its
// own atomic increment; these check what the generated AddF and
// TUpdate.AddF document.
var addTests = []subtest{
	{name: "AddReturnsTheNewValue", fn: testAdd},
	{name: "AddOutOfRange", fn: testAddOutOfRange},
	{name: "AddToAnOldBlock", fn: testAddOldBlock},
	{name: "AddInUpdate", fn: testAddInUpdate},
	{name: "AddOnMissingBlock", fn: testAddMissing},
	{name: "ConcurrentAdds", fn: testConcurrentAdds, concurrent: true},
}

// tallyRepos are the repositories of the tally model.
type tallyRepos struct {
	tallies tally.TallyRepository
	counts  tally.CountRepository
	old     old.TallyRepository
}

// tallyModel makes the repositories of the tally model.
var tallyModel = Opener[tallyRepos](func(h any, o ...runtime.Option) (tallyRepos, error) {
	var err error
	r := tallyRepos{Make(&err, tally.NewTallyRepository, h, o), Make(&err, tally.NewCountRepository, h, o), Make(&err, old.NewTallyRepository, h, o)}
	return r, err
})

// tallies opens the tally model over the subtest's database, with clock
// c (nil: the system's) and opts, its indexes ensured.
func tallies(t *testing.T, e *env, c *testClock, opts ...runtime.Option) tallyRepos {
	t.Helper()
	if c != nil {
		opts = append(opts, runtime.WithClock(c.Now))
	}
	r := tallyModel.On(t, e.db, opts...)
	must(t, r.tallies.EnsureIndexes(bg))
	must(t, r.counts.EnsureIndexes(bg))
	return r
}

func getTally(t *testing.T, r tallyRepos, id string) *tally.Tally {
	t.Helper()
	got, err := r.tallies.Get(bg, id)
	must(t, err)
	return got
}

type addStep struct {
	op   string
	add  func() (int64, error)
	want int64
	set  func(*tally.Tally, int64)
}

// testAdd: AddF returns the new value, subtracts with a negative delta,
// bumps the version, stamps updated, and writes nothing else; the hooks
// see it as one call of its own name, writing the field, the timestamp
// and the version.
func testAdd(t *testing.T, e *env) {
	c := &testClock{}
	created := c.set(0)
	var calls []*runtime.Call
	hook := func(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
		calls = append(calls, call)
		return next(ctx)
	}
	r := tallies(t, e, c, runtime.WithHook(hook))
	want := &tally.Tally{ID: "t", Name: "n", Hits: 5, Small: -3, Mid: 7, Plain: 9}
	must(t, r.tallies.Create(bg, want))
	must(t, r.tallies.Create(bg, &tally.Tally{ID: "other", Name: "o", Hits: 100}))
	stamp := c.set(1)
	for _, step := range []addStep{
		{"AddHits", func() (int64, error) { return r.tallies.AddHits(bg, "t", 3) }, 8, func(x *tally.Tally, v int64) { x.Hits = v }},
		{"AddHits", func() (int64, error) { return r.tallies.AddHits(bg, "t", -10) }, -2, func(x *tally.Tally, v int64) { x.Hits = v }},
		{"AddSmall", func() (int64, error) { return r.tallies.AddSmall(bg, "t", -5) }, -8, func(x *tally.Tally, v int64) { x.Small = int8(v) }},
		{"AddMid", func() (int64, error) { return r.tallies.AddMid(bg, "t", 0) }, 7, func(x *tally.Tally, v int64) { x.Mid = int32(v) }},
		{"AddPlain", func() (int64, error) { return r.tallies.AddPlain(bg, "t", 1<<40) }, 1<<40 + 9, func(x *tally.Tally, v int64) { x.Plain = int(v) }},
	} {
		calls = nil
		got, err := step.add()
		must(t, err)
		added := calls
		if got != step.want {
			t.Errorf("%s returned %d, want %d", step.op, got, step.want)
		}
		step.set(want, step.want)
		want.Version++
		want.Touched = stamp
		e.wantSame(t, "the tally after "+step.op, getTally(t, r, "t"), want)
		switch {
		case len(added) != 1 || added[0].Op != step.op:
			t.Errorf("%s: the hooks saw %d calls, want one named so", step.op, len(added))
		case !slices.Contains(added[0].Entries, "touched") || !slices.Contains(added[0].Entries, "version"):
			t.Errorf("%s: the call's entries %v lack the updated and version entries", step.op, added[0].Entries)
		}
	}
	e.wantSame(t, "the other tally", getTally(t, r, "other"), &tally.Tally{ID: "other", Name: "o", Hits: 100, Version: 1, Touched: created})
	// Without a version or a timestamp.
	must(t, r.counts.Create(bg, &tally.Count{ID: "c", N: 1}))
	if n, err := r.counts.AddN(bg, "c", 41); err != nil || n != 42 {
		t.Errorf("Count AddN(41) = %d, %v; want 42", n, err)
	}
	got, err := r.counts.Get(bg, "c")
	must(t, err)
	e.wantSame(t, "the count after AddN", got, &tally.Count{ID: "c", N: 42})
}

// testAddOutOfRange: a sum past the range of the field's Go type fails
// with ErrOutOfRange and writes nothing (read back: the value, the
// version and the timestamp are as they were), at both ends of each
// width; a sum back inside the range from a delta wider than the type
// succeeds.
func testAddOutOfRange(t *testing.T, e *env) {
	c := &testClock{}
	c.set(0)
	r := tallies(t, e, c)
	must(t, r.tallies.Create(bg, &tally.Tally{ID: "t", Small: 127, Mid: math.MinInt32, Hits: math.MaxInt64 - 1, Plain: math.MinInt}))
	c.set(1)
	for _, x := range []struct {
		what string
		add  func() (int64, error)
	}{
		{"AddSmall(1) at 127", func() (int64, error) { return r.tallies.AddSmall(bg, "t", 1) }},
		{"AddSmall(-256) at 127", func() (int64, error) { return r.tallies.AddSmall(bg, "t", -256) }},
		{"AddSmall(1<<40) at 127", func() (int64, error) { return r.tallies.AddSmall(bg, "t", 1<<40) }},
		{"AddMid(-1) at MinInt32", func() (int64, error) { return r.tallies.AddMid(bg, "t", -1) }},
		{"AddMid(MaxInt64) at MinInt32", func() (int64, error) { return r.tallies.AddMid(bg, "t", math.MaxInt64) }},
		{"AddHits(2) at MaxInt64-1", func() (int64, error) { return r.tallies.AddHits(bg, "t", 2) }},
		{"AddHits(MaxInt64) at MaxInt64-1", func() (int64, error) { return r.tallies.AddHits(bg, "t", math.MaxInt64) }},
		{"AddPlain(-1) at MinInt", func() (int64, error) { return r.tallies.AddPlain(bg, "t", -1) }},
		{"AddPlain(MinInt64) at MinInt", func() (int64, error) { return r.tallies.AddPlain(bg, "t", math.MinInt64) }},
	} {
		before := getTally(t, r, "t")
		v, err := x.add()
		checkErr(t, err, runtime.ErrOutOfRange, x.what)
		if v != 0 {
			t.Errorf("%s returned %d with its error, want 0", x.what, v)
		}
		e.wantSame(t, "the tally after "+x.what, getTally(t, r, "t"), before)
	}
	// At the edges, and back from a delta wider than the type.
	for _, x := range []struct {
		what string
		add  func() (int64, error)
		want int64
	}{
		{"AddHits(1) to MaxInt64", func() (int64, error) { return r.tallies.AddHits(bg, "t", 1) }, math.MaxInt64},
		{"AddHits(MinInt64) to -1", func() (int64, error) { return r.tallies.AddHits(bg, "t", math.MinInt64) }, -1},
		{"AddSmall(-255) to -128", func() (int64, error) { return r.tallies.AddSmall(bg, "t", -255) }, -128},
		{"AddSmall(255) back to 127", func() (int64, error) { return r.tallies.AddSmall(bg, "t", 255) }, 127},
		{"AddMid(MaxUint32) to MaxInt32", func() (int64, error) { return r.tallies.AddMid(bg, "t", math.MaxUint32) }, math.MaxInt32},
		{"AddPlain(MaxInt64) to -1", func() (int64, error) { return r.tallies.AddPlain(bg, "t", math.MaxInt64) }, -1},
	} {
		v, err := x.add()
		if err != nil || v != x.want {
			t.Errorf("%s = %d, %v; want %d", x.what, v, err, x.want)
		}
	}
	e.wantSame(t, "the tally at the edges", getTally(t, r, "t"),
		&tally.Tally{ID: "t", Small: 127, Mid: math.MaxInt32, Hits: -1, Plain: -1, Version: 7, Touched: c.set(1)})
}

// testAddOldBlock: a block written before the model had the add fields
// (no entry for them) adds to 0.
func testAddOldBlock(t *testing.T, e *env) {
	r := tallies(t, e, nil)
	must(t, r.old.EnsureIndexes(bg))
	must(t, r.old.Create(bg, &old.Tally{ID: "t", Name: "n"}))
	if v, err := r.tallies.AddHits(bg, "t", 4); err != nil || v != 4 {
		t.Errorf("AddHits(4) of an old block = %d, %v; want 4", v, err)
	}
	if v, err := r.tallies.AddSmall(bg, "t", -3); err != nil || v != -3 {
		t.Errorf("AddSmall(-3) of an old block = %d, %v; want -3", v, err)
	}
	_, err := r.tallies.AddMid(bg, "t", math.MaxInt32+1)
	checkErr(t, err, runtime.ErrOutOfRange, "AddMid(MaxInt32+1) of an old block")
	got := getTally(t, r, "t")
	if got.Hits != 4 || got.Small != -3 || got.Mid != 0 || got.Plain != 0 || got.Version != 3 || got.Name != "n" {
		t.Errorf("the old block after two additions: %+v, want hits 4, small -3, version 3", got)
	}
	o, err := r.old.Get(bg, "t")
	must(t, err)
	if o.Version != 3 || o.Name != "n" {
		t.Errorf("the old model reads %+v after the additions, want version 3", o)
	}
}

// testAddInUpdate: TUpdate.AddF goes with other changes in one atomic
// write; one out of range fails the whole update, which writes nothing.
func testAddInUpdate(t *testing.T, e *env) {
	r := tallies(t, e, nil)
	must(t, r.tallies.Create(bg, &tally.Tally{ID: "t", Name: "n", Hits: 1, Small: 100}))
	must(t, r.tallies.Update(bg, "t", tally.TallyUpdate{Name: runtime.Ptr("m"), AddHits: 10, AddSmall: -1, IfVersion: 1}))
	got := getTally(t, r, "t")
	if got.Name != "m" || got.Hits != 11 || got.Small != 99 || got.Version != 2 {
		t.Errorf("after Update{Name, AddHits, AddSmall}: %+v, want name m, hits 11, small 99, version 2", got)
	}
	page, err := r.tallies.ListByName(bg, "m", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].Hits != 11 {
		t.Errorf("ListByName(m) after the Update: %+v", page.Items)
	}
	before := getTally(t, r, "t")
	err = r.tallies.Update(bg, "t", tally.TallyUpdate{Name: runtime.Ptr("x"), AddHits: 1, AddSmall: 29})
	checkErr(t, err, runtime.ErrOutOfRange, "an Update whose AddSmall leaves int8")
	e.wantSame(t, "the tally after a refused Update", getTally(t, r, "t"), before)
	checkErr(t, r.tallies.Update(bg, "t", tally.TallyUpdate{AddHits: 1, IfVersion: 1}), runtime.ErrConflict, "an Update AddHits with a stale IfVersion")
	checkErr(t, r.tallies.Update(bg, "t", tally.TallyUpdate{Hits: runtime.Ptr(int64(3)), AddHits: 1}), runtime.ErrInvalid, "an Update that both sets and adds to hits")
	e.wantSame(t, "the tally after refused Updates", getTally(t, r, "t"), before)
}

// testAddMissing: AddF of a missing block fails with ErrNotFound and
// writes nothing (no block appears).
func testAddMissing(t *testing.T, e *env) {
	r := tallies(t, e, nil)
	_, err := r.tallies.AddHits(bg, "none", 1)
	checkErr(t, err, runtime.ErrNotFound, "AddHits of a missing tally")
	_, err = r.counts.AddN(bg, "none", -1)
	checkErr(t, err, runtime.ErrNotFound, "AddN of a missing count")
	err = r.tallies.Update(bg, "none", tally.TallyUpdate{AddMid: 1})
	checkErr(t, err, runtime.ErrNotFound, "Update AddMid of a missing tally")
	if _, err := r.tallies.Get(bg, "none"); !checkErr(t, err, runtime.ErrNotFound, "Get after the additions to a missing tally") {
		return
	}
	if _, err := r.counts.Get(bg, "none"); !checkErr(t, err, runtime.ErrNotFound, "Get after the addition to a missing count") {
		return
	}
	if n, err := r.tallies.Count(bg); err != nil || n != 0 {
		t.Errorf("Count after additions to a missing tally = %d, %v; want 0", n, err)
	}
}

// testConcurrentAdds: 16 writers adding at once, each its own deltas,
// lose none: the final value and the version are exact, and every value
// returned is distinct (each addition saw the ones before it).
func testConcurrentAdds(t *testing.T, e *env) {
	r := tallies(t, e, nil)
	must(t, r.tallies.Create(bg, &tally.Tally{ID: "t"}))
	const writers, each = 16, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				d := int64(1)
				if (w+i)%3 == 0 {
					d = 2
				}
				v, err := r.tallies.AddHits(bg, "t", d)
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				if seen[v] {
					errs <- fmt.Errorf("two concurrent additions returned the same new value %d", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var want int64
	for w := range writers {
		for i := range each {
			if (w+i)%3 == 0 {
				want += 2
			} else {
				want++
			}
		}
	}
	got := getTally(t, r, "t")
	if got.Hits != want || got.Version != 1+writers*each {
		t.Errorf("after %d concurrent additions: hits %d, version %d; want %d, %d", writers*each, got.Hits, got.Version, want, 1+writers*each)
	}
}
