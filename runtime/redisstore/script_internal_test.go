package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
)

// migrating puts the slot of key in MIGRATING on its owner (IMPORTING on
// another master), moving no key, and returns the function that makes it
// stable again.
func migrating(t *testing.T, cc *redis.ClusterClient, key string) func() {
	t.Helper()
	ctx := context.Background()
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var owner, target redis.ClusterNode
	for _, r := range rs {
		if int64(r.Start) <= slot && slot <= int64(r.End) {
			owner = r.Nodes[0]
		}
	}
	for _, r := range rs {
		if r.Nodes[0].ID != owner.ID {
			target = r.Nodes[0]
		}
	}
	oc, tc := redis.NewClient(&redis.Options{Addr: owner.Addr}), redis.NewClient(&redis.Options{Addr: target.Addr})
	if err := tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", owner.ID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := oc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", target.ID).Err(); err != nil {
		t.Fatal(err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		for _, c := range []*redis.Client{oc, tc} {
			if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
				t.Error(err)
			}
			c.Close()
		}
	}
}

// TestRunAfterEmptyingAKey: in a slot migrating away, a run that empties a
// key and then reads or removes from it again (the second of two entry
// removals when the first removed the table's last entry; a conditional
// removal after it) completes: the key reads as missing instead of
// failing the run midway ("non local key"). A run that writes a key it
// emptied fails, and its error says that it had changed keys, so that it
// is not taken for a refusal before any change.
func TestRunAfterEmptyingAKey(t *testing.T) {
	ctx := context.Background()
	cc := redistest.Cluster(t)
	z, meta := "{t}", "{t}:meta"
	if err := cc.ZAdd(ctx, z, redis.Z{Member: "A"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.HSet(ctx, meta, "A", "i 001", "B", "j 001").Err(); err != nil {
		t.Fatal(err)
	}
	restore := migrating(t, cc, z)
	defer restore()
	p := &prog{}
	zi, mi := p.k(z), p.k(meta)
	p.change("irem", zi, mi, "0", "A", "", "", "i", "002")
	p.change("hdel", mi, "B")
	p.change("irem", zi, mi, "0", "B", "", "", "j", "002")
	p.change("hdelif", mi, "B", "j 001")
	if _, err := p.run(ctx, cc); err != nil {
		t.Fatalf("removals after the keys were emptied: %v", err)
	}
	for _, k := range []string{z, meta} {
		// (a missing key: the owner answers ASK, which go-redis follows)
		if n, err := cc.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("EXISTS %s after the run: %d, %v", k, n, err)
		}
	}
	restore()
	if err := cc.ZAdd(ctx, z, redis.Z{Member: "A"}).Err(); err != nil {
		t.Fatal(err)
	}
	defer migrating(t, cc, z)()
	q := &prog{}
	b := q.k(z)
	q.change("del", b)
	q.change("zadd", b, "B")
	_, err := q.run(ctx, cc)
	var se *scriptError
	if !errors.As(err, &se) || !se.wrote || unavailable(err) {
		t.Fatalf("a run writing a key it emptied: %v, want a script error that says it changed keys", err)
	}
}
