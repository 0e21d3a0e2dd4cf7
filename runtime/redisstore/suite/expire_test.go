package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore/redisharness"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
)

// expiringKeys returns the keys of c that have a native expiry.
func expiringKeys(t *testing.T, c redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if d, err := c.PTTL(ctx, k).Result(); err == nil && d > 0 {
			out = append(out, k)
		}
	}
	return out
}

// TestNativeExpiry: with the real clock, a block hash gets PEXPIREAT of
// its expires time and Redis removes it; its claim then frees the unique
// value for another block, and Repair removes the index members and the
// listing member it left. The expiry moves with SetExpires and goes with
// the zero time. The wait polls: no timing is asserted.
func TestNativeExpiry(t *testing.T) {
	ctx := context.Background()
	db := redisharness.Node().Open(t)
	sessions := expiring.NewSessionRedisRepository(db.Handle.(redis.UniversalClient))
	if err := sessions.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}

	// A block without expiry has none; SetExpires gives it one, the zero
	// time takes it away.
	if err := sessions.Create(ctx, &expiring.Session{ID: "keep", Token: "k", User: "u"}); err != nil {
		t.Fatal(err)
	}
	if ks := expiringKeys(t, db.Handle.(redis.UniversalClient)); len(ks) != 0 {
		t.Fatalf("keys with an expiry after a Create without one: %q", ks)
	}
	if err := sessions.SetExpires(ctx, "keep", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ks := expiringKeys(t, db.Handle.(redis.UniversalClient)); len(ks) != 1 {
		t.Fatalf("keys with an expiry after SetExpires: %q, want the block's hash", ks)
	}
	if err := sessions.Update(ctx, "keep", expiring.SessionUpdate{Expires: &time.Time{}}); err != nil {
		t.Fatal(err)
	}
	if ks := expiringKeys(t, db.Handle.(redis.UniversalClient)); len(ks) != 0 {
		t.Fatalf("keys with an expiry after the zero time: %q", ks)
	}

	// A block that expires in a second: Redis removes its hash.
	if err := sessions.Create(ctx, &expiring.Session{ID: "s1", Token: "t1", User: "u", Expires: time.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	ks := expiringKeys(t, db.Handle.(redis.UniversalClient))
	if len(ks) != 1 {
		t.Fatalf("keys with an expiry after a Create with one: %q, want the block's hash", ks)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := db.Handle.(redis.UniversalClient).Exists(ctx, ks[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis has not removed %s 30 s after it expired", ks[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := sessions.Get(ctx, "s1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a block Redis removed: %v", err)
	}

	// Its unique value is free: the claim of a block that is gone.
	if err := sessions.Create(ctx, &expiring.Session{ID: "s2", Token: "t1", User: "u"}); err != nil {
		t.Fatalf("Create with the unique value of a block Redis removed: %v", err)
	}
	got, err := sessions.GetByToken(ctx, "t1")
	if err != nil || got.ID != "s2" {
		t.Fatalf("GetByToken(t1) = %v, %v; want s2", got, err)
	}
	page, err := sessions.ListByUser(ctx, "u", runtime.PageRequest{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("ListByUser(u): %d sessions, %v; want keep and s2", len(page.Items), err)
	}

	// Repair removes what the expiry left: s1's member of the user lookup.
	rep, err := sessions.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed == 0 {
		t.Errorf("Repair after a native expiry removed nothing: %+v", rep)
	}
	if rep, err := sessions.Repair(ctx); err != nil || rep.Removed != 0 || rep.Added != 0 {
		t.Errorf("a second Repair: %+v, %v; want nothing to fix", rep, err)
	}
}
