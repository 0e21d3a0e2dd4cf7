package dynamostore_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
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
	srv := dynalitetest.Shared(b)
	c := srv.Client()
	o := dynamostore.Options{TablePrefix: srv.Prefix(b)}
	return st.NewMatchDynamoRepository(c, o), game.NewTournamentDynamoRepository(c, o)
}
