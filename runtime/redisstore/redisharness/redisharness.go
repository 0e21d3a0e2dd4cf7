// Package redisharness is the Redis adapter's test harness
// (runtime/storetest.Harness), on a single node and on a 3-master Cluster
// that redistest starts: what the adapter declares, how its requests are
// counted, and its hooks behind the repositories' back (a dropped claim, a
// corrupted value, a pause). Every suite that runs on every store takes it,
// from runtime/redisstore/suite.
//
// The shared servers are stopped when the tests of a package end: call Main
// from TestMain.
package redisharness

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	redislayout "github.com/noamgen/noamgen/runtime/redisstore/layout"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// servers are the servers the package's harnesses share.
var servers = &storetest.Servers{Harness: "redisharness", Stop: redistest.Stop}

// Main runs the tests of a package and stops the servers they shared.
func Main(m *testing.M) { servers.Main(m) }

// Caps are the capabilities the Redis adapter declares on a single
// node (every write one script run) and on a cluster (the lookup
// protocol, AtomicLookups false).
func Caps(cluster bool) runtime.Caps {
	return runtime.Caps{Name: "redis", System: "redis", OrderedScan: true, AtomicLookups: !cluster, MaxValueBytes: 512 << 20, MaxKeyBytes: 512 << 20, MaxIndexKeyBytes: 512<<20 - 1, MaxDepth: bsonval.MaxDepth}
}

// Node is the harness of a single Redis node, shared by the tests of the
// package and flushed before each.
func Node() storetest.Harness {
	return harness("redis", false, func(t *testing.T) storetest.DB {
		servers.Need(t)
		return storetest.DB{Store: "redis", Handle: countRedis(redistest.Server(t))}
	})
}

// Cluster is the harness of a 3-master Redis Cluster, shared by the
// tests of the package and flushed before each: blocks, listings and
// index tables spread over the slots, with the lookup protocol.
func Cluster() storetest.Harness {
	return harness("redis-cluster", true, func(t *testing.T) storetest.DB {
		servers.Need(t)
		return storetest.DB{Store: "redis", Handle: countRedis(redistest.Cluster(t))}
	})
}

// NodePrivate is the harness of a single Redis node of each test's own,
// paused with SIGSTOP (DB.Pause): for Deadlines.
func NodePrivate() storetest.Harness {
	return harness("redis", false, func(t *testing.T) storetest.DB {
		c, p := redistest.PrivateServer(t)
		return storetest.DB{Store: "redis", Handle: countRedis(c), Pause: p.Pause}
	})
}

// ClusterPrivate is the harness of a 3-master Redis Cluster of each
// test's own, every master paused with SIGSTOP (DB.Pause): for Deadlines.
func ClusterPrivate() storetest.Harness {
	return harness("redis-cluster", true, func(t *testing.T) storetest.DB {
		c, p := redistest.PrivateCluster(t)
		return storetest.DB{Store: "redis", Handle: countRedis(c), Pause: p.Pause}
	})
}

func harness(name string, cluster bool, open func(t *testing.T) storetest.DB) storetest.Harness {
	mode := redislayout.Node
	if cluster {
		mode = redislayout.Cluster
	}
	return storetest.Harness{
		Name:        name,
		Caps:        Caps(cluster),
		Concurrent:  true,
		Batches:     !cluster, // two pipelines; a cluster runs the single calls
		Open:        open,
		Declaration: redislayout.Store,
		Requests:    func() int { return int(redisRequests.n.Load()) },
		Mode:        mode,
		// A unique lookup's claims hash (keys.go) maps each value to its
		// holder.
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			if err := db.Handle.(redis.UniversalClient).HDel(context.Background(), "{"+collection+"."+lookup+"}:claims", string(value)).Err(); err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A BSON string whose length runs past the value.
			key := collection + ":{" + id + "}"
			if n, err := db.Handle.(redis.UniversalClient).HExists(context.Background(), key, entry).Result(); err != nil || !n {
				t.Fatalf("no entry %s of block %s: %v", entry, id, err)
			}
			if err := db.Handle.(redis.UniversalClient).HSet(context.Background(), key, entry, "\x02\xff\xff\xff\x7fx\x00").Err(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// redisRequests counts what the harnesses' clients send, as the
// declaration (runtime/redisstore/layout) counts it: one per command, one
// per pipeline (a script run is one command).
var redisRequests struct {
	n      atomic.Int64
	mu     sync.Mutex
	hooked map[redis.UniversalClient]bool
}

// countRedis adds the request counter to c once (the shared servers'
// clients are the same from test to test).
func countRedis(c redis.UniversalClient) redis.UniversalClient {
	redisRequests.mu.Lock()
	defer redisRequests.mu.Unlock()
	if redisRequests.hooked == nil {
		redisRequests.hooked = map[redis.UniversalClient]bool{}
	}
	if !redisRequests.hooked[c] {
		redisRequests.hooked[c] = true
		c.AddHook(redisCounter{})
	}
	return c
}

type redisCounter struct{}

func (redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		redisRequests.n.Add(1)
		return next(ctx, cmd)
	}
}
func (redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		redisRequests.n.Add(1)
		return next(ctx, cmds)
	}
}

// DefaultClient returns harness h whose repositories get, in place of the
// harness's client, one built from its options with go-redis's default of
// ContextTimeoutEnabled (false), over the same servers: the client most
// applications already have.
func DefaultClient(h storetest.Harness) storetest.Harness {
	open := h.Open
	h.Open = func(t *testing.T) storetest.DB {
		db := open(t)
		var c redis.UniversalClient
		switch hc := db.Handle.(type) {
		case *redis.Client:
			o := *hc.Options()
			o.ContextTimeoutEnabled = false
			c = redis.NewClient(&o)
		case *redis.ClusterClient:
			o := *hc.Options()
			o.ContextTimeoutEnabled = false
			c = redis.NewClusterClient(&o)
		default:
			t.Fatalf("redisharness: no default client for a %T", db.Handle)
		}
		t.Cleanup(func() { _ = c.Close() })
		db.Handle = countRedis(c)
		return db
	}
	return h
}
