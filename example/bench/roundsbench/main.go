// Command roundsbench repeats the experiment of the NoAM paper (Bugiotti et
// al., section 8, Fig. 12) on noamgen's generated repositories: games of a
// dozen rounds (about 8 KB each) stored as ROUNDS (a root entry plus one
// entry per round) or EAO (the whole game one entry), under three
// workloads: (a) game retrievals only, (b) round additions only, (c) a
// 50/50 mix. It prints both layouts side by side, with mean and p95
// latency per operation and bytes written per operation (bbolt).
//
//	go run ./example/bench/roundsbench                  # bbolt in a temp dir
//	go run ./example/bench/roundsbench -mongo URI      # MongoDB
//
// A round addition in EAO is what the layout forces: read the game, append
// the round in memory, write the whole game back.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/runtime/boltstore"
)

// layout is one data representation under test.
type layout struct {
	name     string
	load     func(ctx context.Context, id string, rounds int) error
	get      func(ctx context.Context, id string) error
	addRound func(ctx context.Context, id string, r bench.Round) error
}

type result struct {
	mean, p95 time.Duration
	written   float64 // bytes written per op (bbolt only), -1 if unknown
}

func main() {
	mongoURI := flag.String("mongo", "", "MongoDB URI (default: bbolt in a temporary directory)")
	games := flag.Int("games", 2000, "number of games")
	rounds := flag.Int("rounds", 12, "rounds per game at load time (12 rounds is about 8 KB)")
	ops := flag.Int("ops", 5000, "operations per workload")
	noSync := flag.Bool("nosync", true, "bbolt: skip fsync on commit (measures the data layout, not the disk)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	ctx := context.Background()

	var layouts []layout
	counted := false
	if *mongoURI != "" {
		client, err := mongo.Connect(options.Client().ApplyURI(*mongoURI))
		check(err)
		defer client.Disconnect(ctx)
		db := client.Database("noamgen_roundsbench")
		check(db.Drop(ctx))
		defer db.Drop(ctx)
		layouts = newLayouts(bench.NewRoundsGameMongoRepository(db), bench.NewEAOGameMongoRepository(db))
		fmt.Printf("store: MongoDB %s\n", *mongoURI)
	} else {
		dir, err := os.MkdirTemp("", "roundsbench-")
		check(err)
		defer os.RemoveAll(dir)
		db, err := bbolt.Open(filepath.Join(dir, "bench.db"), 0o600, &bbolt.Options{NoSync: *noSync})
		check(err)
		defer db.Close()
		layouts = newLayouts(bench.NewRoundsGameBoltRepository(db), bench.NewEAOGameBoltRepository(db))
		counted = true
		fmt.Printf("store: bbolt (NoSync=%v)\n", *noSync)
	}
	fmt.Printf("%d games of %d rounds, %d operations per workload\n\n", *games, *rounds, *ops)

	workloads := []struct {
		name     string
		readFrac float64
	}{{"(a) retrievals", 1}, {"(b) round additions", 0}, {"(c) 50/50 mix", 0.5}}
	results := map[string][]result{}
	for _, l := range layouts {
		for g := range *games {
			check(l.load(ctx, gameID(l.name, g), *rounds))
		}
		rng := rand.New(rand.NewPCG(*seed, 0))
		for _, w := range workloads {
			lat := make([]time.Duration, 0, *ops)
			before := boltstore.Written()
			for range *ops {
				id := gameID(l.name, rng.IntN(*games))
				start := time.Now()
				if rng.Float64() < w.readFrac {
					check(l.get(ctx, id))
				} else {
					check(l.addRound(ctx, id, bench.NewRound(rng.IntN(1000))))
				}
				lat = append(lat, time.Since(start))
			}
			res := summarize(lat)
			res.written = -1
			if counted {
				res.written = float64(boltstore.Written().Bytes-before.Bytes) / float64(*ops)
			}
			results[l.name] = append(results[l.name], res)
		}
	}

	fmt.Printf("%-22s %28s %28s %10s\n", "workload", "ROUNDS mean / p95 / B-written", "EAO mean / p95 / B-written", "EAO/ROUNDS")
	for i, w := range workloads {
		r, e := results["rounds"][i], results["eao"][i]
		fmt.Printf("%-22s %28s %28s %9.2fx\n", w.name, cell(r), cell(e), float64(e.mean)/float64(r.mean))
	}
}

func newLayouts(rounds bench.RoundsGameRepository, eao bench.EAOGameRepository) []layout {
	return []layout{
		{
			name: "rounds",
			load: func(ctx context.Context, id string, n int) error { return rounds.Put(ctx, bench.NewRoundsGame(id, n)) },
			get: func(ctx context.Context, id string) error {
				_, err := rounds.Get(ctx, id)
				return err
			},
			addRound: func(ctx context.Context, id string, r bench.Round) error {
				_, err := rounds.AppendRounds(ctx, id, r)
				return err
			},
		},
		{
			name: "eao",
			load: func(ctx context.Context, id string, n int) error { return eao.Put(ctx, bench.NewEAOGame(id, n)) },
			get: func(ctx context.Context, id string) error {
				_, err := eao.Get(ctx, id)
				return err
			},
			addRound: func(ctx context.Context, id string, r bench.Round) error {
				g, err := eao.Get(ctx, id)
				if err != nil {
					return err
				}
				g.Rounds = append(g.Rounds, r)
				return eao.Put(ctx, g)
			},
		},
	}
}

func gameID(layout string, i int) string { return fmt.Sprintf("%s-%06d", layout, i) }

func summarize(lat []time.Duration) result {
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return result{mean: sum / time.Duration(len(lat)), p95: lat[len(lat)*95/100]}
}

func cell(r result) string {
	w := "-"
	if r.written >= 0 {
		w = fmt.Sprintf("%.0f", r.written)
	}
	return fmt.Sprintf("%s / %s / %s", r.mean.Round(time.Microsecond), r.p95.Round(time.Microsecond), w)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundsbench:", err)
		os.Exit(1)
	}
}
