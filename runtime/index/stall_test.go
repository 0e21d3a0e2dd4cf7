package index_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// stall runs write in a goroutine that stops before its first call
// named at, runs meanwhile, and lets the write go on; it returns the
// write's error.
func stall(f *fixture, at string, write, meanwhile func() error) (werr, merr error) {
	paused, resume := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	f.s.Hook = func(n int, call string) memindex.Fault {
		if call == at && first.CompareAndSwap(false, true) {
			close(paused)
			<-resume
		}
		return memindex.None
	}
	done := make(chan error)
	go func() { done <- write() }()
	<-paused
	// The stalled write's items are an hour old when the other write
	// comes: stale.
	f.e.Now = func() int64 { return time.Now().Add(time.Hour).UnixNano() }
	merr = meanwhile()
	close(resume)
	werr = <-done
	f.s.Hook = nil
	return werr, merr
}

// holders returns the blocks holding code c.
func holders(f *fixture, c string) []string {
	var out []string
	for _, b := range f.s.Blocks() {
		if b.Value.Code == c {
			out = append(out, b.Value.ID)
		}
	}
	return out
}

// A unique claim taken over from a block whose write is stalled (its
// claim is stale and the block does not hold the value yet) fences that
// write: it can no longer land, and the value stays with one block.
func TestTakeoverFencesStalledWrite(t *testing.T) {
	f := newFixture(30 * time.Second)
	f.setup(t)
	ctx := context.Background()
	werr, merr := stall(f, "Replace",
		func() error { return f.change(ctx, "d2", func(d *Doc) { d.Code = "c9" }) },
		func() error { return f.create(ctx, Doc{ID: "d3", Code: "c9"}) })
	if merr != nil {
		t.Fatalf("the takeover: %v", merr)
	}
	if !errors.Is(werr, runtime.ErrDuplicate) {
		t.Fatalf("the stalled write: %v, want ErrDuplicate", werr)
	}
	if h := holders(f, "c9"); len(h) != 1 || h[0] != "d3" {
		t.Fatalf("c9 is held by %v, want [d3]", h)
	}
	if bad := checkReads(ctx, f, true); bad != nil {
		t.Fatal(bad)
	}
	if rep, err := f.e.Repair(ctx); err != nil || len(rep.Conflicts) > 0 {
		t.Fatalf("Repair: %v, %v", rep, err)
	}
}

// An insert stalled past StaleAfter whose unique claim was taken over
// meanwhile (its block did not exist yet, so there was nothing to fence)
// finds out after its insert, and removes the block it inserted.
func TestStalledInsertLosesClaim(t *testing.T) {
	f := newFixture(30 * time.Second)
	f.setup(t)
	ctx := context.Background()
	werr, merr := stall(f, "Insert",
		func() error { return f.create(ctx, Doc{ID: "d3", Code: "c7"}) },
		func() error { return f.create(ctx, Doc{ID: "d4", Code: "c7"}) })
	if merr != nil {
		t.Fatalf("the takeover: %v", merr)
	}
	if !errors.Is(werr, runtime.ErrDuplicate) {
		t.Fatalf("the stalled insert: %v, want ErrDuplicate", werr)
	}
	if h := holders(f, "c7"); len(h) != 1 || h[0] != "d4" {
		t.Fatalf("c7 is held by %v, want [d4]", h)
	}
	if bad := checkReads(ctx, f, true); bad != nil {
		t.Fatal(bad)
	}
	if rep, err := f.e.Repair(ctx); err != nil || len(rep.Conflicts) > 0 || rep.Added+rep.Removed > 0 {
		t.Fatalf("Repair: %v, %v", rep, err)
	}
}
