package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestEnsureNeedsContextTimeout: a client that ignores context deadlines
// (go-redis without ContextTimeoutEnabled) makes EnsureIndexes fail with
// redisstore.ErrNoContextTimeout; with it, EnsureIndexes succeeds.
func TestEnsureNeedsContextTimeout(t *testing.T) {
	srv := redistest.Server(t)
	opts := *srv.Options()
	opts.ContextTimeoutEnabled = false
	c := redis.NewClient(&opts)
	defer c.Close()
	if redisstore.ContextTimeouts(c) || !redisstore.ContextTimeouts(srv) {
		t.Fatal("ContextTimeouts does not read the client's options")
	}
	err := model.NewMatchRedisRepository(c).EnsureIndexes(bg)
	var re *runtime.Error
	if !errors.Is(err, redisstore.ErrNoContextTimeout) || !errors.As(err, &re) {
		t.Fatalf("EnsureIndexes with a client without ContextTimeoutEnabled: %v, want a *runtime.Error matching ErrNoContextTimeout", err)
	}
	must(t, model.NewMatchRedisRepository(srv).EnsureIndexes(bg))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{opts.Addr}})
	defer cc.Close()
	if redisstore.ContextTimeouts(cc) {
		t.Fatal("ContextTimeouts of a cluster client without ContextTimeoutEnabled")
	}
}

// TestDeadlineDeleteCleanup: on a cluster, a Delete whose block is
// removed but whose listing and index masters are paused returns within
// its deadline plus runtime.CleanupTimeout (it used to return nil 12 s
// later: its cleanup ran without the caller's deadline), with an error
// matching context.DeadlineExceeded that says the block write is done;
// once resumed, the block is gone and Repair removes what was left.
func TestDeadlineDeleteCleanup(t *testing.T) {
	defer func(d time.Duration) { runtime.CleanupTimeout = d }(runtime.CleanupTimeout)
	runtime.CleanupTimeout = 500 * time.Millisecond
	c, p := redistest.PrivateCluster(t)
	matches := model.NewMatchRedisRepository(c)
	must(t, matches.EnsureIndexes(bg))
	must(t, matches.Create(bg, &model.Match{ID: "m2", Code: "code-m2", Region: "r", Tags: []string{"a", "b"}, Venue: model.Venue{City: "Rome"}}))

	// The node of the block: the one holding the hash named after m2.
	var blockNode string
	var keys []string
	var mu sync.Mutex // ForEachMaster calls fn on every master at once
	err := c.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, "*").Result()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range ks {
			if strings.Contains(k, "m2") && m.Type(ctx, k).Val() == "hash" {
				blockNode = m.Options().Addr
			}
		}
		keys = append(keys, ks...)
		return err
	})
	must(t, err)
	if blockNode == "" {
		t.Fatalf("no block hash of m2 among %q", keys)
	}
	resume := p.PauseWhere(t, func(addr string) bool { return addr != blockNode })
	defer resume()
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = matches.Delete(ctx, "m2")
	took := time.Since(start)
	resume()
	if bound := 200*time.Millisecond + runtime.CleanupTimeout + 2*time.Second; took > bound {
		t.Fatalf("Delete returned after %v (bound %v): %v", took, bound, err)
	}
	var re *runtime.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) || !strings.Contains(err.Error(), "block write is done") {
		t.Fatalf("Delete with its cleanup cut short: %v, want a *runtime.Error matching DeadlineExceeded saying the block write is done", err)
	}
	if _, err := matches.Get(bg, "m2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get after the Delete: %v, want ErrNotFound", err)
	}
	if _, err := matches.GetByCode(bg, "code-m2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCode after the Delete: %v, want ErrNotFound", err)
	}
	rep, err := matches.Repair(bg)
	must(t, err)
	if rep.Removed == 0 {
		t.Fatalf("Repair after the cut Delete removed nothing: %+v", rep)
	}
	clean(t, "the cut Delete", matches.Repair)
}
