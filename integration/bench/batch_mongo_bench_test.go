package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatch compares CreateMany, PutMany and DeleteMany of 100 blocks
// with the same 100 single calls on MongoDB (the in-process FerretDB, or
// NOAM_MONGO_URI), as runtime/<store>store's BenchmarkBatch does on the
// other stores: Match has lookups (unique ones among them) and a version,
// Tournament neither.
func BenchmarkBatch(b *testing.B) {
	db := mongotest.Start(b)
	matches := st.NewMatchMongoRepository(db, mongotest.NativeOptions()...)
	tournaments := game.NewTournamentMongoRepository(db, mongotest.NativeOptions()...)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{matches, tournaments} {
		if err := r.EnsureIndexes(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Match", func(b *testing.B) {
		storetest.BenchBatch(b, matches, 100, func(i int) *st.Match {
			id := fmt.Sprint("m", i)
			return &st.Match{ID: id, Code: "code-" + id, Region: "north", Level: i % 10, Tags: []string{"t", id},
				Rounds: []st.Round{{Serial: id + "/r0", Moves: []string{"e4"}}}}
		}, func(m *st.Match) string { return m.ID })
	})
	b.Run("Tournament", func(b *testing.B) {
		storetest.BenchBatch(b, tournaments, 100, func(i int) *game.Tournament {
			return &game.Tournament{ID: int64(i + 1), Name: fmt.Sprint("cup ", i), Games: []string{"g1", "g2"}}
		}, func(t *game.Tournament) int64 { return t.ID })
	})
}
