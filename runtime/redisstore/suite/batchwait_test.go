package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// waitedBatch returns a Match repository over the master of pair whose
// writes wait for its replica (within timeout), with the Call of its last
// operation, and a plain repository over the master.
func waitedBatch(t *testing.T, pair *redistest.Pair, timeout time.Duration) (waited, plain *model.MatchRedisRepository, last func() *runtime.Call) {
	t.Helper()
	// A long ReadTimeout, which caps WaitTimeout to its half.
	mc := redis.NewClient(&redis.Options{Addr: pair.Master.Addr, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { mc.Close() })
	ensured(t, model.NewMatchRedisRepository(withTimeouts(t, mc)))
	var call *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
		call = c
		return next(ctx)
	})
	waited = model.NewMatchRedisRepository(redisstore.WithOptions(mc, redisstore.Options{WaitReplicas: 1, WaitTimeout: timeout}), hook)
	// The first write also opens a connection and reads the layout.
	warm := fmt.Sprintf("warm-%s", timeout)
	must(t, waited.Create(bg, &model.Match{ID: warm, Code: warm}))
	must(t, waited.Delete(bg, warm))
	return waited, model.NewMatchRedisRepository(mc), func() *runtime.Call { return call }
}

func waitedMatches(prefix string, n int) ([]*model.Match, []string) {
	ms := make([]*model.Match, n)
	ids := make([]string, n)
	for i := range ms {
		ids[i] = fmt.Sprintf("%s%02d", prefix, i)
		ms[i] = &model.Match{ID: ids[i], Code: "code-" + ids[i], Region: "r", Level: i % 3, Tags: []string{"t-" + ids[i]}, Meta: map[string]int{}}
	}
	return ms, ids
}

// TestWaitReplicasBatchTrips: with Options.WaitReplicas on a single node,
// CreateMany, PutMany and DeleteMany send their items' script runs in one
// pipeline on one connection followed by one WAIT, so that 40 items take
// as many round trips as 5 (the single calls would take one each), and
// every item is on the replica when the batch returns (also when the
// server has lost the script: the items then run on their own).
func TestWaitReplicasBatchTrips(t *testing.T) {
	pair := redistest.StartPair(t)
	waited, _, last := waitedBatch(t, pair, 10*time.Second)
	rc := pair.Replica.Client()
	defer rc.Close()
	onReplica := model.NewMatchRedisRepository(rc)
	const bound = 3
	trips := map[string][]int{}
	for _, n := range []int{5, 40} {
		ms, ids := waitedMatches(fmt.Sprintf("w%d-", n), n)
		must(t, waited.CreateMany(bg, ms))
		trips["CreateMany"] = append(trips["CreateMany"], last().RoundTrips)
		for _, m := range ms {
			if got, err := onReplica.Get(bg, m.ID); err != nil || got.Code != m.Code || m.Version != 1 {
				t.Fatalf("Get %s on the replica after CreateMany: %+v, %v", m.ID, got, err)
			}
		}
		for _, m := range ms {
			m.Code += "-new"
		}
		must(t, waited.PutMany(bg, ms))
		trips["PutMany"] = append(trips["PutMany"], last().RoundTrips)
		for _, m := range ms {
			if got, err := onReplica.Get(bg, m.ID); err != nil || got.Code != m.Code || got.Version != 2 || m.Version != 2 {
				t.Fatalf("Get %s on the replica after PutMany: %+v, %v", m.ID, got, err)
			}
		}
		must(t, waited.DeleteMany(bg, ids))
		trips["DeleteMany"] = append(trips["DeleteMany"], last().RoundTrips)
		for _, id := range ids {
			if _, err := onReplica.Get(bg, id); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("Get %s on the replica after DeleteMany: %v, want not found", id, err)
			}
		}
	}
	// A server that lost the script (NOSCRIPT in the pipeline): each item
	// runs on its own, loading it, and is waited for.
	mc := pair.Master.Client()
	defer mc.Close()
	must(t, mc.ScriptFlush(bg).Err())
	ms, _ := waitedMatches("flushed-", 3)
	must(t, waited.CreateMany(bg, ms))
	for _, m := range ms {
		if got, err := onReplica.Get(bg, m.ID); err != nil || got.Code != m.Code {
			t.Fatalf("Get %s on the replica after CreateMany on a server without the script: %+v, %v", m.ID, got, err)
		}
	}
	for op, ts := range trips {
		if ts[0] != ts[1] || ts[1] > bound {
			t.Errorf("%s with WaitReplicas: %d round trips for 5 items, %d for 40: want the same, at most %d", op, ts[0], ts[1], bound)
		}
	}
	t.Logf("round trips (5 items, 40 items): %v", trips)
}

// TestWaitReplicasBatchUnreplicated: with the replica stopped, the items
// of a waited batch that were applied get the single call's error for a
// run not acknowledged (runtime.ErrUnknownOutcome saying "acknowledged by
// 0 of 1 replicas") and are on the master; an item refused by its checks
// gets its own error. The batch is still one pipeline with one WAIT.
func TestWaitReplicasBatchUnreplicated(t *testing.T) {
	pair := redistest.StartPair(t)
	patient, _, _ := waitedBatch(t, pair, 10*time.Second)
	waited, plain, last := waitedBatch(t, pair, 200*time.Millisecond)
	must(t, patient.Create(bg, &model.Match{ID: "held", Code: "held"}))
	const n, bound = 6, 3
	ms, ids := waitedMatches("u-", n)
	ms[n-1].ID = "held" // refused: it exists
	ids[n-1] = "held"
	must(t, pair.Replica.Pause())
	defer func() { must(t, pair.Replica.Resume()) }()

	check := func(op string, err error, refused error) {
		t.Helper()
		if trips := last().RoundTrips; trips > bound {
			t.Errorf("%s of %d items with WaitReplicas: %d round trips, want at most %d", op, n, trips, bound)
		}
		var be *runtime.BatchError
		if !errors.As(err, &be) || len(be.Items) != n {
			t.Fatalf("%s with the replica stopped: %v, want every item failed", op, err)
		}
		for _, it := range be.Items[:n-1] {
			wantKind(t, fmt.Sprintf("%s item %d", op, it.Index), it.Err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")
		}
		if it := be.Items[n-1]; it.Index != n-1 || !errors.Is(it.Err, refused) {
			t.Fatalf("%s item %d (refused by its checks): %v, want %v", op, it.Index, it.Err, refused)
		}
	}

	check("CreateMany", waited.CreateMany(bg, ms), runtime.ErrDuplicate)
	for _, m := range ms[:n-1] {
		if got, err := plain.GetByCode(bg, m.Code); err != nil || got.ID != m.ID || got.Version != 1 {
			t.Fatalf("GetByCode %s on the master after the unacknowledged CreateMany: %+v, %v", m.Code, got, err)
		}
	}
	for _, m := range ms {
		m.Code += "-new"
		m.Version = 1
	}
	ms[n-1].Version = 7 // refused: a version conflict
	check("PutMany", waited.PutMany(bg, ms), runtime.ErrConflict)
	for _, m := range ms[:n-1] {
		if got, err := plain.GetByCode(bg, m.Code); err != nil || got.ID != m.ID || got.Version != 2 {
			t.Fatalf("GetByCode %s on the master after the unacknowledged PutMany: %+v, %v", m.Code, got, err)
		}
	}
	ids[n-1] = "absent" // refused: no such block
	check("DeleteMany", waited.DeleteMany(bg, ids), runtime.ErrNotFound)
	for _, id := range ids[:n-1] {
		if _, err := plain.Get(bg, id); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Get %s on the master after the unacknowledged DeleteMany: %v, want not found", id, err)
		}
	}
}
