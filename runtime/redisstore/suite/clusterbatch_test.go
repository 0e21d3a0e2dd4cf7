package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
	"github.com/noamgen/noamgen/runtime/storetest/stamped"
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

// TestPutDeleteManyClusterTrips: on a cluster, PutMany and DeleteMany
// run the lookup protocol phase by phase for the batch (runtime/index
// RunMany and DeletedMany), each phase one pipeline, so that 50 items
// take no more round trips than the phases allow, as 5 do. Each item's
// error is its single call's: a version conflict, a unique value taken
// (named), a missing block, a key given twice applied in order.
func TestPutDeleteManyClusterTrips(t *testing.T) {
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
	prefix := fmt.Sprintf("pd-%p-", t)
	batch := func(p string, n int) []*st.Match {
		var ms []*st.Match
		for i := range n {
			id := fmt.Sprintf("%s%s%02d", prefix, p, i)
			ms = append(ms, &st.Match{ID: id, Code: "code-" + id, Region: "r", Level: i % 3, Tags: []string{"t-" + id}, Meta: map[string]int{}})
		}
		return ms
	}
	// PutMany: per pass the reads, the claims of each of Match's four
	// lookups, the block runs, the old entries' deletes of each lookup,
	// then the listing; DeleteMany: the reads, the block runs, the
	// listing's ZREMs and EXISTS, the entries' deletes of each lookup.
	// Each a pipeline to at most the cluster's 3 masters.
	const putBound, deleteBound = (1 + 4 + 1 + 4 + 1) * 3, (1 + 1 + 2 + 4) * 3
	var puts, deletes []int
	for _, n := range []int{5, 50} {
		ms := batch(fmt.Sprint(n, "-"), n)
		if err := matches.CreateMany(ctx, ms); err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			m.Code += "-new"
			m.Level = (i + 1) % 3
			m.Tags = []string{"u-" + m.ID}
		}
		if err := matches.PutMany(ctx, ms); err != nil {
			t.Fatal(err)
		}
		puts = append(puts, last.RoundTrips)
		for _, m := range ms {
			if got, err := matches.GetByCode(ctx, m.Code); err != nil || got.ID != m.ID || m.Version != 2 || got.Version != 2 {
				t.Fatalf("GetByCode %s after PutMany: %+v, %v", m.Code, got, err)
			}
			if page, err := matches.ListByTags(ctx, "t-"+m.ID, runtime.PageRequest{Limit: 10}); err != nil || len(page.Items) != 0 {
				t.Fatalf("ListByTags of %s's old tag after PutMany: %v, %v", m.ID, page.Items, err)
			}
		}
		ids := make([]string, n)
		for i, m := range ms {
			ids[i] = m.ID
		}
		if err := matches.DeleteMany(ctx, ids); err != nil {
			t.Fatal(err)
		}
		deletes = append(deletes, last.RoundTrips)
		for _, m := range ms {
			if _, err := matches.Get(ctx, m.ID); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("Get %s after DeleteMany: %v", m.ID, err)
			}
			if _, err := matches.GetByCode(ctx, m.Code); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("GetByCode %s after DeleteMany: %v", m.Code, err)
			}
		}
	}
	if puts[1] != puts[0] || puts[1] > putBound || puts[1] < 2 {
		t.Errorf("PutMany on a cluster: %d round trips for 5 items, %d for 50: want as many, at most %d", puts[0], puts[1], putBound)
	}
	if deletes[1] != deletes[0] || deletes[1] > deleteBound || deletes[1] < 2 {
		t.Errorf("DeleteMany on a cluster: %d round trips for 5 items, %d for 50: want as many, at most %d", deletes[0], deletes[1], deleteBound)
	}
	t.Logf("round trips of PutMany: %v, of DeleteMany: %v", puts, deletes)

	// The single calls' errors, per item.
	ms := batch("err-", 4)
	if err := matches.CreateMany(ctx, ms); err != nil {
		t.Fatal(err)
	}
	stale := *ms[0]
	stale.Version = 7
	taken := *ms[1]
	taken.Code = ms[2].Code
	twice := *ms[3]
	twice.Level = 2
	again := *ms[3] // version 1 again: the first write makes it 2
	again.Level = 1
	fresh := batch("err-new-", 1)[0]
	put := []*st.Match{&stale, &taken, &twice, &again, fresh}
	err := matches.PutMany(ctx, put)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 3 || be.Items[0].Index != 0 || be.Items[1].Index != 1 || be.Items[2].Index != 3 ||
		!errors.Is(be.Items[0].Err, runtime.ErrConflict) || !errors.Is(be.Items[1].Err, runtime.ErrDuplicate) ||
		!strings.Contains(be.Items[1].Err.Error(), ms[2].Code) || !errors.Is(be.Items[2].Err, runtime.ErrConflict) {
		t.Fatalf("PutMany with a stale version, a taken code and a key twice: %v", err)
	}
	if got, err := matches.Get(ctx, ms[3].ID); err != nil || got.Level != 2 || got.Version != 2 || twice.Version != 2 {
		t.Errorf("the first write of the key given twice: %+v, %v", got, err)
	}
	if got, err := matches.GetByCode(ctx, fresh.Code); err != nil || got.ID != fresh.ID || fresh.Version != 1 {
		t.Errorf("the new block of PutMany: %+v, %v", got, err)
	}
	if got, err := matches.GetByCode(ctx, ms[2].Code); err != nil || got.ID != ms[2].ID {
		t.Errorf("the code the refused item wanted: %+v, %v", got, err)
	}
	ids := []string{ms[0].ID, prefix + "missing", ms[1].ID, ms[0].ID}
	err = matches.DeleteMany(ctx, ids)
	if !errors.As(err, &be) || len(be.Items) != 2 || be.Items[0].Index != 1 || be.Items[1].Index != 3 ||
		!errors.Is(be.Items[0].Err, runtime.ErrNotFound) || !errors.Is(be.Items[1].Err, runtime.ErrNotFound) {
		t.Fatalf("DeleteMany with a missing key and a key twice: %v", err)
	}
	for _, m := range ms[:2] {
		if _, err := matches.GetByCode(ctx, m.Code); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("GetByCode %s after DeleteMany: %v", m.Code, err)
		}
	}
}

// TestPutDeleteManyClusterNoLookups: an aggregate without lookups (Post:
// a created timestamp, a version) through the same batch on a cluster:
// 5 and 50 items in as many round trips, the created timestamp kept, a
// stale version refused, a missing block not found.
func TestPutDeleteManyClusterNoLookups(t *testing.T) {
	ctx := context.Background()
	c := redistest.Cluster(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
		last = call
		return next(ctx)
	})
	posts := stamped.NewPostRedisRepository(c, hook)
	if err := posts.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("nl-%p-", t)
	var puts, deletes []int
	for _, n := range []int{5, 50} {
		var ps []*stamped.Post
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s%d-%02d", prefix, n, i)
			ps, ids = append(ps, &stamped.Post{ID: id, Title: "first"}), append(ids, id)
		}
		if err := posts.CreateMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		created := ps[0].Created
		for _, p := range ps {
			p.Title, p.Created = "second", time.Time{}
		}
		if err := posts.PutMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		puts = append(puts, last.RoundTrips)
		got, err := posts.Get(ctx, ids[0])
		if err != nil || got.Title != "second" || got.Version != 2 || !got.Created.Equal(created) || !ps[0].Created.Equal(created) {
			t.Fatalf("Get after PutMany: %+v, %v (created %v)", got, err, created)
		}
		if err := posts.DeleteMany(ctx, ids); err != nil {
			t.Fatal(err)
		}
		deletes = append(deletes, last.RoundTrips)
		if _, err := posts.Get(ctx, ids[n-1]); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Get after DeleteMany: %v", err)
		}
	}
	// PutMany: the created timestamps, the block runs, the listing;
	// DeleteMany: the block runs, the listing's ZREMs and EXISTS.
	if puts[0] != puts[1] || puts[1] > 3 || deletes[0] != deletes[1] || deletes[1] > 3 {
		t.Errorf("round trips of PutMany %v and DeleteMany %v for 5 and 50 items: want as many, at most 3", puts, deletes)
	}

	p := &stamped.Post{ID: prefix + "v", Title: "one"}
	if err := posts.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	stale := *p
	stale.Version = 5
	err := posts.PutMany(ctx, []*stamped.Post{&stale, p})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 0 || !errors.Is(be.Items[0].Err, runtime.ErrConflict) || p.Version != 2 {
		t.Fatalf("PutMany with a stale version then the current one: %v (version %d)", err, p.Version)
	}
	err = posts.DeleteMany(ctx, []string{prefix + "missing", p.ID})
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 0 || !errors.Is(be.Items[0].Err, runtime.ErrNotFound) {
		t.Fatalf("DeleteMany with a missing key: %v", err)
	}
}

// TestCreateManyClusterCounter: on a cluster, a CreateMany with a counter
// moves each counter scope once (one pipeline of INCRBYs) and writes the
// blocks with the batch protocol: 50 journals (lookups owner and
// lines.kind) take no more round trips than 5.
func TestCreateManyClusterCounter(t *testing.T) {
	journals, replies, last := counted(t)
	// Phases: the counters, the claims of each of Journal's two lookups,
	// the block runs, the listing; each a pipeline to at most the
	// cluster's 3 masters.
	const bound = (1 + 2 + 1 + 1) * 3
	storetest.BatchCounterTrips(t, journals, replies, last, fmt.Sprintf("cc-%p", t), bound)
}

// TestPutManyClusterCounter: on a cluster, a PutMany with a counter moves
// each counter scope once for the items whose number is zero (which the
// single Put allocates) and writes the blocks with the batch protocol,
// the allocated ones as CreateMany, the others as PutMany: 50 journals
// take no more round trips than 5, new or replaced.
func TestPutManyClusterCounter(t *testing.T) {
	journals, replies, last := counted(t)
	// Phases of the replacing PutMany: the reads, the claims of each of
	// Journal's two lookups, the block runs, the old entries' deletes of
	// each lookup, the listing; each a pipeline to at most the cluster's
	// 3 masters (the new journals' CreateMany phases are fewer).
	const bound = (1 + 2 + 1 + 2 + 1) * 3
	storetest.BatchPutCounterTrips(t, journals, replies, last, fmt.Sprintf("pc-%p", t), bound, bound)
}

// counted returns Journal and Reply repositories (both with a counter) on
// the cluster, ensured, and a function that returns their last call.
func counted(t *testing.T) (st.JournalRepository, st.ReplyRepository, func() *runtime.Call) {
	c := redistest.Cluster(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
		last = call
		return next(ctx)
	})
	journals := st.NewJournalRedisRepository(c, hook)
	replies := st.NewReplyRedisRepository(c, hook)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{journals, replies} {
		if err := r.EnsureIndexes(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return journals, replies, func() *runtime.Call { return last }
}
