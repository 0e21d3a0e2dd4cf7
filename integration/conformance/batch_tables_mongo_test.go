package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestBatchIndexTablesMongo: with every lookup in an index table, a
// batch write runs the lookup protocol phase by phase for the whole
// batch (runtime/index CommitMany), so its commands are bounded by the
// phases and the index tables, not by the items: a CreateMany of 50
// sends as many as one of 5. The items' lookups, unique values and versions
// are kept as by the single calls.
func TestBatchIndexTablesMongo(t *testing.T) {
	ctx := context.Background()
	db := mongotest.Start(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
		last = c
		return next(ctx)
	})
	matches := model.NewMatchMongoRepository(db, mongostore.IndexTables(), hook)
	if err := matches.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	// Four index tables (code, regionLevel, tags, venue city): a phase is
	// at most one bulkWrite per table (conditional writes by runs of 25,
	// for FerretDB: two for 50 items), and a batch at most three phases
	// and two reads.
	const bound = 2 * (3*4 + 2)
	batch := func(prefix string, n int) []*model.Match {
		var ms []*model.Match
		for i := range n {
			id := fmt.Sprintf("%s%02d", prefix, i)
			ms = append(ms, &model.Match{ID: id, Code: "code-" + id, Region: "r", Level: i % 3, Tags: []string{"t-" + id, "all"},
				Venue: model.Venue{City: "city-" + prefix}, Meta: map[string]int{}})
		}
		return ms
	}
	trips := map[string][]int{}
	for _, n := range []int{5, 50} {
		p := fmt.Sprintf("n%d-", n)
		ms := batch(p, n)
		if err := matches.CreateMany(ctx, ms); err != nil {
			t.Fatal(err)
		}
		trips["CreateMany"] = append(trips["CreateMany"], last.RoundTrips)
		for _, m := range ms {
			if got, err := matches.GetByCode(ctx, m.Code); err != nil || got.ID != m.ID || m.Version != 1 {
				t.Fatalf("GetByCode %s after CreateMany: %+v, %v (version %d)", m.Code, got, err, m.Version)
			}
		}
		for _, m := range ms {
			m.Code, m.Tags = m.Code+"-new", []string{"u-" + m.ID}
		}
		if err := matches.PutMany(ctx, ms); err != nil {
			t.Fatal(err)
		}
		trips["PutMany"] = append(trips["PutMany"], last.RoundTrips)
		for _, m := range ms {
			if got, err := matches.GetByCode(ctx, m.Code); err != nil || got.ID != m.ID || m.Version != 2 {
				t.Fatalf("GetByCode %s after PutMany: %+v, %v (version %d)", m.Code, got, err, m.Version)
			}
			if _, err := matches.GetByCode(ctx, "code-"+m.ID); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("GetByCode of %s's old code after PutMany: %v", m.ID, err)
			}
		}
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.ID
		}
		if err := matches.DeleteMany(ctx, ids); err != nil {
			t.Fatal(err)
		}
		trips["DeleteMany"] = append(trips["DeleteMany"], last.RoundTrips)
		for _, m := range ms {
			if _, err := matches.GetByCode(ctx, m.Code); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("GetByCode %s after DeleteMany: %v", m.Code, err)
			}
		}
	}
	for op, ns := range trips {
		if ns[1] > bound || ns[1] < 2 || op == "CreateMany" && ns[0] != ns[1] {
			t.Errorf("%s: %d round trips for 5 items, %d for 50: want at most %d (CreateMany: the same)", op, ns[0], ns[1], bound)
		}
	}
	t.Logf("round trips of a batch: %v", trips)

	// Unique values within a batch and against stored blocks: only the
	// items that lose fail, as the single calls in order would.
	ms := batch("d", 4)
	ms[1].Code = ms[0].Code // taken by item 0
	if err := matches.Create(ctx, &model.Match{ID: "held", Code: "held-code", Meta: map[string]int{}}); err != nil {
		t.Fatal(err)
	}
	ms[3].Code = "held-code"
	err := matches.CreateMany(ctx, ms)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 2 || be.Items[0].Index != 1 || be.Items[1].Index != 3 ||
		!errors.Is(be.Items[0].Err, runtime.ErrDuplicate) || !errors.Is(be.Items[1].Err, runtime.ErrDuplicate) {
		t.Fatalf("CreateMany with two taken codes: %v", err)
	}
	for _, i := range []int{1, 3} {
		if _, err := matches.Get(ctx, ms[i].ID); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get of the refused item %s: %v", ms[i].ID, err)
		}
		if got, err := matches.ListByTags(ctx, ms[i].Tags[0], runtime.PageRequest{Limit: 10}); err != nil || len(got.Items) != 0 {
			t.Errorf("ListByTags of the refused item %s's tag: %v, %v", ms[i].ID, got, err)
		}
	}
	for _, i := range []int{0, 2} {
		if got, err := matches.GetByCode(ctx, ms[i].Code); err != nil || got.ID != ms[i].ID {
			t.Errorf("GetByCode of the written item %s: %+v, %v", ms[i].ID, got, err)
		}
	}
	rep, err := matches.Repair(ctx)
	if err != nil || rep.Added+rep.Removed != 0 {
		t.Errorf("Repair after the batches: %+v, %v (the batches left entries to repair)", rep, err)
	}
}
