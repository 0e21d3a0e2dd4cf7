package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// defaultNode returns the shared node's client and one to the same
// server built with go-redis's default of ContextTimeoutEnabled (false).
func defaultNode(t *testing.T) (srv, c *redis.Client) {
	srv = redistest.Server(t)
	opts := *srv.Options()
	opts.ContextTimeoutEnabled = false
	c = redis.NewClient(&opts)
	t.Cleanup(func() { c.Close() })
	return srv, c
}

// TestEnsureNeedsContextTimeout: a client that ignores context deadlines
// (go-redis without ContextTimeoutEnabled) is taken as it is, through a
// client derived from it (DeadlineClient) that applies them; under
// Options.StrictDeadlines EnsureIndexes refuses it with
// redisstore.ErrNoContextTimeout, and takes a client with the option.
func TestEnsureNeedsContextTimeout(t *testing.T) {
	srv, c := defaultNode(t)
	opts := *c.Options()
	if redisstore.ContextTimeouts(c) || !redisstore.ContextTimeouts(srv) {
		t.Fatal("ContextTimeouts does not read the client's options")
	}
	if d := redisstore.DeadlineClient(c); !redisstore.ContextTimeouts(d) || d == redis.UniversalClient(c) || redisstore.DeadlineClient(c) != d {
		t.Fatalf("DeadlineClient of a client without ContextTimeoutEnabled: %v, want one client of its own that has it", d)
	}
	if c.Options().ContextTimeoutEnabled {
		t.Fatal("DeadlineClient changed the options of the client it was given")
	}
	if d := redisstore.DeadlineClient(srv); d != redis.UniversalClient(srv) {
		t.Fatalf("DeadlineClient of a client with ContextTimeoutEnabled: %v, want the client itself", d)
	}
	must(t, model.NewMatchRedisRepository(c).EnsureIndexes(bg))

	strict := redisstore.WithOptions(c, redisstore.Options{StrictDeadlines: true})
	err := model.NewMatchRedisRepository(strict).EnsureIndexes(bg)
	var re *runtime.Error
	if !errors.Is(err, redisstore.ErrNoContextTimeout) || !errors.As(err, &re) {
		t.Fatalf("EnsureIndexes under StrictDeadlines with a client without ContextTimeoutEnabled: %v, want a *runtime.Error matching ErrNoContextTimeout", err)
	}
	err = model.NewMatchRedisRepository(c, redisstore.Options{StrictDeadlines: true}).EnsureIndexes(bg)
	if !errors.Is(err, redisstore.ErrNoContextTimeout) {
		t.Fatalf("EnsureIndexes with the option StrictDeadlines: %v, want ErrNoContextTimeout", err)
	}
	must(t, model.NewMatchRedisRepository(redisstore.WithOptions(srv, redisstore.Options{StrictDeadlines: true})).EnsureIndexes(bg))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{opts.Addr}})
	defer cc.Close()
	if redisstore.ContextTimeouts(cc) || !redisstore.ContextTimeouts(redisstore.DeadlineClient(cc)) {
		t.Fatal("ContextTimeouts of a cluster client without ContextTimeoutEnabled, or of the client derived from it")
	}
}

// hookCount counts the commands and pipelines a client's hook sees.
type hookCount struct{ n *atomic.Int64 }

func (hookCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h hookCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h hookCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// TestDefaultClientHooks: the repositories opened over a client without
// ContextTimeoutEnabled send their commands through DeadlineClient of it,
// which has none of the client's hooks (go-redis copies none): a hook
// added to DeadlineClient's result sees them, on a single node and on a
// cluster, and the client's own hook only the application's commands.
func TestDefaultClientHooks(t *testing.T) {
	_, c := defaultNode(t)
	cl := redistest.Cluster(t)
	copts := *cl.Options()
	copts.ContextTimeoutEnabled = false
	cc := redis.NewClusterClient(&copts)
	defer cc.Close()
	for _, c := range []redis.UniversalClient{c, cc} {
		var own, derived atomic.Int64
		c.AddHook(hookCount{&own})
		redisstore.DeadlineClient(c).AddHook(hookCount{&derived})
		matches := model.NewMatchRedisRepository(c)
		must(t, matches.EnsureIndexes(bg))
		must(t, matches.Create(bg, &model.Match{ID: "h1", Code: "code-h1", Region: "r", Venue: model.Venue{City: "Rome"}}))
		if _, err := matches.Get(bg, "h1"); err != nil {
			t.Fatal(err)
		}
		if derived.Load() < 2 || own.Load() != 0 {
			t.Fatalf("%T: the hook of DeadlineClient saw %d commands of EnsureIndexes, a Create and a Get (want 2 or more), the client's own %d (want 0)", c, derived.Load(), own.Load())
		}
		must(t, c.Ping(bg).Err())
		if own.Load() != 1 {
			t.Fatalf("%T: the client's own hook saw %d commands of a Ping, want 1", c, own.Load())
		}
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
