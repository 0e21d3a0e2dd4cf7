package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatchIndexTables is BenchmarkBatch's Match with every lookup
// in an index table: CreateMany, PutMany and DeleteMany of 100 blocks run
// the lookup protocol phase by phase for the batch (runtime/index
// CommitMany), against the same 100 single calls.
func BenchmarkBatchIndexTables(b *testing.B) {
	db := mongotest.Start(b)
	matches := st.NewMatchMongoRepository(db, mongostore.IndexTables())
	if err := matches.EnsureIndexes(context.Background()); err != nil {
		b.Fatal(err)
	}
	storetest.BenchBatch(b, matches, 100, func(i int) *st.Match {
		id := fmt.Sprint("m", i)
		return &st.Match{ID: id, Code: "code-" + id, Region: "north", Level: i % 10, Tags: []string{"t", id},
			Rounds: []st.Round{{Serial: id + "/r0", Moves: []string{"e4"}}}}
	}, func(m *st.Match) string { return m.ID })
}
