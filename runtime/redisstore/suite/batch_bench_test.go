package redisstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatch compares CreateMany, PutMany and DeleteMany of 100 blocks
// with the same 100 single calls (scripts/bench-batch.sh runs it on every
// store): Match has lookups (unique ones among them) and a version,
// Tournament neither.
func BenchmarkBatch(b *testing.B) {
	matches, tournaments := openBatchBench(b)
	storetest.BenchBatchModels(b, matches, tournaments)
}

func openBatchBench(b *testing.B) (st.MatchRepository, game.TournamentRepository) {
	c := redistest.Server(b)
	return st.NewMatchRedisRepository(c), game.NewTournamentRedisRepository(c)
}
