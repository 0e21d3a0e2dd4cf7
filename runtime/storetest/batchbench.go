package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// BatchRepo is what BenchBatch asks of a generated repository of
// aggregate class T with block keys K.
type BatchRepo[T any, K comparable] interface {
	Create(ctx context.Context, t *T) error
	Put(ctx context.Context, t *T) error
	Delete(ctx context.Context, id K) error
	CreateMany(ctx context.Context, ts []*T) error
	PutMany(ctx context.Context, ts []*T) error
	DeleteMany(ctx context.Context, ids []K) error
}

// BenchBatch measures the batch writes of repository r against the same
// single calls: sub-benchmarks Create/{batch,single}, Put/... and
// Delete/..., each operation writing n blocks (an op is the whole batch,
// or the n calls). newT returns a new aggregate with the i-th key (i is
// never reused) and key returns its block key. The blocks an operation
// needs (those Put replaces and Delete removes) are written with the
// timer stopped, by CreateMany.
func BenchBatch[T any, K comparable](b *testing.B, r BatchRepo[T, K], n int, newT func(i int) *T, key func(*T) K) {
	ctx := context.Background()
	next := 0
	fresh := func() []*T {
		ts := make([]*T, n)
		for i := range ts {
			ts[i] = newT(next)
			next++
		}
		return ts
	}
	keys := func(ts []*T) []K {
		out := make([]K, len(ts))
		for i, t := range ts {
			out[i] = key(t)
		}
		return out
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	type op struct {
		name         string
		setup        func() []*T // timer stopped
		batch, singl func([]*T) error
	}
	var puts []*T
	ops := []op{
		{"Create", fresh, func(ts []*T) error { return r.CreateMany(ctx, ts) }, func(ts []*T) error {
			for _, t := range ts {
				if err := r.Create(ctx, t); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Put", func() []*T {
			if puts == nil {
				puts = fresh()
				must(r.CreateMany(ctx, puts))
			}
			return puts
		}, func(ts []*T) error { return r.PutMany(ctx, ts) }, func(ts []*T) error {
			for _, t := range ts {
				if err := r.Put(ctx, t); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Delete", func() []*T {
			ts := fresh()
			must(r.CreateMany(ctx, ts))
			return ts
		}, func(ts []*T) error { return r.DeleteMany(ctx, keys(ts)) }, func(ts []*T) error {
			for _, k := range keys(ts) {
				if err := r.Delete(ctx, k); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, o := range ops {
		for _, mode := range []string{"batch", "single"} {
			write := o.batch
			if mode == "single" {
				write = o.singl
			}
			b.Run(o.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					b.StopTimer()
					ts := o.setup()
					b.StartTimer()
					must(write(ts))
				}
			})
		}
	}
}

// BenchBatchModels is BenchBatch on the two aggregates every store's
// BenchmarkBatch measures, 100 blocks an op: Match has lookups (unique
// ones among them) and a version, Tournament neither. It ensures both
// repositories first.
func BenchBatchModels(b *testing.B, matches BatchRepo[model.Match, string], tournaments BatchRepo[game.Tournament, int64]) {
	for _, r := range []any{matches, tournaments} {
		if err := r.(interface{ EnsureIndexes(context.Context) error }).EnsureIndexes(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Match", func(b *testing.B) {
		BenchBatch(b, matches, 100, func(i int) *model.Match {
			id := fmt.Sprint("m", i)
			return &model.Match{ID: id, Code: "code-" + id, Region: "north", Level: i % 10, Tags: []string{"t", id},
				Rounds: []model.Round{{Serial: id + "/r0", Moves: []string{"e4"}}}}
		}, func(m *model.Match) string { return m.ID })
	})
	b.Run("Tournament", func(b *testing.B) {
		BenchBatch(b, tournaments, 100, func(i int) *game.Tournament {
			return &game.Tournament{ID: int64(i + 1), Name: fmt.Sprint("cup ", i), Games: []string{"g1", "g2"}}
		}, func(t *game.Tournament) int64 { return t.ID })
	})
}
