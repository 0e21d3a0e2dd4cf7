package redisstore_test

import (
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

// TestConformance runs the conformance suite on a single Redis node,
// flushed before each subtest: every write is one script run.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:       "redis",
		Caps:       runtime.Caps{Name: "redis", OrderedScan: true, AtomicLookups: true, MaxValueBytes: 512 << 20, MaxDepth: bsonval.MaxDepth},
		Concurrent: true,
		Open:       func(t *testing.T) storetest.Repos { return repos(redistest.Server(t)) },
	})
}

// TestConformanceCluster runs the conformance suite on a 3-master Redis
// Cluster: blocks, listings and index tables spread over the slots, with
// the lookup protocol.
func TestConformanceCluster(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:       "redis-cluster",
		Caps:       runtime.Caps{Name: "redis", OrderedScan: true, MaxValueBytes: 512 << 20, MaxDepth: bsonval.MaxDepth},
		Concurrent: true,
		Open:       func(t *testing.T) storetest.Repos { return repos(redistest.Cluster(t)) },
	})
}
