package index_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime/index"
)

// held is one attempt of adding tag green to d2, over the state it read,
// stopped just before its block write until it is let go.
type held struct {
	reached, release chan struct{}
	fail             bool // the block write fails without being sent (a refused write)
	done             chan heldResult
}

type heldResult struct {
	ok  bool
	err error
}

// startGreen starts an attempt of adding tag green to d2 and returns once
// its items are written (it waits at its block write).
func startGreen(t *testing.T, f *fixture, fail bool) *held {
	t.Helper()
	ctx := context.Background()
	b, found, err := f.read(ctx, "d2")
	if err != nil || !found {
		t.Fatalf("reading d2: %v, found %v", err, found)
	}
	d := b.Value
	d.Tags = append(slices.Clone(d.Tags), "green")
	h := &held{reached: make(chan struct{}), release: make(chan struct{}), fail: fail, done: make(chan heldResult, 1)}
	go func() {
		ok, err := f.e.Commit(ctx, "Change", "d2", key("d2"), b.Stamp.Inc, f.e.Keys(key("d2"), b.Value), f.e.Keys(key("d2"), d), index.NextSeq(b.Stamp.Seq), false,
			func(ctx context.Context, st index.Stamp) (bool, error) {
				close(h.reached)
				<-h.release
				if h.fail {
					return false, nil
				}
				return f.s.Replace(ctx, key("d2"), b.Stamp, st, d)
			})
		h.done <- heldResult{ok, err}
	}()
	<-h.reached
	return h
}

func (h *held) finish() heldResult {
	close(h.release)
	return <-h.done
}

// Two attempts add the same non-unique entry (tag green of d2): the
// second overwrites the first's item, and its undo puts that item back.
// Reads stay exact whatever the order: a write still in flight lands
// with its item, and a landed one keeps it. The one order that leaves
// the item stale is documented (undoTouched says why it is not fenced).
func TestUndoOfAnOverwrittenEntry(t *testing.T) {
	ctx := context.Background()
	fresh := func(t *testing.T) *fixture {
		f := newFixture(30 * time.Second)
		if err := f.create(ctx, Doc{ID: "d2", Code: "c2", Tags: []string{"blue"}}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	exact := func(t *testing.T, f *fixture) {
		t.Helper()
		if bad := checkReads(ctx, f, true); bad != nil {
			t.Errorf("reads: %v", bad)
		}
		if bad := checkIndex(f); bad != nil {
			t.Errorf("index tables: %v", bad)
		}
		rep, err := f.e.Repair(ctx)
		if err != nil || rep.Added != 0 || rep.Removed != 0 {
			t.Errorf("Repair: %v, %v (nothing may be left to fix)", rep, err)
		}
	}

	// The first attempt undoes while the second owns the item (so its
	// undo leaves it), and the second undoes after, putting it back: no
	// attempt is left to need the item, which stays stale. Reads skip
	// it; Repair removes it and adds nothing.
	t.Run("OwnerUndoneFirst", func(t *testing.T) {
		f := fresh(t)
		p := startGreen(t, f, false)
		a := startGreen(t, f, false)
		if err := f.change(ctx, "d2", func(d *Doc) { d.Tags = []string{"yellow"} }); err != nil {
			t.Fatal(err)
		}
		if r := p.finish(); r.ok || r.err != nil {
			t.Fatalf("the first attempt over a changed block: %v, %v", r.ok, r.err)
		}
		if r := a.finish(); r.ok || r.err != nil {
			t.Fatalf("the second attempt over a changed block: %v, %v", r.ok, r.err)
		}
		if bad := checkReads(ctx, f, true); bad != nil {
			t.Errorf("reads: %v", bad)
		}
		rep, err := f.e.Repair(ctx)
		if err != nil || rep.Added != 0 || rep.Removed != 1 {
			t.Errorf("Repair: %v, %v (want the one stale entry removed, nothing added)", rep, err)
		}
		exact(t, f)
	})

	// The second attempt fails while the first is still in flight, over
	// the state the first read: the first lands after the undo, with its
	// item.
	t.Run("OwnerInFlight", func(t *testing.T) {
		f := fresh(t)
		p := startGreen(t, f, false)
		a := startGreen(t, f, true)
		if r := a.finish(); r.ok || r.err != nil {
			t.Fatalf("the refused attempt: %v, %v", r.ok, r.err)
		}
		r := p.finish()
		if r.err != nil {
			t.Fatalf("the first attempt: %v", r.err)
		}
		if !r.ok {
			t.Fatalf("the first attempt, over the state it read, did not land")
		}
		exact(t, f)
	})

	// The first attempt lands; the second, over the state it replaced,
	// fails: the item stays, as the landed state's.
	t.Run("OwnerLanded", func(t *testing.T) {
		f := fresh(t)
		p := startGreen(t, f, false)
		a := startGreen(t, f, false)
		if r := p.finish(); !r.ok || r.err != nil {
			t.Fatalf("the first attempt: %v, %v", r.ok, r.err)
		}
		if r := a.finish(); r.ok || r.err != nil {
			t.Fatalf("the second attempt over a changed block: %v, %v", r.ok, r.err)
		}
		exact(t, f)
	})
}
