package boltstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/internal/storeharness"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatch compares CreateMany, PutMany and DeleteMany of 100 blocks
// with the same 100 single calls (scripts/bench-batch.sh runs it on every
// store): Match has lookups (unique ones among them) and a version,
// Tournament neither.
func BenchmarkBatch(b *testing.B) {
	matches, tournaments := openBatchBench(b)
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

func openBatchBench(b *testing.B) (st.MatchRepository, game.TournamentRepository) {
	db := storeharness.OpenBolt(b)
	return st.NewMatchBoltRepository(db), game.NewTournamentBoltRepository(db)
}
