package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/redisstore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// current is the client of the subtest running (repos).
var current redis.UniversalClient

func repos(c redis.UniversalClient) storetest.Repos {
	current = counted(c)
	return storetest.Repos{
		Matches:  model.NewMatchRedisRepository(c),
		Journals: model.NewJournalRedisRepository(c),
		Cards:    model.NewCardRedisRepository(c),
		Replies:  model.NewReplyRedisRepository(c),
	}
}

// dropClaim removes the claim of a unique value from its lookup's claims
// hash (keys.go) behind the repository's back.
func dropClaim(t *testing.T, collection, lookup string, value []byte) {
	if err := current.HDel(context.Background(), "{"+collection+"."+lookup+"}:claims", string(value)).Err(); err != nil {
		t.Fatal(err)
	}
}

// corrupt overwrites entry of block id of the current subtest's Match
// collection with a BSON string whose length runs past the value.
func corrupt(t *testing.T, id, entry string) {
	key := "matches:{" + id + "}"
	if n, err := current.HExists(context.Background(), key, entry).Result(); err != nil || !n {
		t.Fatalf("no entry %s of block %s: %v", entry, id, err)
	}
	if err := current.HSet(context.Background(), key, entry, "\x02\xff\xff\xff\x7fx\x00").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestConformance runs the conformance suite on a single Redis node,
// flushed before each subtest: every write is one script run.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:        "redis",
		Caps:        runtime.Caps{Name: "redis", OrderedScan: true, AtomicLookups: true, MaxValueBytes: 512 << 20, MaxKeyBytes: 512 << 20, MaxIndexKeyBytes: 512<<20 - 1, MaxDepth: bsonval.MaxDepth},
		Concurrent:  true,
		Open:        func(t *testing.T) storetest.Repos { return repos(redistest.Server(t)) },
		DropClaim:   dropClaim,
		Corrupt:     corrupt,
		Declaration: layout.Store, Requests: sent, Mode: layout.Node,
	})
}

// TestConformanceCluster runs the conformance suite on a 3-master Redis
// Cluster: blocks, listings and index tables spread over the slots, with
// the lookup protocol.
func TestConformanceCluster(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:        "redis-cluster",
		Caps:        runtime.Caps{Name: "redis", OrderedScan: true, MaxValueBytes: 512 << 20, MaxKeyBytes: 512 << 20, MaxIndexKeyBytes: 512<<20 - 1, MaxDepth: bsonval.MaxDepth},
		Concurrent:  true,
		Open:        func(t *testing.T) storetest.Repos { return repos(redistest.Cluster(t)) },
		DropClaim:   dropClaim,
		Corrupt:     corrupt,
		Declaration: layout.Store, Requests: sent, Mode: layout.Cluster,
	})
}

// TestDeadlines runs the deadline test on a private single node paused
// with SIGSTOP: every call returns within its deadline plus
// runtime.CleanupTimeout, the read-back that decides an unknown outcome
// included.
func TestDeadlines(t *testing.T) {
	deadlines(t, "redis", func(t *testing.T) (redis.UniversalClient, *redistest.Private) { return redistest.PrivateServer(t) })
}

// deadlines runs the deadline test on the private deployment start
// starts.
func deadlines(t *testing.T, name string, start func(t *testing.T) (redis.UniversalClient, *redistest.Private)) {
	var p *redistest.Private
	storetest.Deadlines(t, storetest.Harness{
		Name: name,
		Open: func(t *testing.T) storetest.Repos {
			var c redis.UniversalClient
			c, p = start(t)
			return repos(c)
		},
		Pause: func(t *testing.T) func() { return p.Pause(t) },
	})
}

// TestDeadlinesCluster runs the deadline test on a private 3-master
// cluster, every master paused: the lookup protocol's undo, read-back
// and cleanup (the listing, the old entries) end runtime.CleanupTimeout
// after the caller's deadline.
func TestDeadlinesCluster(t *testing.T) {
	deadlines(t, "redis-cluster", func(t *testing.T) (redis.UniversalClient, *redistest.Private) { return redistest.PrivateCluster(t) })
}
