package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func repos(c redis.UniversalClient) storetest.Repos {
	return storetest.Repos{
		Matches:  model.NewMatchRedisRepository(c),
		Journals: model.NewJournalRedisRepository(c),
		Cards:    model.NewCardRedisRepository(c),
		Replies:  model.NewReplyRedisRepository(c),
	}
}

// corrupt is the harness's Corrupt hook over the client of the current
// subtest: a BSON string whose length runs past the value.
func corrupt(c *redis.UniversalClient) func(t *testing.T, id, entry string) {
	return func(t *testing.T, id, entry string) {
		key := "matches:{" + id + "}"
		if n, err := (*c).HExists(context.Background(), key, entry).Result(); err != nil || !n {
			t.Fatalf("no entry %s of block %s: %v", entry, id, err)
		}
		if err := (*c).HSet(context.Background(), key, entry, "\x02\xff\xff\xff\x7fx\x00").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConformance runs the conformance suite on a single Redis node,
// flushed before each subtest: every write is one script run.
func TestConformance(t *testing.T) {
	var c redis.UniversalClient
	storetest.Run(t, storetest.Harness{
		Name:       "redis",
		Caps:       runtime.Caps{Name: "redis", OrderedScan: true, AtomicLookups: true, MaxValueBytes: 512 << 20, MaxDepth: bsonval.MaxDepth},
		Concurrent: true,
		Corrupt:    corrupt(&c),
		Open:       func(t *testing.T) storetest.Repos { c = redistest.Server(t); return repos(c) },
	})
}

// TestConformanceCluster runs the conformance suite on a 3-master Redis
// Cluster: blocks, listings and index tables spread over the slots, with
// the lookup protocol.
func TestConformanceCluster(t *testing.T) {
	var c redis.UniversalClient
	storetest.Run(t, storetest.Harness{
		Corrupt:    corrupt(&c),
		Name:       "redis-cluster",
		Caps:       runtime.Caps{Name: "redis", OrderedScan: true, MaxValueBytes: 512 << 20, MaxDepth: bsonval.MaxDepth},
		Concurrent: true,
		Open:       func(t *testing.T) storetest.Repos { c = redistest.Cluster(t); return repos(c) },
	})
}
