package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
)

// BenchmarkFencedWrite is the cost of a setter of a model without
// lookups on bbolt (NoSync), the layout fence included.
func BenchmarkFencedWrite(b *testing.B) {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "b.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.NoSync = true
	ctx := context.Background()
	r, err := etf.NewPlayerRepository(db)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 16 {
		if err := r.Create(ctx, &etf.Player{ID: fmt.Sprint(i), Name: "P"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := r.SetName(ctx, fmt.Sprint(i%16), "Q"); err != nil {
			b.Fatal(err)
		}
	}
}
