package index_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/indextest"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

type Doc = indextest.Doc

// fixture is an adapter over memindex: the engine plus the block commands
// a store supplies (Insert, Replace, Remove).
type fixture struct {
	s *memindex.Store[Doc]
	e *index.Engine[Doc]
}

func newFixture(stale time.Duration) *fixture {
	s := memindex.New[Doc](2)
	e := &index.Engine[Doc]{
		Agg: "Doc", Lookups: indextest.Lookups(), P: s,
		StaleAfter:  func() time.Duration { return stale },
		RepairBatch: 2, // pages of two: Repair's paging is exercised
		Batch:       index.Limits{Keys: 2},
	}
	return &fixture{s: s, e: e}
}

func key(id string) []byte { return runtime.AppendString(nil, id) }

func (f *fixture) read(ctx context.Context, id string) (index.Block[Doc], bool, error) {
	bs, err := f.s.ReadBlocks(ctx, [][]byte{key(id)})
	if err != nil || len(bs) == 0 {
		return index.Block[Doc]{}, false, err
	}
	return bs[0], true, nil
}

func (f *fixture) create(ctx context.Context, d Doc) error {
	done, err := f.e.Commit(ctx, "Create", d.ID, d.Key(), index.NewInc(), nil, f.e.Keys(d.Key(), d), index.NextSeq(0), true,
		func(ctx context.Context, st index.Stamp) (bool, error) { return f.s.Insert(ctx, d.Key(), st, d) })
	if err == nil && !done {
		return runtime.Fail("Create", "Doc", d.ID, runtime.ErrDuplicate, nil)
	}
	return err
}

func (f *fixture) put(ctx context.Context, d Doc) error {
	return f.e.Run(ctx, "Put", d.ID, d.Key(), func() (index.Attempt, error) {
		b, found, err := f.read(ctx, d.ID)
		if err != nil {
			return index.Attempt{}, runtime.Fail("Put", "Doc", d.ID, nil, err)
		}
		a := index.Attempt{Found: found, Stamp: b.Stamp, After: f.e.Keys(d.Key(), d)}
		if found {
			a.Before = f.e.Keys(d.Key(), b.Value)
		}
		a.Write = func(ctx context.Context, st index.Stamp) (bool, error) {
			if !found {
				return f.s.Insert(ctx, d.Key(), st, d)
			}
			return f.s.Replace(ctx, d.Key(), b.Stamp, st, d)
		}
		return a, nil
	})
}

func (f *fixture) change(ctx context.Context, id string, apply func(*Doc)) error {
	return f.e.Run(ctx, "Change", id, key(id), func() (index.Attempt, error) {
		b, found, err := f.read(ctx, id)
		if err != nil {
			return index.Attempt{}, runtime.Fail("Change", "Doc", id, nil, err)
		}
		if !found {
			return index.Attempt{}, runtime.Fail("Change", "Doc", id, runtime.ErrNotFound, nil)
		}
		d := b.Value
		d.Tags = slices.Clone(d.Tags)
		apply(&d)
		return index.Attempt{Found: true, Stamp: b.Stamp, Before: f.e.Keys(key(id), b.Value), After: f.e.Keys(key(id), d),
			Write: func(ctx context.Context, st index.Stamp) (bool, error) {
				return f.s.Replace(ctx, key(id), b.Stamp, st, d)
			}}, nil
	})
}

func (f *fixture) delete(ctx context.Context, id string) error {
	b, found, err := f.s.Remove(ctx, key(id))
	if err != nil {
		if f.s.Ambiguous(err) {
			return runtime.Fail("Delete", "Doc", id, runtime.ErrUnknownOutcome, err)
		}
		return runtime.Fail("Delete", "Doc", id, nil, err)
	}
	if !found {
		return runtime.Fail("Delete", "Doc", id, runtime.ErrNotFound, nil)
	}
	return f.e.Deleted(ctx, "Delete", id, key(id), b.Stamp.Inc, f.e.Keys(key(id), b.Value))
}

var (
	codes = []string{"c1", "c2", "c3", "c4", "c5", "c9"}
	tags  = []string{"red", "blue", "green", "yellow", "pink"}
)

// setup writes the starting state: d1 and d2, and a stale claim of c9 for
// d2, which does not hold it (a crashed write's).
func (f *fixture) setup(t *testing.T) {
	ctx := context.Background()
	for _, d := range []Doc{{ID: "d1", Code: "c1", Tags: []string{"red", "blue"}}, {ID: "d2", Code: "c2", Tags: []string{"blue"}}} {
		if err := f.create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	f.s.SetItem(0, index.Item{Key: key("c9"), Block: key("d2"), Inc: 1, Seq: 1, W: 42})
}

type op struct {
	name string
	run  func(ctx context.Context, f *fixture) error
	fail error // the kind of its definite failure, nil if it succeeds
}

func ops() []op {
	return []op{
		{"Create", func(ctx context.Context, f *fixture) error {
			return f.create(ctx, Doc{ID: "d3", Code: "c3", Tags: []string{"red", "green"}})
		}, nil},
		{"CreateTakeover", func(ctx context.Context, f *fixture) error {
			return f.create(ctx, Doc{ID: "d3", Code: "c9", Tags: []string{"green"}})
		}, nil},
		{"CreateDuplicateValue", func(ctx context.Context, f *fixture) error {
			return f.create(ctx, Doc{ID: "d3", Code: "c1"})
		}, runtime.ErrDuplicate},
		{"CreateDuplicateBlock", func(ctx context.Context, f *fixture) error {
			return f.create(ctx, Doc{ID: "d1", Code: "c4", Tags: []string{"pink"}})
		}, runtime.ErrDuplicate},
		{"PutReplace", func(ctx context.Context, f *fixture) error {
			return f.put(ctx, Doc{ID: "d1", Code: "c4", Tags: []string{"green", "blue"}})
		}, nil},
		{"PutInsert", func(ctx context.Context, f *fixture) error {
			return f.put(ctx, Doc{ID: "d3", Code: "c5", Tags: []string{"yellow"}})
		}, nil},
		{"PutTakeover", func(ctx context.Context, f *fixture) error {
			return f.put(ctx, Doc{ID: "d1", Code: "c9", Tags: []string{"red"}})
		}, nil},
		{"PutDuplicate", func(ctx context.Context, f *fixture) error {
			return f.put(ctx, Doc{ID: "d2", Code: "c1", Tags: []string{"pink"}})
		}, runtime.ErrDuplicate},
		{"Change", func(ctx context.Context, f *fixture) error {
			return f.change(ctx, "d1", func(d *Doc) { d.Code, d.Tags = "c5", []string{"blue", "yellow"} })
		}, nil},
		{"ChangeOwnStaleClaim", func(ctx context.Context, f *fixture) error {
			return f.change(ctx, "d2", func(d *Doc) { d.Code = "c9" })
		}, nil},
		{"ChangeClearCode", func(ctx context.Context, f *fixture) error {
			return f.change(ctx, "d1", func(d *Doc) { d.Code = "" })
		}, nil},
		{"Append", func(ctx context.Context, f *fixture) error {
			return f.change(ctx, "d2", func(d *Doc) { d.Tags = append(d.Tags, "pink") })
		}, nil},
		{"ChangeMissing", func(ctx context.Context, f *fixture) error {
			return f.change(ctx, "d7", func(d *Doc) { d.Code = "c3" })
		}, runtime.ErrNotFound},
		{"Delete", func(ctx context.Context, f *fixture) error { return f.delete(ctx, "d1") }, nil},
	}
}

// state is what the blocks hold, by id (stamps aside).
func state(s *memindex.Store[Doc]) map[string]string {
	out := map[string]string{}
	for _, b := range s.Blocks() {
		out[b.Value.ID] = fmt.Sprintf("%s %v", b.Value.Code, b.Value.Tags)
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkReads checks that no lookup read returns a block that does not
// hold the value, and (found) that every block is found by each of its
// values. It returns what is wrong.
func checkReads(ctx context.Context, f *fixture, found bool) []string {
	var bad []string
	for _, c := range codes {
		d, err := f.e.Get(ctx, "GetBy", 0, key(c))
		switch {
		case errors.Is(err, runtime.ErrNotFound):
		case err != nil:
			bad = append(bad, fmt.Sprintf("Get %s: %v", c, err))
		case d.Code != c:
			bad = append(bad, fmt.Sprintf("Get %s returned %s holding %q", c, d.ID, d.Code))
		}
	}
	for _, tag := range tags {
		r := &runtime.KeyRange{From: key(tag), To: runtime.TupleEnd(key(tag))}
		ds, _, _, err := f.e.Range(ctx, "ListBy", 1, r, 100, false)
		if err != nil {
			bad = append(bad, fmt.Sprintf("Range %s: %v", tag, err))
			continue
		}
		for _, d := range ds {
			if !slices.Contains(d.Tags, tag) {
				bad = append(bad, fmt.Sprintf("Range %s returned %s holding %v", tag, d.ID, d.Tags))
			}
		}
	}
	if !found {
		return bad
	}
	for _, b := range f.s.Blocks() {
		d := b.Value
		if d.Code != "" {
			got, err := f.e.Get(ctx, "GetBy", 0, key(d.Code))
			if err != nil || got.ID != d.ID {
				bad = append(bad, fmt.Sprintf("%s is not found by code %s: %v %v", d.ID, d.Code, got.ID, err))
			}
		}
		for _, tag := range d.Tags {
			r := &runtime.KeyRange{From: key(tag), To: runtime.TupleEnd(key(tag))}
			ds, _, _, err := f.e.Range(ctx, "ListBy", 1, r, 100, false)
			if err != nil || !slices.ContainsFunc(ds, func(x Doc) bool { return x.ID == d.ID }) {
				bad = append(bad, fmt.Sprintf("%s is not found by tag %s: %v", d.ID, tag, err))
			}
		}
	}
	return bad
}

// checkClaimable checks that every code no block holds can be claimed
// at once (by a block created and deleted again).
func checkClaimable(f *fixture) []string {
	ctx := context.Background()
	held := map[string]bool{}
	for _, b := range f.s.Blocks() {
		held[b.Value.Code] = true
	}
	var bad []string
	for _, c := range codes {
		if held[c] {
			continue
		}
		if err := f.create(ctx, Doc{ID: "dz", Code: c}); err != nil {
			bad = append(bad, fmt.Sprintf("code %s, held by no block, cannot be claimed: %v", c, err))
			continue
		}
		if err := f.delete(ctx, "dz"); err != nil {
			bad = append(bad, fmt.Sprintf("deleting dz: %v", err))
		}
	}
	return bad
}

// checkIndex checks that the index tables are exactly what the blocks
// imply.
func checkIndex(f *fixture) []string {
	var bad []string
	for l, lk := range f.e.Lookups {
		want := map[string]index.Item{}
		for _, b := range f.s.Blocks() {
			for _, k := range index.LookupKeys(lk.Unique, lk.Values(b.Value), b.Key) {
				want[string(k)] = index.Item{Block: b.Key, Inc: b.Stamp.Inc}
			}
		}
		items := f.s.Items(l)
		for _, it := range items {
			w, ok := want[string(it.Key)]
			if !ok || !bytes.Equal(w.Block, it.Block) || w.Inc != it.Inc {
				bad = append(bad, fmt.Sprintf("%s: item %s -> %s inc %d is not implied by the blocks", lk.Name, runtime.FormatKey(it.Key), runtime.FormatKey(it.Block), it.Inc))
			}
			delete(want, string(it.Key))
		}
		for k := range want {
			bad = append(bad, fmt.Sprintf("%s: item %s missing", lk.Name, runtime.FormatKey([]byte(k))))
		}
	}
	return bad
}

// writeDone reports whether err says the block write is done and only
// the cleanup after it failed (runtime.LeftToRepair).
func writeDone(err error) bool {
	var re *runtime.Error
	return errors.As(err, &re) && strings.Contains(re.Detail, "the block write is done")
}

// faultCase is one injection: at call at (counted from the start of the
// operation) a fault; also lost, the call after it.
type faultCase struct {
	at     int
	kind   string // "none", "crash", "lost", "cancel", "cancel after", "lost twice"
	called string // the name of the call at at
	// command is the index of the block command (Insert, Replace,
	// Remove) in the clean run, or of the last call if there is none.
	command int
}

func TestProtocolFaults(t *testing.T) {
	for _, stale := range []time.Duration{30 * time.Second, 0} {
		for _, o := range ops() {
			t.Run(fmt.Sprintf("%s/stale=%v", o.name, stale), func(t *testing.T) {
				testOpFaults(t, o, stale)
			})
		}
	}
}

func testOpFaults(t *testing.T, o op, stale time.Duration) {
	// A clean run: its calls and its outcome.
	f := newFixture(stale)
	f.setup(t)
	old := state(f.s)
	var calls []string
	f.s.Hook = func(n int, call string) memindex.Fault {
		calls = append(calls, call)
		return memindex.None
	}
	err := o.run(context.Background(), f)
	f.s.Hook = nil
	if o.fail == nil && err != nil || o.fail != nil && !errors.Is(err, o.fail) {
		t.Fatalf("clean run: %v, want %v", err, o.fail)
	}
	want := state(f.s)
	if o.fail != nil && !equal(old, want) {
		t.Fatalf("clean failed run changed the blocks: %v -> %v", old, want)
	}
	if bad := checkReads(context.Background(), f, true); bad != nil {
		t.Fatalf("after a clean run:\n%s", strings.Join(bad, "\n"))
	}
	command := slices.IndexFunc(calls, func(c string) bool { return c == "Insert" || c == "Replace" || c == "Remove" })
	if command < 0 {
		command = len(calls)
	}
	cases := []faultCase{{-1, "none", "", command}}
	for i, c := range calls {
		for _, kind := range []string{"crash", "lost", "cancel", "cancel after"} {
			cases = append(cases, faultCase{i, kind, c, command})
		}
		if i == command {
			cases = append(cases, faultCase{i, "lost twice", c, command})
		}
	}
	for _, fc := range cases {
		runFault(t, o, stale, fc, old, want)
	}
}

func runFault(t *testing.T, o op, stale time.Duration, fc faultCase, old, want map[string]string) {
	name := fmt.Sprintf("%s at call %d (%s)", fc.kind, fc.at, fc.called)
	f := newFixture(stale)
	f.setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := f.s.Calls()
	f.s.Hook = func(n int, call string) memindex.Fault {
		switch i := n - base; {
		case i == fc.at && fc.kind == "crash":
			return memindex.Crash
		case i == fc.at && fc.kind == "cancel":
			cancel()
		case i == fc.at && (fc.kind == "lost" || fc.kind == "lost twice"):
			return memindex.Lost
		case i == fc.at+1 && fc.kind == "lost twice":
			return memindex.Lost
		}
		return memindex.None
	}
	f.s.After = func(n int, call string) {
		if n-base == fc.at && fc.kind == "cancel after" {
			cancel()
		}
	}
	err := o.run(ctx, f)
	f.s.Restart()
	got := state(f.s)
	var bad []string
	unknown := errors.Is(err, runtime.ErrUnknownOutcome)
	switch {
	case fc.kind == "crash":
		// The caller stopped with the process: old or new.
		if !equal(got, old) && !equal(got, want) {
			bad = append(bad, fmt.Sprintf("blocks %v are neither the old %v nor the new %v", got, old, want))
		}
	case unknown:
		// Only a fault at the block command or after it (the read-back,
		// the check of a slow insert's claims) leaves the outcome unknown.
		if fc.at < fc.command {
			bad = append(bad, fmt.Sprintf("ErrUnknownOutcome from a fault at %s, before the block command: %v", fc.called, err))
		}
		// A lost reply of a block command that was applied is found
		// out by reading the block back.
		if fc.kind == "lost" && fc.at == fc.command && fc.called != "Remove" && !equal(got, old) {
			bad = append(bad, fmt.Sprintf("ErrUnknownOutcome though reading the block back tells it was applied: %v", err))
		}
		if !equal(got, old) && !equal(got, want) {
			bad = append(bad, fmt.Sprintf("blocks %v are neither the old %v nor the new %v", got, old, want))
		}
	case err == nil:
		if o.fail != nil {
			bad = append(bad, fmt.Sprintf("succeeded, want %v", o.fail))
		}
		if !equal(got, want) {
			bad = append(bad, fmt.Sprintf("succeeded, but blocks %v, want %v", got, want))
		}
	case !writeDone(err):
		// A definite failure changes nothing visible.
		if !equal(got, old) {
			bad = append(bad, fmt.Sprintf("failed (%v), but blocks %v, want the old %v", err, got, old))
		}
	default:
		// Failed after the block write was done: the cleanup was cut short
		// (runtime.LeftToRepair).
		if !equal(got, want) {
			bad = append(bad, fmt.Sprintf("failed (%v) without changing nothing nor everything: blocks %v", err, got))
		}
	}
	// Without Repair: reads never return a block that does not hold the
	// value, and every block is found by each of its values, except after
	// a crash or an unknown outcome (a write cut short after its block
	// write but before its entries were checked: Repair's work).
	bad = append(bad, checkReads(context.Background(), f, fc.kind != "crash" && !unknown)...)
	if fc.kind != "crash" && !unknown {
		// Nothing is left claimed that no block holds: a failed write
		// undid its claims, a done one removed its old ones.
		bad = append(bad, checkClaimable(f)...)
	}
	rep, rerr := f.e.Repair(context.Background())
	if rerr != nil {
		bad = append(bad, fmt.Sprintf("Repair: %v", rerr))
	}
	if len(rep.Conflicts) > 0 {
		bad = append(bad, fmt.Sprintf("Repair found conflicts: %v", rep.Conflicts))
	}
	bad = append(bad, checkIndex(f)...)
	bad = append(bad, checkReads(context.Background(), f, true)...)
	if rep, err := f.e.Repair(context.Background()); err != nil || rep.Added+rep.Removed != 0 {
		bad = append(bad, fmt.Sprintf("a second Repair: %v, %v", rep, err))
	}
	if len(bad) > 0 {
		t.Errorf("%s: %v\n  %s", name, err, strings.Join(bad, "\n  "))
	}
}
