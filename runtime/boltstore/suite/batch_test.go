package boltstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

var ctx = context.Background()

// tripCounter is a hook that keeps the round trips (bbolt transactions)
// of the last call.
type tripCounter struct{ trips int }

func (c *tripCounter) hook(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
	err := next(ctx)
	c.trips = call.RoundTrips
	return err
}

// TestBatchOneTransaction: a batch whose failed items are refused before
// their first write is one transaction.
func TestBatchOneTransaction(t *testing.T) {
	db := boltharness.Open(t)
	c := &tripCounter{}
	matches := st.NewMatchBoltRepository(db, runtime.WithHook(c.hook))
	must(t, matches.EnsureIndexes(ctx))
	must(t, matches.Create(ctx, &st.Match{ID: "x", Code: "taken"}))
	err := matches.CreateMany(ctx, []*st.Match{{ID: "a", Code: "a"}, {ID: "x"}, {ID: "b", Code: "taken"}, {ID: "c", Code: "a"}, {ID: "d", Code: "d"}})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 3 {
		t.Fatalf("CreateMany: %v", err)
	}
	if c.trips != 1 {
		t.Errorf("CreateMany took %d transactions, want 1", c.trips)
	}
}

// TestBatchRedo: an item that fails after its counter moved rolls the
// transaction back, which runs again without it: the others are written
// and the counter does not keep the failed item's number.
func TestBatchRedo(t *testing.T) {
	db := boltharness.Open(t)
	c := &tripCounter{}
	journals := st.NewJournalBoltRepository(db, runtime.WithHook(c.hook))
	must(t, journals.EnsureIndexes(ctx))
	js := []*st.Journal{{Owner: "a"}, {Owner: "bad\xff"}, {Owner: "c"}}
	err := journals.CreateMany(ctx, js)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 1 || !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("CreateMany: %v", err)
	}
	if c.trips != 2 {
		t.Errorf("CreateMany took %d transactions, want 2 (one rolled back)", c.trips)
	}
	if js[0].ID != 1 || js[1].ID != 0 || js[2].ID != 2 {
		t.Errorf("ids %d, %d, %d, want 1, 0, 2", js[0].ID, js[1].ID, js[2].ID)
	}
	next := &st.Journal{Owner: "d"}
	must(t, journals.Create(ctx, next))
	if next.ID != 3 {
		t.Errorf("the next Create got id %d, want 3", next.ID)
	}
	for _, j := range []*st.Journal{js[0], js[2]} {
		got, err := journals.Get(ctx, j.ID)
		if err != nil || got.Owner != j.Owner {
			t.Errorf("Get(%d): %v, %v", j.ID, got, err)
		}
	}
	page, err := journals.ListByOwner(ctx, "bad\xff", runtime.PageRequest{})
	if err == nil && len(page.Items) != 0 {
		t.Errorf("the failed item's owner finds %d journals", len(page.Items))
	}
}
