package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestBatchBulkWriteMongo: with every lookup on a native index (unique
// ones too, which TestConformance keeps in index tables on FerretDB), a
// CreateMany is one ordered bulkWrite, sent again after each item the
// server refuses (a key in use, a key given twice, a unique value taken),
// which gets the single Create's error; a PutMany of an aggregate without
// a version is one bulkWrite of upserts; a DeleteMany is one find and one
// deleteMany.
func TestBatchBulkWriteMongo(t *testing.T) {
	ctx := context.Background()
	db := mongotest.Start(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
		last = c
		return next(ctx)
	})
	// No partial indexes: FerretDB refuses them.
	opts := []runtime.Option{mongostore.NoPartialIndexes(), hook}
	matches := model.NewMatchMongoRepository(db, opts...)
	cards := model.NewCardMongoRepository(db, opts...)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{matches, cards} {
		if err := r.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	match := func(id string) *model.Match {
		return &model.Match{ID: id, Code: "code-" + id, Region: "r", Level: 1, Tags: []string{"batch"}, Meta: map[string]int{}}
	}
	trips := func(op string, want int) {
		t.Helper()
		if last == nil || last.Op != op || last.RoundTrips != want {
			t.Errorf("%s: the last call is %+v, want %s in %d round trips", op, last, op, want)
		}
	}

	// The first write of a repository lists the unique indexes once.
	if err := matches.Create(ctx, match("first")); err != nil {
		t.Fatal(err)
	}
	var ms []*model.Match
	for i := range 6 {
		ms = append(ms, match(fmt.Sprint("m", i)))
	}
	if err := matches.CreateMany(ctx, ms); err != nil {
		t.Fatal(err)
	}
	trips("CreateMany", 1)
	for _, m := range ms {
		got, err := matches.Get(ctx, m.ID)
		if err != nil || m.Version != 1 || got.Version != 1 || got.Code != m.Code {
			t.Fatalf("%s after CreateMany: %+v, %v (version %d)", m.ID, got, err, m.Version)
		}
	}

	// Refused items: the items after each go in another bulkWrite.
	a, c := match("a"), match("c")
	dupCode := match("b")
	dupCode.Code = a.Code
	again := match("a")
	again.Code = "code-a-again"
	batch := []*model.Match{a, match("m0"), dupCode, again, c}
	err := matches.CreateMany(ctx, batch)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 3 {
		t.Fatalf("CreateMany with three refused items: %v", err)
	}
	for k, i := range []int{1, 2, 3} {
		if it := be.Items[k]; it.Index != i || !errors.Is(it.Err, runtime.ErrDuplicate) {
			t.Errorf("item %d: %+v, want item %d with ErrDuplicate", k, it, i)
		}
	}
	if msg := be.Items[1].Err.Error(); !strings.Contains(msg, "is taken") {
		t.Errorf("the item whose code is taken: %v, want the lookup named", msg)
	}
	for _, m := range []*model.Match{a, c} {
		if got, err := matches.Get(ctx, m.ID); err != nil || got.Code != m.Code || m.Version != 1 {
			t.Errorf("%s, written by a partly refused CreateMany: %+v, %v", m.ID, got, err)
		}
	}
	for _, m := range []*model.Match{dupCode, again} {
		if m.Version != 0 {
			t.Errorf("the refused item %s has version %d", m.ID, m.Version)
		}
	}
	if _, err := matches.Get(ctx, "b"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Get of the refused item b: %v", err)
	}
	if got, err := matches.GetByCode(ctx, "code-a-again"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetByCode of the code of a key given twice: %v, %v", got, err)
	}

	// DeleteMany: one find, one deleteMany; a key missing or given twice
	// is not found.
	err = matches.DeleteMany(ctx, []string{"m0", "missing", "m1", "m0"})
	if !errors.As(err, &be) || len(be.Items) != 2 || be.Items[0].Index != 1 || be.Items[1].Index != 3 ||
		!errors.Is(be.Items[0].Err, runtime.ErrNotFound) || !errors.Is(be.Items[1].Err, runtime.ErrNotFound) {
		t.Fatalf("DeleteMany with a missing key and one given twice: %v", err)
	}
	trips("DeleteMany", 2)
	for _, id := range []string{"m0", "m1"} {
		if _, err := matches.Get(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get of %s after DeleteMany: %v", id, err)
		}
	}
	if _, err := matches.Get(ctx, "m2"); err != nil {
		t.Errorf("m2, not in the DeleteMany: %v", err)
	}

	// PutMany of cards (no version): one bulkWrite of upserts.
	var cs []*model.Card
	for i := range 6 {
		cs = append(cs, &model.Card{ID: int32(i + 1), Title: fmt.Sprint("card ", i), Labels: []string{"l"}})
	}
	if err := cards.PutMany(ctx, cs); err != nil {
		t.Fatal(err)
	}
	trips("PutMany", 1)
	cs[0].Title, cs[0].Labels = "replaced", nil
	if err := cards.PutMany(ctx, cs[:1]); err != nil {
		t.Fatal(err)
	}
	if got, err := cards.Get(ctx, 1); err != nil || got.Title != "replaced" || len(got.Labels) != 0 {
		t.Errorf("card 1 after a second PutMany: %+v, %v", got, err)
	}

	// A context ended before the batch: nothing is sent, nothing written.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = matches.CreateMany(cctx, []*model.Match{match("n1"), match("n2")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("CreateMany with a cancelled context: %v", err)
	}
	if _, err := matches.Get(ctx, "n1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Get of an item of a cancelled CreateMany: %v", err)
	}
}
