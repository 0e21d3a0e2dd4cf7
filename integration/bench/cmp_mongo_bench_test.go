// Package bench holds the MongoDB side of noamgen's benchmarks: generated
// vs hand-written repositories (example/bench/cmpbench) on the in-process
// FerretDB, or the MongoDB at NOAM_MONGO_URI, and the Figure 12 experiment
// on it (fig12_mongo_test.go).
package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/example/bench/cmpbench"
	"github.com/noamgen/noamgen/example/bench/handwritten"
	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// Generated vs hand-written on MongoDB: both implementations in their own
// database on the same server and client. Compare with
//
//	(cd integration && go test ./bench -run '^$' -bench Cmp -count 6) > mongo.txt
//	benchstat -col /impl mongo.txt
//
// or scripts/bench-compare.sh.

func TestMain(m *testing.M) { mongotest.Main(m) }

// client is the shared client of mongotest.Main's server, taken from the
// first database a benchmark gets from mongotest.Start.
var client atomic.Pointer[mongo.Client]

// openMongoImpls opens the generated and the hand-written repositories
// over two new databases named after prefix.
func openMongoImpls(c *mongo.Client, prefix string) ([]cmpbench.Impl, error) {
	ctx := context.Background()
	genDB, handDB := c.Database(prefix+"_gen"), c.Database(prefix+"_hand")
	for _, db := range []*mongo.Database{genDB, handDB} {
		if err := db.Drop(ctx); err != nil {
			return nil, err
		}
	}
	games := game.NewGameMongoRepository(genDB)
	if err := games.EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	// Hotel lookups are native indexes, as in the hand-written baseline.
	// FerretDB v1 refuses the partial filter of the unique index on name
	// (which leaves empty names out): there the index covers every name,
	// like the baseline's.
	hotels := hotel.NewHotelMongoRepository(genDB)
	if err := hotels.EnsureIndexes(ctx); errors.Is(err, runtime.ErrInvalid) {
		hotels = hotel.NewHotelMongoRepository(genDB, mongostore.NoPartialIndexes())
		err = hotels.EnsureIndexes(ctx)
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	handHotels, err := handwritten.NewHotelMongo(ctx, handDB)
	if err != nil {
		return nil, err
	}
	return []cmpbench.Impl{
		{Name: "gen", Games: games, Hotels: cmpbench.GenHotels{HotelRepository: hotels}},
		{Name: "hand", Games: handwritten.NewGameMongo(handDB), Hotels: handHotels},
	}, nil
}

var mongoSuite = cmpbench.NewSuite("mongo", func() ([]cmpbench.Impl, error) {
	return openMongoImpls(client.Load(), "noambench_cmp")
})

// suite returns the MongoDB suite. Its databases (noambench_cmp_gen and
// noambench_cmp_hand) are dropped and loaded by the first benchmark and
// stay until the server stops (FerretDB, in a temporary directory) or, on
// a real MongoDB, until the next run drops them.
func suite(b *testing.B) *cmpbench.Suite {
	if client.Load() == nil {
		client.CompareAndSwap(nil, mongotest.Start(b).Client())
	}
	return mongoSuite
}

func BenchmarkCmpGet(b *testing.B)             { suite(b).Get(b) }
func BenchmarkCmpPut(b *testing.B)             { suite(b).Put(b) }
func BenchmarkCmpSetSecondPlayer(b *testing.B) { suite(b).SetSecondPlayer(b) }
func BenchmarkCmpAppendRounds(b *testing.B)    { suite(b).AppendRounds(b) }
func BenchmarkCmpUpdate2(b *testing.B)         { suite(b).Update2(b) }
func BenchmarkCmpList50(b *testing.B)          { suite(b).List50(b) }
func BenchmarkCmpGetByName(b *testing.B)       { suite(b).GetByName(b) }
func BenchmarkCmpListByCityStars(b *testing.B) { suite(b).ListByCityStars(b) }
func BenchmarkCmpSetCity(b *testing.B)         { suite(b).SetCity(b) }

// TestCmpMongoBaseline checks that the hand-written baseline and the
// generated code do the same thing on the benchmark data (no timings).
func TestCmpMongoBaseline(t *testing.T) {
	db := mongotest.Start(t)
	impls, err := openMongoImpls(db.Client(), db.Name())
	if err != nil {
		t.Fatal(err)
	}
	cmpbench.CheckBaseline(t, impls, false)
	for _, suffix := range []string{"_gen", "_hand"} {
		if err := db.Client().Database(db.Name() + suffix).Drop(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
