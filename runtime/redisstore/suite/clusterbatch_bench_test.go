package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatchCluster is BenchmarkBatch on a 3-master Redis Cluster,
// where CreateMany, PutMany and DeleteMany run the lookup protocol phase
// by phase for the batch (a pipeline per phase). Journal has a counter:
// its CreateMany allocates the numbers (one INCRBY), its PutMany replaces
// the blocks with their numbers given (their counter raised once).
func BenchmarkBatchCluster(b *testing.B) {
	c := redistest.Cluster(b)
	storetest.BenchBatchModels(b, st.NewMatchRedisRepository(c), game.NewTournamentRedisRepository(c))
	journals := st.NewJournalRedisRepository(c)
	if err := journals.EnsureIndexes(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("Journal", func(b *testing.B) {
		storetest.BenchBatch(b, journals, 100, func(i int) *st.Journal {
			return &st.Journal{Owner: fmt.Sprint("owner-", i%10), Title: fmt.Sprint("j", i), Lines: []st.Line{{Kind: "k", Text: "t"}}}
		}, func(j *st.Journal) st.JournalID { return j.ID })
	})
}
