package redisstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatchCluster is BenchmarkBatch on a 3-master Redis Cluster,
// where CreateMany runs the lookup protocol phase by phase for the batch
// (a pipeline per phase) and PutMany and DeleteMany are the single calls.
func BenchmarkBatchCluster(b *testing.B) {
	c := redistest.Cluster(b)
	storetest.BenchBatchModels(b, st.NewMatchRedisRepository(c), game.NewTournamentRedisRepository(c))
}
