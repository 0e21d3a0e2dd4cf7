package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// wantKind fails t unless err is of kind and its message says want.
func wantKind(t *testing.T, what string, err, kind error, want string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(fmt.Sprint(err), want) {
		t.Fatalf("%s: %v, want %v saying %q", what, err, kind, want)
	}
	var re *runtime.Error
	if !errors.As(err, &re) {
		t.Fatalf("%s: %T is not a *runtime.Error", what, err)
	}
}

// TestWaitReplicasWithoutReplicas: with Options.WaitReplicas=1 on servers
// that have no replica, WAIT answers 0 and no write is acknowledged. On a
// single node the one script run has written the block, its lookups and
// its listing on the master: runtime.ErrUnknownOutcome saying "acknowledged
// by 0 of 1 replicas". On a cluster, a claim (or another lookup entry)
// that is not acknowledged stops the write before its block
// (runtime.ErrUnavailable, block unchanged, the claim undone so that
// another block can take the value at once), and a block write that is not
// acknowledged is runtime.ErrUnknownOutcome (applied on the master).
func TestWaitReplicasWithoutReplicas(t *testing.T) {
	opts := redisstore.Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond}
	t.Run("single", func(t *testing.T) {
		c := redistest.Server(t)
		plain := ensured(t, model.NewMatchRedisRepository(c))
		waited := model.NewMatchRedisRepository(redisstore.WithOptions(c, opts))
		if waited.Client() != redis.UniversalClient(c) {
			t.Fatalf("Client() is %T, want the client given to WithOptions", waited.Client())
		}
		err := waited.Create(bg, &model.Match{ID: "m", Code: "a"})
		wantKind(t, "Create", err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")
		m, err := plain.GetByCode(bg, "a")
		must(t, err)
		if m.ID != "m" {
			t.Fatalf("GetByCode(a) = %s", m.ID)
		}
		err = waited.SetCode(bg, "m", "b")
		wantKind(t, "SetCode", err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")
		if _, err := plain.GetByCode(bg, "b"); err != nil {
			t.Fatalf("GetByCode(b) after the unacknowledged rename (applied on the master): %v", err)
		}
		// Without the option the same client writes as before.
		must(t, model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{})).SetCode(bg, "m", "c"))
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.Cluster(t)
		plain := ensured(t, model.NewMatchRedisRepository(c))
		waited := model.NewMatchRedisRepository(redisstore.WithOptions(c, opts))
		err := waited.Create(bg, &model.Match{ID: "m", Code: "a"})
		wantKind(t, "Create", err, runtime.ErrUnavailable, "claim not replicated, block not written")
		if _, err := plain.Get(bg, "m"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Get after the refused Create: %v, want not found", err)
		}
		// The claim was undone: another block takes the value at once
		// (a claim left behind would hold it for StaleAfter).
		must(t, plain.Create(bg, &model.Match{ID: "n", Code: "a", Tags: []string{"t"}}))
		// A non-unique lookup entry not acknowledged: block unchanged.
		err = waited.SetTags(bg, "n", []string{"u"})
		wantKind(t, "SetTags", err, runtime.ErrUnavailable, "lookup entries not replicated")
		n, err := plain.Get(bg, "n")
		must(t, err)
		if len(n.Tags) != 1 || n.Tags[0] != "t" {
			t.Fatalf("tags after the refused SetTags: %v", n.Tags)
		}
		// A block write without lookup changes: applied on the master.
		start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		err = waited.SetStart(bg, "n", start)
		wantKind(t, "SetStart", err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")
		n, err = plain.Get(bg, "n")
		must(t, err)
		if !n.Start.Equal(start) {
			t.Fatalf("start after the unacknowledged SetStart: %v, want %v (on the master)", n.Start, start)
		}
		clean(t, "the refused writes", plain.Repair)
	})
}

// matchKey is the hash of Match block id (keys.go).
func matchKey(id string) string { return "matches:{" + id + "}" }

// emptySlotID returns a new match id (prefix and a number) whose block's
// slot holds no key and is not on master not.
func emptySlotID(t *testing.T, rc *redistest.Replicated, prefix string, not *redistest.Node) string {
	t.Helper()
	for i := range 1000 {
		id := fmt.Sprint(prefix, i)
		m := rc.MasterOf(t, matchKey(id))
		if m == not {
			continue
		}
		mc := m.Client()
		slot, err := mc.ClusterKeySlot(bg, matchKey(id)).Result()
		must(t, err)
		n, err := mc.ClusterCountKeysInSlot(bg, int(slot)).Result()
		mc.Close()
		must(t, err)
		if n == 0 {
			return id
		}
	}
	t.Fatalf("no empty slot for a new %s block", prefix)
	return ""
}

// otherShard returns a match id whose block is not on the master of key.
func otherShard(t *testing.T, rc *redistest.Replicated, key string) string {
	t.Helper()
	m := rc.MasterOf(t, key)
	for i := range 100 {
		id := fmt.Sprint("x", i)
		if rc.MasterOf(t, matchKey(id)) != m {
			return id
		}
	}
	t.Fatalf("no block key off the master of %s", key)
	return ""
}

// TestFailover runs a Redis Cluster of 3 masters and 3 replicas and kills
// the master holding the claims of Match.code:
//
//   - with a replica stopped (SIGSTOP), a rename with WaitReplicas=1 fails
//     with runtime.ErrUnavailable (its claim is not acknowledged, the block
//     is not written) and a block write on a shard whose replica is
//     stopped fails with runtime.ErrUnknownOutcome, instead of being
//     acknowledged;
//   - a waited run (EVALSHA and WAIT in one pipeline on the node's own
//     client) follows MOVED (a slot moved behind the client's back) and
//     ASK (a slot in migration) to the node that serves the block;
//   - with WaitReplicas=1, every acknowledged create and rename survives
//     the SIGKILL of that master and the promotion of its replica: each
//     block is found by its new code only, and no code can be given to a
//     second block;
//   - without the option (a documented demonstration, deterministic since
//     the replica is stopped and its link dropped while the master
//     acknowledges): the old master, restarted, rejoins as the replica;
//     cut off while a rename is acknowledged, its master killed and it
//     promoted, the claim
//     of the rename is lost: the block holds the new code, GetByCode does
//     not find it, a second block takes the same code, and Repair reports
//     the two holders and gives the claim to the first in block-key order.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster and fails over twice (about 4 s)")
	}
	began := time.Now()
	rc := redistest.StartReplicated(t)
	c := rc.Client
	ensured(t, model.NewMatchRedisRepository(withTimeouts(t, c)))
	plain := model.NewMatchRedisRepository(c)
	waited := model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 2 * time.Second}))
	quick := model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond}))
	const claims = "{matches.code}:claims" // keys.go
	claimsMaster := rc.MasterOf(t, claims)
	t.Logf("claims of code on %s (%s)", claimsMaster.Addr, claims)

	const n = 12
	for i := range n {
		must(t, waited.Create(bg, &model.Match{ID: fmt.Sprint("m", i), Code: fmt.Sprint("c", i)}))
	}

	// A replica kept behind: the writes that need it are refused.
	rep := rc.ReplicaOf(t, claims)
	must(t, rep.Pause())
	err := quick.SetCode(bg, "m0", "behind")
	must(t, rep.Resume())
	wantKind(t, "SetCode with the claims' replica stopped", err, runtime.ErrUnavailable, "acknowledged by 0 of 1 replicas")
	if m, err := plain.Get(bg, "m0"); err != nil || m.Code != "c0" {
		t.Fatalf("m0 after the refused rename: %v %v, want code c0", m, err)
	}
	other := otherShard(t, rc, claims)
	must(t, waited.Create(bg, &model.Match{ID: other, Code: "other"}))
	rep = rc.ReplicaOf(t, matchKey(other))
	must(t, rep.Pause())
	err = quick.SetStart(bg, other, time.Unix(7, 0))
	must(t, rep.Resume())
	wantKind(t, "SetStart with the block's replica stopped", err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")

	// A slot moved behind the client's back: the waited run follows the
	// MOVED it gets to the new master (and waits there).
	to := rc.MasterOf(t, claims)
	moved := emptySlotID(t, rc, "moved", to)
	rc.MoveSlot(t, matchKey(moved), to)
	must(t, waited.Create(bg, &model.Match{ID: moved, Code: moved}))
	if m, err := plain.GetByCode(bg, moved); err != nil || m.ID != moved {
		t.Fatalf("GetByCode(%s) after a create that followed MOVED: %v %v", moved, m, err)
	}
	if got := rc.MasterOf(t, matchKey(moved)); got != to {
		t.Fatalf("the block of %s is on %s, want %s", moved, got.Addr, to.Addr)
	}

	// A slot in migration: the waited run of a new block follows the ASK
	// of the source to the importing node (ASKING first).
	asked := emptySlotID(t, rc, "asked", to)
	rc.StartMigrating(t, matchKey(asked), to)
	must(t, waited.Create(bg, &model.Match{ID: asked, Code: asked}))
	rc.MoveSlot(t, matchKey(asked), to)
	if m, err := plain.GetByCode(bg, asked); err != nil || m.ID != asked {
		t.Fatalf("GetByCode(%s) after a create that followed ASK: %v %v", asked, m, err)
	}

	// Acknowledged renames survive the failover.
	for i := range n {
		must(t, waited.SetCode(bg, fmt.Sprint("m", i), fmt.Sprint("r", i)))
	}
	replica := rc.ReplicaOf(t, claims)
	must(t, claimsMaster.Kill())
	rc.Promote(t, replica, claims)
	for i := range n {
		id, code := fmt.Sprint("m", i), fmt.Sprint("r", i)
		m, err := plain.GetByCode(bg, code)
		if err != nil || m.ID != id {
			t.Fatalf("GetByCode(%s) after the failover: %v %v, want %s", code, m, err, id)
		}
		if _, err := plain.GetByCode(bg, fmt.Sprint("c", i)); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(c%d) after the failover: %v, want not found", i, err)
		}
		err = plain.Create(bg, &model.Match{ID: "dup" + code, Code: code})
		if !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("Create of a second block with code %s after the failover: %v, want ErrDuplicate", code, err)
		}
	}
	rep0, err := plain.Repair(bg)
	must(t, err)
	if len(rep0.Conflicts) != 0 {
		t.Fatalf("Repair after the failover: conflicts %v", rep0.Conflicts)
	}

	// Without the option: the old master comes back as the replica, is
	// stopped, and a rename acknowledged meanwhile is lost.
	rc.Restart(t, claimsMaster)
	newMaster := rc.MasterOf(t, claims)
	if newMaster != replica || rc.ReplicaOf(t, claims) != claimsMaster {
		t.Fatalf("after the restart: master %v, replica %v", newMaster.Addr, rc.ReplicaOf(t, claims).Addr)
	}
	// Stopped, and its link dropped by the master (a stopped replica still
	// receives into its socket what the master sends before dying): the
	// master keeps the rename in its backlog only.
	must(t, claimsMaster.Pause())
	mc := newMaster.Client()
	must(t, mc.ClientKillByFilter(bg, "TYPE", "replica").Err())
	mc.Close()
	must(t, plain.SetCode(bg, other, "lost"))
	must(t, newMaster.Kill())
	must(t, claimsMaster.Resume())
	rc.Promote(t, claimsMaster, claims)
	m, err := plain.Get(bg, other)
	must(t, err)
	if m.Code != "lost" {
		t.Fatalf("%s (on another shard) holds code %q, want the acknowledged rename", other, m.Code)
	}
	if _, err := plain.GetByCode(bg, "lost"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCode(lost) after losing the claim: %v, want not found (the demonstration no longer loses it)", err)
	}
	must(t, plain.Create(bg, &model.Match{ID: "second", Code: "lost"}))
	t.Logf("without WaitReplicas: the claim of an acknowledged rename was lost and %q and %q both hold code \"lost\"", other, "second")
	// Repair reports both holders and gives the claim to the first in
	// block-key order ("second" < "x...").
	rep1, err := plain.Repair(bg)
	must(t, err)
	wantConflict := []runtime.UniqueConflict{{Lookup: "matches.code", Value: `"lost"`, Holders: []string{`"second"`, fmt.Sprintf("%q", other)}, Kept: `"second"`}}
	if !reflect.DeepEqual(rep1.UniqueConflicts, wantConflict) {
		t.Fatalf("Repair after the lost claim: %+v, want %+v", rep1.UniqueConflicts, wantConflict)
	}
	if m, err := plain.GetByCode(bg, "lost"); err != nil || m.ID != "second" {
		t.Fatalf("GetByCode(lost) after Repair: %v %v, want second", m, err)
	}
	// A hang check only: it takes about 4 s.
	d := time.Since(began)
	t.Logf("took %s", d)
	if d > 90*time.Second {
		t.Errorf("the failover test took %s", d)
	}
}

// pipelineLoss loses the replies of the first pipeline that runs a script
// on key: the pipeline is sent and run, its commands then fail.
type pipelineLoss struct {
	key  string
	done atomic.Bool
}

func (f *pipelineLoss) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *pipelineLoss) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *pipelineLoss) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		hit := false
		for _, cmd := range cmds {
			if a := cmd.Args(); cmd.Name() == "evalsha" && len(a) > 3 {
				n, _ := a[2].(int)
				for _, k := range a[3:min(len(a), 3+n)] {
					hit = hit || k == f.key
				}
			}
		}
		if !hit || f.done.Swap(true) {
			return next(ctx, cmds)
		}
		_ = next(ctx, cmds)
		for _, cmd := range cmds {
			cmd.SetErr(errInjected)
		}
		return errInjected
	}
}

// TestWaitReplicasLostReply: with WaitReplicas, a write whose reply was
// lost and that the read-back finds applied is not reported done (no WAIT
// confirmed it): runtime.ErrUnknownOutcome saying so, the write on the
// master. Without the option the same lost reply completes the write
// (TestLostReply).
func TestWaitReplicasLostReply(t *testing.T) {
	srv := redistest.Server(t)
	c := redis.NewClient(srv.Options())
	defer c.Close()
	f := &pipelineLoss{key: matchKey("m")}
	c.AddHook(f)
	plain := ensured(t, model.NewMatchRedisRepository(srv))
	must(t, plain.Create(bg, &model.Match{ID: "m", Code: "a"}))
	waited := model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond}))
	err := waited.SetCode(bg, "m", "b")
	if !f.done.Load() {
		t.Fatal("no reply lost")
	}
	wantKind(t, "SetCode with a lost reply", err, runtime.ErrUnknownOutcome, "no WAIT confirmed its replicas")
	if m, err := plain.GetByCode(bg, "b"); err != nil || m.ID != "m" {
		t.Fatalf("GetByCode(b): %v %v, want m (applied on the master)", m, err)
	}
}

// TestWaitReplicasResentRun: go-redis resends a pipeline whose connection
// closed before the reply (its MaxRetries). With WaitReplicas, the resent
// script run finds its token (the first send was applied) and writes
// nothing, on a new connection: its WAIT must still cover the write of
// the first send, or a replica that never received it would be counted.
// Here the replica is stopped and the reply of the first send dropped:
// the write fails with runtime.ErrUnknownOutcome instead of being
// confirmed, and is applied once. (On the Redis under test, a WAIT on a
// connection that has written nothing waits for the master's writes so
// far, which is what makes the resend safe: this test pins that down.)
func TestWaitReplicasResentRun(t *testing.T) {
	pair := redistest.StartPair(t)
	mc := pair.Master.Client()
	defer mc.Close()
	p := newDropProxy(t, pair.Master.Addr, "resent-marker")
	c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
	defer c.Close()
	ensured(t, model.NewMatchRedisRepository(withTimeouts(t, mc)))
	plain := model.NewMatchRedisRepository(mc)
	waited := model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 300 * time.Millisecond}))
	// The replica acknowledges (a generous wait: a loaded machine may take
	// longer than the 300 ms of the write under test).
	patient := model.NewMatchRedisRepository(redisstore.WithOptions(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 10 * time.Second}))
	must(t, patient.Create(bg, &model.Match{ID: "m", Code: "a"}))
	must(t, pair.Replica.Pause())
	p.armed.Store(true)
	err := waited.SetCode(bg, "m", "resent-marker")
	must(t, pair.Replica.Resume())
	if p.dropped.Load() != 1 {
		t.Fatalf("%d replies dropped, want 1", p.dropped.Load())
	}
	wantKind(t, "SetCode resent with the replica stopped", err, runtime.ErrUnknownOutcome, "acknowledged by 0 of 1 replicas")
	if m, err := plain.GetByCode(bg, "resent-marker"); err != nil || m.ID != "m" || m.Version != 2 {
		t.Fatalf("GetByCode after the resent run: %+v %v, want m at version 2 (applied once, on the master)", m, err)
	}
}
