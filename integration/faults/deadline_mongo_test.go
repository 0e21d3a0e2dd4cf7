package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// TestMongoDeadlineCleanup: with index tables, the work a write goes on
// with after its deadline ends runtime.CleanupTimeout after it, the
// server pausing (faults.Pauser) at the command named below. A Delete
// whose document is gone but whose entries cannot be removed returns an
// error matching context.DeadlineExceeded saying the block write is done
// (it used to return nil whenever the server answered again); a setter
// whose update and read-back stall returns runtime.ErrUnknownOutcome
// matching DeadlineExceeded (the read-back had its own 10 s timeout).
// After resuming, Repair leaves the lookups exact.
func TestMongoDeadlineCleanup(t *testing.T) {
	defer func(d time.Duration) { runtime.CleanupTimeout = d }(runtime.CleanupTimeout)
	runtime.CleanupTimeout = 300 * time.Millisecond
	const deadline = 200 * time.Millisecond
	bound := deadline + runtime.CleanupTimeout + 2*time.Second

	p := NewPauser()
	var mu sync.Mutex
	var pauseAt func(*event.CommandStartedEvent) bool // nil: never
	var resume func()
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		if pauseAt != nil && resume == nil && pauseAt(e) {
			resume = p.Pause()
		}
	}}
	arm := func(at func(*event.CommandStartedEvent) bool) {
		mu.Lock()
		defer mu.Unlock()
		pauseAt, resume = at, nil
	}
	disarm := func() {
		mu.Lock()
		defer mu.Unlock()
		if resume != nil {
			resume()
		}
		pauseAt, resume = nil, nil
	}
	defer disarm()
	db := mongotest.StartWithOptions(t, options.Client().SetDialer(p).SetMonitor(monitor))
	r := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, r.EnsureIndexes(bg))
	must(t, r.Create(bg, h1()))
	must(t, r.Create(bg, h2()))

	timed := func(what string, fn func(ctx context.Context) error) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg, deadline)
		defer cancel()
		start := time.Now()
		err := fn(ctx)
		took := time.Since(start)
		disarm()
		if took > bound {
			t.Fatalf("%s returned after %v (bound %v): %v", what, took, bound, err)
		}
		var re *runtime.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a *runtime.Error matching context.DeadlineExceeded", what, err)
		}
		return err
	}
	repaired := func(what string) {
		t.Helper()
		for i := 0; ; i++ { // commands held while paused land after resuming
			rep, err := r.Repair(bg)
			must(t, err)
			if rep.Added == 0 && rep.Removed == 0 && len(rep.Conflicts) == 0 {
				return
			}
			if i == 20 {
				t.Fatalf("%s: Repair still fixes entries after 20 runs: %v", what, rep)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The delete of index entries, after the document's.
	arm(func(e *event.CommandStartedEvent) bool {
		coll, _ := e.Command.Lookup("delete").StringValueOK()
		return e.CommandName == "delete" && strings.Contains(coll, "__")
	})
	err := timed("Delete with its entry cleanup paused", func(ctx context.Context) error { return r.Delete(ctx, "h2") })
	if !strings.Contains(err.Error(), "block write is done") {
		t.Fatalf("Delete with its cleanup cut short: %v, want it to say the block write is done", err)
	}
	if _, err := r.Get(bg, "h2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get after the cut Delete: %v, want ErrNotFound", err)
	}
	if _, err := r.GetByName(bg, "Taken"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByName after the cut Delete: %v, want ErrNotFound", err)
	}
	repaired("the cut Delete")

	// The document's update, then its read-back.
	arm(func(e *event.CommandStartedEvent) bool {
		coll, _ := e.Command.Lookup("update").StringValueOK()
		return e.CommandName == "update" && !strings.Contains(coll, "__")
	})
	err = timed("SetName with its update and read-back paused", func(ctx context.Context) error { return r.SetName(ctx, "h1", "Renamed") })
	if !errors.Is(err, runtime.ErrUnknownOutcome) {
		t.Fatalf("SetName cut while its update was in flight: %v, want ErrUnknownOutcome", err)
	}
	repaired("the cut SetName")
	h, err := r.Get(bg, "h1")
	must(t, err)
	if got, err := r.GetByName(bg, h.Name); err != nil || got.ID != "h1" {
		t.Fatalf("GetByName(%q) after the cut SetName: %+v, %v", h.Name, got, err)
	}
}
