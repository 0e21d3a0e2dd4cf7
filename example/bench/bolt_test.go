package bench_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/benchtest"
	"github.com/noamgen/noamgen/runtime/boltstore"
)

// openBolt opens a fresh bbolt file in a temporary directory. It does not
// fsync commits (NoSync): these tests and benchmarks measure the NoAM
// mapping, what each layout reads and writes, and transaction isolation,
// none of which depends on flushing to disk, which costs the same per
// transaction whatever the layout and would make them slow.
func openBolt(tb testing.TB) *bbolt.DB {
	tb.Helper()
	db, err := bbolt.Open(filepath.Join(tb.TempDir(), "bench.db"), 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// TestBoltCounterRace: 16 goroutines add 500 each to one counter through
// Get and Put; the version check and bump in Put's write transaction turn
// every would-be lost update into a conflict, which the writer retries.
func TestBoltCounterRace(t *testing.T) {
	benchtest.CounterRace(t, bench.NewCounterBoltRepository(openBolt(t)), 16, 500)
}

// TestRoundSize checks that the games are sized like the paper's: a dozen
// rounds make about 8 KB.
func TestRoundSize(t *testing.T) {
	b, err := bson.Marshal(bench.NewEAOGame("2345", 12))
	must(t, err)
	if n := len(b); n < 7500 || n > 9000 {
		t.Fatalf("a game of 12 rounds is %d bytes of BSON, want about 8 KB", n)
	}
}

// TestBoltAppendIsFlat checks what adding a round writes in each layout:
// in ROUNDS the new round and the element count (two keys, no version
// here), the same bytes whatever the game's size; in EAO the whole game.
func TestBoltAppendIsFlat(t *testing.T) {
	db := openBolt(t)
	ctx := context.Background()
	rounds := bench.NewRoundsGameBoltRepository(db)
	eao := bench.NewEAOGameBoltRepository(db)
	var roundsBytes, eaoBytes []int64
	for _, size := range []int{10, 1000} {
		must(t, rounds.Create(ctx, bench.NewRoundsGame("g", size)))
		before := boltstore.Written()
		i, err := rounds.AppendRounds(ctx, "g", bench.NewRound(size))
		must(t, err)
		w := boltstore.Written().Sub(before)
		if i != size || w.Keys != 2 || w.Deletes != 0 {
			t.Fatalf("AppendRounds to %d rounds: index %d, wrote %+v; want 2 keys", size, i, w)
		}
		roundsBytes = append(roundsBytes, w.Bytes)

		before = boltstore.Written()
		must(t, rounds.SetRoundsAt(ctx, "g", size/2, bench.NewRound(0)))
		if w := boltstore.Written().Sub(before); w.Keys != 1 || w.Deletes != 0 {
			t.Fatalf("SetRoundsAt wrote %+v, want 1 key", w)
		}
		must(t, rounds.Delete(ctx, "g"))

		g := bench.NewEAOGame("g", size)
		must(t, eao.Create(ctx, g))
		g.Rounds = append(g.Rounds, bench.NewRound(size))
		before = boltstore.Written()
		must(t, eao.Put(ctx, g))
		w = boltstore.Written().Sub(before)
		if w.Keys != 1 {
			t.Fatalf("EAO Put wrote %+v, want 1 key", w)
		}
		eaoBytes = append(eaoBytes, w.Bytes)
		must(t, eao.Delete(ctx, "g"))
	}
	if roundsBytes[0] != roundsBytes[1] {
		t.Fatalf("ROUNDS append wrote %d bytes to a game of 10 rounds, %d to one of 1000: not flat", roundsBytes[0], roundsBytes[1])
	}
	if eaoBytes[1] < 50*eaoBytes[0] {
		t.Fatalf("EAO append wrote %d and %d bytes: the whole game should be rewritten", eaoBytes[0], eaoBytes[1])
	}
	t.Logf("bytes written to add a round to games of 10 and 1000 rounds: ROUNDS %v, EAO %v", roundsBytes, eaoBytes)
}
