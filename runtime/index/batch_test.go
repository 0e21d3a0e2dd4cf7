package index_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// single hides memindex's Batcher: the engine then sends the batch phases
// as single calls.
type single struct{ index.Primitives[Doc] }

func newBatchFixture(stale time.Duration, batched bool) *fixture {
	f := newFixture(stale)
	if !batched {
		f.e.P = single{f.s}
	}
	return f
}

// createMany is a store's CreateMany over the engine: one CommitMany,
// the blocks inserted by the block writes.
func (f *fixture) createMany(ctx context.Context, ds []Doc) []error {
	ws := make([]index.Write, len(ds))
	for i, d := range ds {
		ws[i] = index.Write{ID: d.ID, Block: d.Key(), Inc: index.NewInc(), After: f.e.Keys(d.Key(), d), Seq: index.NextSeq(0), Insert: true}
	}
	done, errs := f.e.CommitMany(ctx, "Create", ws, func(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
		ok, errs := make([]bool, len(idx)), make([]error, len(idx))
		for j, i := range idx {
			ok[j], errs[j] = f.s.Insert(ctx, ds[i].Key(), sts[j], ds[i])
		}
		return ok, errs
	})
	for i := range ds {
		if errs[i] == nil && !done[i] {
			errs[i] = runtime.Fail("Create", "Doc", ds[i].ID, runtime.ErrDuplicate, nil)
		}
	}
	return errs
}

// putMany is a store's PutMany over the engine (RunMany): the blocks of
// each pass read in one call.
func (f *fixture) putMany(ctx context.Context, ds []Doc) []error {
	ids, blocks := make([]any, len(ds)), make([][]byte, len(ds))
	for i, d := range ds {
		ids[i], blocks[i] = d.ID, d.Key()
	}
	read := make([]index.Block[Doc], len(ds))
	found := make([]bool, len(ds))
	return f.e.RunMany(ctx, "Put", ids, blocks, func(ctx context.Context, idx []int) ([]index.Attempt, []error) {
		as, errs := make([]index.Attempt, len(idx)), make([]error, len(idx))
		keys := make([][]byte, len(idx))
		for j, i := range idx {
			keys[j] = blocks[i]
		}
		bs, err := f.s.ReadBlocks(ctx, keys)
		got := map[string]index.Block[Doc]{}
		for _, b := range bs {
			got[string(b.Key)] = b
		}
		for j, i := range idx {
			if err != nil {
				errs[j] = runtime.Fail("Put", "Doc", ids[i], nil, err)
				continue
			}
			read[i], found[i] = got[string(blocks[i])]
			as[j] = index.Attempt{Found: found[i], Stamp: read[i].Stamp, After: f.e.Keys(blocks[i], ds[i])}
			if found[i] {
				as[j].Before = f.e.Keys(blocks[i], read[i].Value)
			}
		}
		return as, errs
	}, func(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
		ok, errs := make([]bool, len(idx)), make([]error, len(idx))
		for j, i := range idx {
			if found[i] {
				ok[j], errs[j] = f.s.Replace(ctx, blocks[i], read[i].Stamp, sts[j], ds[i])
			} else {
				ok[j], errs[j] = f.s.Insert(ctx, blocks[i], sts[j], ds[i])
			}
		}
		return ok, errs
	})
}

// deleteMany is a store's DeleteMany over the engine: the blocks removed,
// then their items in one DeletedMany.
func (f *fixture) deleteMany(ctx context.Context, ids []string) []error {
	errs := make([]error, len(ids))
	var ds []index.Deletion
	var at []int
	for i, id := range ids {
		b, found, err := f.s.Remove(ctx, key(id))
		switch {
		case err != nil && f.s.Ambiguous(err):
			errs[i] = runtime.Fail("Delete", "Doc", id, runtime.ErrUnknownOutcome, err)
		case err != nil:
			errs[i] = runtime.Fail("Delete", "Doc", id, nil, err)
		case !found:
			errs[i] = runtime.Fail("Delete", "Doc", id, runtime.ErrNotFound, nil)
		default:
			ds = append(ds, index.Deletion{ID: id, Block: key(id), Inc: b.Stamp.Inc, Keys: f.e.Keys(key(id), b.Value)})
			at = append(at, i)
		}
	}
	for j, err := range f.e.DeletedMany(ctx, "Delete", ds) {
		errs[at[j]] = err
	}
	return errs
}

type batchOp struct {
	name string
	run  func(ctx context.Context, f *fixture) []error
	// fail is the kind of each item's definite failure (nil: it
	// succeeds).
	fail []error
}

func batchOps() []batchOp {
	return []batchOp{
		{"CreateMany", func(ctx context.Context, f *fixture) []error {
			return f.createMany(ctx, []Doc{
				{ID: "d3", Code: "c3", Tags: []string{"red", "green"}},
				{ID: "d4", Code: "c1"}, // c1 is d1's
				{ID: "d5", Code: "c5", Tags: []string{"pink", "red"}},
				{ID: "d1", Code: "c4", Tags: []string{"blue"}}, // d1 exists
			})
		}, []error{nil, runtime.ErrDuplicate, nil, runtime.ErrDuplicate}},
		{"CreateManyTakeover", func(ctx context.Context, f *fixture) []error {
			return f.createMany(ctx, []Doc{{ID: "d3", Code: "c9", Tags: []string{"green"}}, {ID: "d4", Code: "c4"}})
		}, []error{nil, nil}},
		{"PutMany", func(ctx context.Context, f *fixture) []error {
			return f.putMany(ctx, []Doc{
				{ID: "d1", Code: "c9", Tags: []string{"red"}},    // takes the stale c9, frees c1
				{ID: "d2", Code: "c1", Tags: []string{"pink"}},   // c1, which d1 gives up first
				{ID: "d3", Code: "c5", Tags: []string{"yellow"}}, // a new block
				{ID: "d4", Code: "c2", Tags: []string{"yellow"}}, // c2, which d2 gives up first
			})
		}, []error{nil, nil, nil, nil}},
		{"PutManyDuplicate", func(ctx context.Context, f *fixture) []error {
			return f.putMany(ctx, []Doc{
				{ID: "d2", Code: "c1", Tags: []string{"pink"}}, // c1 is d1's
				{ID: "d3", Code: "c3", Tags: []string{"blue"}},
			})
		}, []error{runtime.ErrDuplicate, nil}},
		{"DeleteMany", func(ctx context.Context, f *fixture) []error {
			return f.deleteMany(ctx, []string{"d1", "d7", "d2"})
		}, []error{nil, runtime.ErrNotFound, nil}},
	}
}

func TestBatchFaults(t *testing.T) {
	for _, batched := range []bool{true, false} {
		for _, stale := range []time.Duration{30 * time.Second, 0} {
			for _, o := range batchOps() {
				t.Run(fmt.Sprintf("%s/batched=%v/stale=%v", o.name, batched, stale), func(t *testing.T) {
					testBatchFaults(t, o, stale, batched)
				})
			}
		}
	}
}

func testBatchFaults(t *testing.T, o batchOp, stale time.Duration, batched bool) {
	f := newBatchFixture(stale, batched)
	f.setup(t)
	old := state(f.s)
	var calls []string
	f.s.Hook = func(n int, call string) memindex.Fault {
		calls = append(calls, call)
		return memindex.None
	}
	errs := o.run(context.Background(), f)
	f.s.Hook = nil
	for i, err := range errs {
		if want := o.fail[i]; want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("clean run: item %d: %v, want %v", i, err, want)
		}
	}
	want := state(f.s)
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
	}
	for _, fc := range cases {
		runBatchFault(t, o, stale, batched, fc, old, want)
	}
}

// sameAt reports whether a and b agree on block id.
func sameAt(a, b map[string]string, id string) bool {
	x, inA := a[id]
	y, inB := b[id]
	return inA == inB && x == y
}

func runBatchFault(t *testing.T, o batchOp, stale time.Duration, batched bool, fc faultCase, old, want map[string]string) {
	name := fmt.Sprintf("%s at call %d (%s)", fc.kind, fc.at, fc.called)
	f := newBatchFixture(stale, batched)
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
		case i == fc.at && fc.kind == "lost":
			return memindex.Lost
		}
		return memindex.None
	}
	f.s.After = func(n int, call string) {
		if n-base == fc.at && fc.kind == "cancel after" {
			cancel()
		}
	}
	errs := o.run(ctx, f)
	f.s.Restart()
	got := state(f.s)
	var bad []string
	ids := map[string]bool{}
	for id := range old {
		ids[id] = true
	}
	for id := range want {
		ids[id] = true
	}
	for id := range got {
		ids[id] = true
	}
	for id := range ids {
		if !sameAt(got, old, id) && !sameAt(got, want, id) {
			bad = append(bad, fmt.Sprintf("block %s is %q, neither the old %q nor the new %q", id, got[id], old[id], want[id]))
		}
	}
	unknown := false
	for i, err := range errs {
		id := fmt.Sprint(itemID(err))
		switch {
		case fc.kind == "crash":
		case errors.Is(err, runtime.ErrUnknownOutcome):
			unknown = true
			if fc.at < fc.command {
				bad = append(bad, fmt.Sprintf("item %d: ErrUnknownOutcome from a fault at %s, before the first block command: %v", i, fc.called, err))
			}
		case err == nil:
			if o.fail[i] != nil {
				bad = append(bad, fmt.Sprintf("item %d succeeded, want %v", i, o.fail[i]))
			}
		case writeDone(err):
		default:
			// A definite failure leaves its block as it was.
			if id != "" && id != "<nil>" && !sameAt(got, old, id) {
				bad = append(bad, fmt.Sprintf("item %d failed (%v), but block %s is %q, was %q", i, err, id, got[id], old[id]))
			}
		}
	}
	crash := fc.kind == "crash"
	bad = append(bad, checkReads(context.Background(), f, !crash && !unknown)...)
	if !crash && !unknown {
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
	if len(bad) > 0 {
		t.Errorf("%s: %v\n  %s", name, errs, strings.Join(bad, "\n  "))
	}
}

// itemID is the block key an item's error names.
func itemID(err error) any {
	var re *runtime.Error
	if errors.As(err, &re) {
		return re.ID
	}
	return nil
}

// TestBatchCalls: a CreateMany of 50 blocks sends one ClaimItems per
// lookup, whatever the number of items; without the Batcher, one PutItem
// per new item.
func TestBatchCalls(t *testing.T) {
	for _, batched := range []bool{true, false} {
		f := newBatchFixture(30*time.Second, batched)
		f.e.Batch = index.Limits{}
		var ds []Doc
		for i := range 50 {
			ds = append(ds, Doc{ID: fmt.Sprintf("b%02d", i), Code: fmt.Sprintf("u%02d", i), Tags: []string{"red"}})
		}
		counts := map[string]int{}
		f.s.Hook = func(n int, call string) memindex.Fault {
			counts[call]++
			return memindex.None
		}
		for i, err := range f.createMany(context.Background(), ds) {
			if err != nil {
				t.Fatalf("batched=%v: item %d: %v", batched, i, err)
			}
		}
		f.s.Hook = nil
		want := map[string]int{"ClaimItems": 2, "Insert": 50}
		if !batched {
			want = map[string]int{"PutItem": 100, "Insert": 50}
		}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Errorf("batched=%v: calls %v, want %v", batched, counts, want)
		}
		if bad := checkIndex(f); bad != nil {
			t.Errorf("batched=%v: %s", batched, strings.Join(bad, "\n"))
		}
	}
}

// TestBatchOrder: items of one batch that touch one unique value end as
// the single writes in slice order would: the first claim wins, and a
// value a failed or earlier item gives up is free for a later one.
func TestBatchOrder(t *testing.T) {
	for _, batched := range []bool{true, false} {
		f := newBatchFixture(30*time.Second, batched)
		f.setup(t)
		ctx := context.Background()
		errs := f.createMany(ctx, []Doc{
			{ID: "d3", Code: "c3"},
			{ID: "d4", Code: "c3"}, // d3's, first in the batch
			{ID: "d1", Code: "c5"}, // d1 exists: fails, c5 stays free
			{ID: "d5", Code: "c5", Tags: []string{"red"}},
		})
		for i, want := range []error{nil, runtime.ErrDuplicate, runtime.ErrDuplicate, nil} {
			if want == nil && errs[i] != nil || want != nil && !errors.Is(errs[i], want) {
				t.Errorf("batched=%v: CreateMany item %d: %v, want %v", batched, i, errs[i], want)
			}
		}
		errs = f.putMany(ctx, []Doc{
			{ID: "d2", Code: "c1"}, // d1's, until d1 gives it up (later in the batch)
			{ID: "d1", Code: "c4"},
			{ID: "d6", Code: "c2"}, // d2's, which failed: kept
			{ID: "d3", Code: "c4"}, // d1 took it
		})
		for i, want := range []error{runtime.ErrDuplicate, nil, runtime.ErrDuplicate, runtime.ErrDuplicate} {
			if want == nil && errs[i] != nil || want != nil && !errors.Is(errs[i], want) {
				t.Errorf("batched=%v: PutMany item %d: %v, want %v", batched, i, errs[i], want)
			}
		}
		errs = f.putMany(ctx, []Doc{
			{ID: "d2", Code: "c3"}, // d3's, until d3 gives it up (later)
			{ID: "d3", Code: "c6"},
			{ID: "d6", Code: "c2"}, // d2's, until d2 gives it up (earlier)
		})
		for i, want := range []error{runtime.ErrDuplicate, nil, runtime.ErrDuplicate} {
			if want == nil && errs[i] != nil || want != nil && !errors.Is(errs[i], want) {
				t.Errorf("batched=%v: PutMany item %d: %v, want %v", batched, i, errs[i], want)
			}
		}
		errs = f.putMany(ctx, []Doc{
			{ID: "d3", Code: "c7"},
			{ID: "d2", Code: "c6"}, // d3's, until d3 gives it up (earlier)
			{ID: "d6", Code: "c2"}, // d2's, until d2 gives it up (earlier)
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("batched=%v: PutMany item %d: %v", batched, i, err)
			}
		}
		if bad := checkReads(ctx, f, true); bad != nil {
			t.Errorf("batched=%v: %s", batched, strings.Join(bad, "\n"))
		}
	}
}
