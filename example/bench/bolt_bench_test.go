package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/runtime/boltstore"
)

// The paper's experiment (section 8) on the embedded store: reading a game
// and adding a round to it, with the ROUNDS layout (one entry per round)
// and the EAO layout (the whole game one entry), for games of 10, 100 and
// 1000 rounds. Every database holds the same number of rounds, so that
// only the size of the games changes (B+tree depth and page cache follow
// the database size), and each benchmark works on all its games in turn.
// bbolt runs without fsync (see openBolt): the numbers are the mapping's
// cost, what each layout reads and writes, not the disk's.

var sizes = []int{10, 100, 1000}

// dbRounds is how many rounds every benchmark database holds (about 11 MB).
const dbRounds = 16_000

func gameIDs(size int) []string {
	ids := make([]string, dbRounds/size)
	for i := range ids {
		ids[i] = fmt.Sprintf("game-%05d", i)
	}
	return ids
}

// meter sums what the timed parts of a benchmark wrote.
type meter struct {
	mark  boltstore.WriteStats
	bytes int64
}

func (m *meter) start() { m.mark = boltstore.Written() }
func (m *meter) stop()  { m.bytes += boltstore.Written().Sub(m.mark).Bytes }

func (m *meter) report(b *testing.B) {
	b.ReportMetric(float64(m.bytes)/float64(b.N), "B-written/op")
}

// BenchmarkAppendRound adds one round to a game: with ROUNDS,
// AppendRounds writes the new round and the element count, so its cost
// stays flat as games grow; with EAO, the game is Put whole with one more
// round, so its cost grows with the game.
func BenchmarkAppendRound(b *testing.B) {
	for _, size := range sizes {
		b.Run(fmt.Sprintf("layout=rounds/size=%d", size), func(b *testing.B) {
			ctx := context.Background()
			repo := bench.NewRoundsGameBoltRepository(openBolt(b))
			ids := gameIDs(size)
			reset := func() {
				for _, id := range ids {
					must(b, repo.Put(ctx, bench.NewRoundsGame(id, size)))
				}
			}
			reset()
			round := bench.NewRound(size)
			// Games grow by one round per append: put them back to size
			// rounds (untimed) before they have grown by a tenth.
			every := len(ids) * max(1, size/10)
			var m meter
			b.ReportAllocs()
			b.ResetTimer()
			m.start()
			for i := range b.N {
				if i > 0 && i%every == 0 {
					m.stop()
					b.StopTimer()
					reset()
					b.StartTimer()
					m.start()
				}
				if _, err := repo.AppendRounds(ctx, ids[i%len(ids)], round); err != nil {
					b.Fatal(err)
				}
			}
			m.stop()
			m.report(b)
		})
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("layout=eao/size=%d", size), func(b *testing.B) {
			ctx := context.Background()
			repo := bench.NewEAOGameBoltRepository(openBolt(b))
			ids := gameIDs(size)
			games := make([]*bench.EAOGame, len(ids))
			for i, id := range ids {
				must(b, repo.Create(ctx, bench.NewEAOGame(id, size)))
				// The game as read, with one more round: every Put writes
				// size+1 rounds.
				games[i] = bench.NewEAOGame(id, size+1)
			}
			var m meter
			b.ReportAllocs()
			b.ResetTimer()
			m.start()
			for i := range b.N {
				if err := repo.Put(ctx, games[i%len(games)]); err != nil {
					b.Fatal(err)
				}
			}
			m.stop()
			m.report(b)
		})
	}
}

// BenchmarkGetGame reads a whole game: one key-value pair with EAO, the
// root entry and every round with ROUNDS.
func BenchmarkGetGame(b *testing.B) {
	for _, size := range sizes {
		b.Run(fmt.Sprintf("layout=rounds/size=%d", size), func(b *testing.B) {
			ctx := context.Background()
			repo := bench.NewRoundsGameBoltRepository(openBolt(b))
			ids := gameIDs(size)
			for _, id := range ids {
				must(b, repo.Create(ctx, bench.NewRoundsGame(id, size)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				g, err := repo.Get(ctx, ids[i%len(ids)])
				if err != nil || len(g.Rounds) != size {
					b.Fatal(err)
				}
			}
		})
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("layout=eao/size=%d", size), func(b *testing.B) {
			ctx := context.Background()
			repo := bench.NewEAOGameBoltRepository(openBolt(b))
			ids := gameIDs(size)
			for _, id := range ids {
				must(b, repo.Create(ctx, bench.NewEAOGame(id, size)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				g, err := repo.Get(ctx, ids[i%len(ids)])
				if err != nil || len(g.Rounds) != size {
					b.Fatal(err)
				}
			}
		})
	}
}
