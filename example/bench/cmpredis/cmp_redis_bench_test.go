package cmpredis_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/cmpbench"
	"github.com/noamgen/noamgen/example/bench/handwritten"
	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
)

// Generated vs hand-written on a single Redis node: both implementations
// on the same server and client, the hand-written keys under "hand:".
// Compare with
//
//	go test ./example/bench/cmpredis -run '^$' -bench Cmp -benchtime 1000x -count 6 > redis.txt
//	benchstat -col /impl redis.txt
//
// or STORES=redis scripts/bench-compare.sh.

func TestMain(m *testing.M) { redistest.Main(m) }

// openRedisImpls returns the generated and the hand-written repositories
// over c (flushed).
func openRedisImpls(c *redis.Client) ([]cmpbench.Impl, error) {
	ctx := context.Background()
	games := game.NewGameRedisRepository(c)
	hotels := hotel.NewHotelRedisRepository(c)
	if err := hotels.EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	handEAO := &handwritten.RedisBlobs[bench.VersionedEAOGame]{
		C: c, Prefix: "hand:eao:",
		ID:      func(g *bench.VersionedEAOGame) string { return g.ID },
		Version: func(g *bench.VersionedEAOGame) *int64 { return &g.Version },
	}
	return []cmpbench.Impl{
		{Name: "gen", Games: games, Hotels: cmpbench.GenHotels{HotelRepository: hotels}, EAO: bench.NewVersionedEAOGameRedisRepository(c)},
		{Name: "hand", Games: handwritten.NewGameRedis(c, "hand:"), Hotels: handwritten.NewHotelRedis(c, "hand:"), EAO: handEAO},
	}, nil
}

// client is the client of redistest's server, taken by the first
// benchmark (which flushes it).
var client atomic.Pointer[redis.Client]

var redisSuite = cmpbench.NewSuite("redis", func() ([]cmpbench.Impl, error) {
	return openRedisImpls(client.Load())
})

func suite(b *testing.B) *cmpbench.Suite {
	if client.Load() == nil {
		client.CompareAndSwap(nil, redistest.Server(b))
	}
	return redisSuite
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
func BenchmarkCmpGetEAO(b *testing.B)          { suite(b).GetEAO(b) }
func BenchmarkCmpPutEAO(b *testing.B)          { suite(b).PutEAO(b) }
func BenchmarkCmpPutChanged(b *testing.B)      { suite(b).PutChanged(b) }
func BenchmarkCmpPutChangedEAO(b *testing.B)   { suite(b).PutChangedEAO(b) }

// TestCmpRedisBaseline checks that the hand-written baseline and the
// generated code do the same thing on the benchmark data (no timings).
func TestCmpRedisBaseline(t *testing.T) {
	impls, err := openRedisImpls(redistest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	cmpbench.CheckBaseline(t, impls, true)
}
