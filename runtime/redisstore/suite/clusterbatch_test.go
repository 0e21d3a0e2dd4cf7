package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestCreateManyClusterTrips: on a cluster, CreateMany runs the lookup
// protocol phase by phase for the batch (runtime/index CommitMany), each
// phase one pipeline (go-redis sends it to each node it names), so its
// round trips are bounded by the phases and the nodes, not by the items:
// 50 items take no more than 5. A unique value within the batch or held
// by a stored block fails only its item.
func TestCreateManyClusterTrips(t *testing.T) {
	ctx := context.Background()
	c := redistest.Cluster(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
		last = call
		return next(ctx)
	})
	matches := st.NewMatchRedisRepository(c, hook)
	if err := matches.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("trips-%p-", t)
	batch := func(p string, n int) []*st.Match {
		var ms []*st.Match
		for i := range n {
			id := fmt.Sprintf("%s%s%02d", prefix, p, i)
			ms = append(ms, &st.Match{ID: id, Code: "code-" + id, Region: "r", Level: i % 3, Tags: []string{"t-" + id}, Meta: map[string]int{}})
		}
		return ms
	}
	// Phases: the claims of each of Match's lookups, the block runs, the
	// listing; each a pipeline to at most the cluster's 3 masters.
	const bound = (4 + 2) * 3
	var trips []int
	for _, n := range []int{5, 50} {
		ms := batch(fmt.Sprint(n, "-"), n)
		if err := matches.CreateMany(ctx, ms); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, last.RoundTrips)
		for _, m := range ms {
			if got, err := matches.GetByCode(ctx, m.Code); err != nil || got.ID != m.ID || m.Version != 1 {
				t.Fatalf("GetByCode %s after CreateMany: %+v, %v", m.Code, got, err)
			}
		}
	}
	if trips[1] > bound || trips[1] < 2 {
		t.Errorf("CreateMany on a cluster: %d round trips for 5 items, %d for 50: want at most %d", trips[0], trips[1], bound)
	}
	t.Logf("round trips of CreateMany: %v", trips)

	ms := batch("dup-", 4)
	ms[1].Code = ms[0].Code
	ms[3].Code = "code-" + prefix + "5-00" // written above
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
		if page, err := matches.ListByTags(ctx, ms[i].Tags[0], runtime.PageRequest{Limit: 10}); err != nil || len(page.Items) != 0 {
			t.Errorf("ListByTags of the refused item %s's tag: %v, %v", ms[i].ID, page.Items, err)
		}
	}
	for _, i := range []int{0, 2} {
		if got, err := matches.GetByCode(ctx, ms[i].Code); err != nil || got.ID != ms[i].ID {
			t.Errorf("GetByCode of the written item %s: %+v, %v", ms[i].ID, got, err)
		}
	}
}
