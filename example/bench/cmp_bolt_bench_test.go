package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/cmpbench"
	"github.com/noamgen/noamgen/example/bench/handwritten"
	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
)

// Generated vs hand-written on bbolt (package cmpbench): each
// implementation has its own database file, without fsync like the other
// benchmarks here. Compare with
//
//	go test ./example/bench -run '^$' -bench 'Cmp' -count 6 > bolt.txt
//	benchstat -col /impl bolt.txt
//
// or scripts/bench-compare.sh.

// cmpDir holds the benchmarks' database files; TestMain removes it.
var cmpDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if cmpDir != "" {
		os.RemoveAll(cmpDir)
	}
	os.Exit(code)
}

func openCmpBolt(dir, name string) (*bbolt.DB, error) {
	return bbolt.Open(filepath.Join(dir, name+".db"), 0o600, &bbolt.Options{NoSync: true})
}

// openBoltImpls opens the generated and the hand-written repositories over
// two new database files in dir.
func openBoltImpls(dir string) ([]cmpbench.Impl, error) {
	genDB, err := openCmpBolt(dir, "gen")
	if err != nil {
		return nil, err
	}
	handDB, err := openCmpBolt(dir, "hand")
	if err != nil {
		return nil, err
	}
	hotels := hotel.NewHotelBoltRepository(genDB)
	if err := hotels.EnsureIndexes(context.Background()); err != nil {
		return nil, err
	}
	handGames, err := handwritten.NewGameBolt(handDB)
	if err != nil {
		return nil, err
	}
	handHotels, err := handwritten.NewHotelBolt(handDB)
	if err != nil {
		return nil, err
	}
	handEAO := &handwritten.BoltBlobs[bench.VersionedEAOGame]{
		DB: handDB, Bucket: []byte("VersionedEAOGame"), VersionKey: "version",
		ID:      func(g *bench.VersionedEAOGame) string { return g.ID },
		Version: func(g *bench.VersionedEAOGame) *int64 { return &g.Version },
	}
	if err := handEAO.Ensure(); err != nil {
		return nil, err
	}
	return []cmpbench.Impl{
		{Name: "gen", Games: game.NewGameBoltRepository(genDB), Hotels: cmpbench.GenHotels{HotelRepository: hotels}, EAO: bench.NewVersionedEAOGameBoltRepository(genDB)},
		{Name: "hand", Games: handGames, Hotels: handHotels, EAO: handEAO},
	}, nil
}

var boltSuite = cmpbench.NewSuite("bolt", func() ([]cmpbench.Impl, error) {
	dir, err := os.MkdirTemp("", "noam-cmpbench-")
	if err != nil {
		return nil, err
	}
	cmpDir = dir
	return openBoltImpls(dir)
})

func BenchmarkCmpGet(b *testing.B)             { boltSuite.Get(b) }
func BenchmarkCmpPut(b *testing.B)             { boltSuite.Put(b) }
func BenchmarkCmpSetSecondPlayer(b *testing.B) { boltSuite.SetSecondPlayer(b) }
func BenchmarkCmpAppendRounds(b *testing.B)    { boltSuite.AppendRounds(b) }
func BenchmarkCmpUpdate2(b *testing.B)         { boltSuite.Update2(b) }
func BenchmarkCmpList50(b *testing.B)          { boltSuite.List50(b) }
func BenchmarkCmpGetByName(b *testing.B)       { boltSuite.GetByName(b) }
func BenchmarkCmpListByCityStars(b *testing.B) { boltSuite.ListByCityStars(b) }
func BenchmarkCmpSetCity(b *testing.B)         { boltSuite.SetCity(b) }
func BenchmarkCmpGetEAO(b *testing.B)          { boltSuite.GetEAO(b) }
func BenchmarkCmpPutEAO(b *testing.B)          { boltSuite.PutEAO(b) }
func BenchmarkCmpPutChanged(b *testing.B)      { boltSuite.PutChanged(b) }
func BenchmarkCmpPutChangedEAO(b *testing.B)   { boltSuite.PutChangedEAO(b) }

// TestCmpBoltBaseline checks that the hand-written baseline and the
// generated code do the same thing on the benchmark data (no timings).
func TestCmpBoltBaseline(t *testing.T) {
	impls, err := openBoltImpls(t.TempDir())
	must(t, err)
	cmpbench.CheckBaseline(t, impls, true)
}
