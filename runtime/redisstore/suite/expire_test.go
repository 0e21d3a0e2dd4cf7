package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
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

// TestExpiryCheckReadsTheEntry: the check every write of an expiring
// aggregate sends first reads the expires entry alone (HGET of the entry;
// of the root entry under EAO), not the whole hash (HGETALL, before); a
// block that has expired is then read whole and removed, and the write
// finds no block.
func TestExpiryCheckReadsTheEntry(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		// The repository's clock runs a day ahead of the server's, so that
		// Redis's own expiry (PEXPIREAT) removes nothing during the test.
		now := time.Now().Add(24 * time.Hour).Truncate(time.Millisecond)
		clock := runtime.WithClock(func() time.Time { return now })
		sessions := expiring.NewSessionRedisRepository(c, clock)
		leases := expiring.NewLeaseRedisRepository(c, clock)
		must(t, sessions.EnsureIndexes(bg))
		must(t, leases.EnsureIndexes(bg))
		must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "t", User: "ann", Expires: now.Add(time.Hour)}))
		must(t, leases.Create(bg, &expiring.Lease{ID: "l", Holder: "h", Until: now.Add(time.Hour)}))
		var mu sync.Mutex
		var sent [][]any
		c.AddHook(hook{func(cmd redis.Cmder) {
			mu.Lock()
			sent = append(sent, cmd.Args())
			mu.Unlock()
		}})
		// The check is the write's first command; what the write then
		// reads is its own (an EAO root or a partitioned block may be read
		// whole to apply the change).
		first := func(what string, field string) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			if len(sent) == 0 || fmt.Sprint(sent[0][0]) != "hget" || fmt.Sprint(sent[0][2]) != field {
				t.Fatalf("%s sent %v first, want HGET of the block's %q entry", what, sent, field)
			}
			sent = nil
		}
		must(t, sessions.SetUser(bg, "s", "bob"))
		first("SetUser of a Session", "expires")
		must(t, leases.Put(bg, &expiring.Lease{ID: "l", Holder: "h2", Until: now.Add(2 * time.Hour)}))
		first("Put of an EAO Lease", "")

		// Past its expiry the block is read whole, removed, and the write
		// is the write over no block.
		now = now.Add(3 * time.Hour)
		if err := sessions.SetUser(bg, "s", "cy"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("SetUser of an expired session: %v, want ErrNotFound", err)
		}
		mu.Lock()
		var names []string
		for _, args := range sent {
			names = append(names, fmt.Sprint(args[0]))
		}
		mu.Unlock()
		if len(names) < 2 || names[0] != "hget" || names[1] != "hgetall" {
			t.Fatalf("the write over an expired block sent %v, want HGET, then HGETALL and the removal", names)
		}
		if n, err := c.Exists(bg, "sessions:{s}").Result(); err != nil || n != 0 {
			t.Fatalf("the expired block is still stored (%d, %v)", n, err)
		}
	})
}

// TestExpiresInThePast: a block written with an expires time the server's
// clock has passed already (a session ended now with SetExpires, or
// written late) is removed by its own write, whole: Redis deletes a key at
// once on PEXPIREAT of a past time, so the write sets the expiry after
// every other change, and no stray field of the write (its stamp, its
// mark) is left as a new hash that reads as a block of zero fields and
// that later writes fill.
func TestExpiresInThePast(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		sessions := expiring.NewSessionRedisRepository(c)
		must(t, sessions.EnsureIndexes(bg))
		_, cluster := c.(*redis.ClusterClient)
		// stored checks the block's hash: on a node it is gone; on a
		// cluster the server keeps it StaleAfter past its expiry (so that
		// a repository's purge, not the server, frees its unique values),
		// with no field a write of the expired block would have set.
		stored := func(what string) {
			t.Helper()
			n, err := c.Exists(bg, "sessions:{s}").Result()
			must(t, err)
			if n == 0 {
				return
			}
			h, _ := c.HGetAll(bg, "sessions:{s}").Result()
			if !cluster {
				t.Fatalf("%s: the block's hash is still there: %q", what, h)
			}
			ttl, err := c.PTTL(bg, "sessions:{s}").Result()
			must(t, err)
			if ttl <= 0 || ttl > redisstore.StaleAfter {
				t.Fatalf("%s: the expired block's hash is kept for %v, want at most StaleAfter (%v): %q", what, ttl, redisstore.StaleAfter, h)
			}
			for f, v := range h {
				if v == "eve" {
					t.Fatalf("%s: a write of the expired block changed its hash (%s=%s)", what, f, v)
				}
			}
		}
		gone := func(what string) {
			t.Helper()
			stored(what)
			if g, err := sessions.Get(bg, "s"); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("%s: Get = %+v, %v; want ErrNotFound", what, g, err)
			}
			if err := sessions.SetUser(bg, "s", "eve"); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("%s: SetUser = %v; want ErrNotFound", what, err)
			}
			stored(what + ", then SetUser")
		}
		past := time.Now().Add(-time.Minute)
		must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "t1", User: "ann", Expires: past}))
		gone("Create with a past expires time")

		must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "t2", User: "ann", Expires: time.Now().Add(time.Hour)}))
		must(t, sessions.SetExpires(bg, "s", past))
		gone("SetExpires of a past time")

		must(t, sessions.Put(bg, &expiring.Session{ID: "s", Token: "t3", User: "bob", Expires: past}))
		gone("Put with a past expires time")

		// What the removed blocks left (listing and index members) goes
		// with Repair, and their unique values are free.
		_, err := sessions.Repair(bg)
		must(t, err)
		must(t, sessions.Create(bg, &expiring.Session{ID: "s2", Token: "t3", User: "bob", Expires: time.Now().Add(time.Hour)}))
		if g, err := sessions.GetByToken(bg, "t3"); err != nil || g.ID != "s2" {
			t.Fatalf("GetByToken(t3) = %+v, %v; want s2", g, err)
		}
	})
}
