package index_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// atomicReader are memindex primitives with an index.ItemReader whose
// items carry only Key and Block, as a store with atomic lookups reads
// them; ReadBlocks returns the blocks in reverse order (any order is
// allowed). It counts the calls of each kind of item read.
type atomicReader struct {
	*memindex.Store[Doc]
	calls map[string]int
}

func bare(items []index.Item) []index.Item {
	out := make([]index.Item, len(items))
	for i, it := range items {
		out[i] = index.Item{Key: it.Key, Block: it.Block}
	}
	return out
}

func (a atomicReader) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	a.calls["GetItems"]++
	return a.Store.GetItems(ctx, l, keys)
}

func (a atomicReader) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	a.calls["ScanItems"]++
	return a.Store.ScanItems(ctx, l, from, to, limit, desc)
}

func (a atomicReader) ReadItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	a.calls["ReadItems"]++
	items, err := a.Store.GetItems(ctx, l, keys)
	return bare(items), err
}

func (a atomicReader) RangeItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	a.calls["RangeItems"]++
	items, err := a.Store.ScanItems(ctx, l, from, to, limit, desc)
	return bare(items), err
}

func (a atomicReader) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[Doc], error) {
	bs, err := a.Store.ReadBlocks(ctx, keys)
	slices.Reverse(bs)
	return bs, err
}

// TestAtomicReads: with Engine.Atomic, Get and Range read items through
// the primitives' ItemReader (items without the protocol's fields), still
// skip an item whose block does not hold its value (a write landed
// between the two reads), and never drop it (no item of an atomic store
// is stale). Without Atomic the same reads use GetItems and ScanItems and
// drop such an item once stale.
func TestAtomicReads(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(map[bool]string{true: "Atomic", false: "Protocol"}[atomic], func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(30 * time.Second)
			a := atomicReader{Store: f.s, calls: map[string]int{}}
			f.e.P, f.e.Atomic = a, atomic
			st := index.Stamp{Seq: 10, Inc: 5}
			docs := []Doc{{ID: "d1", Code: "c1", Tags: []string{"red", "blue"}}, {ID: "d2", Code: "c2", Tags: []string{"red"}}, {ID: "d3", Tags: []string{"red"}}}
			for _, d := range docs {
				f.s.Set(d.Key(), st, d)
				for l, keys := range f.e.Keys(d.Key(), d) {
					for _, k := range keys {
						f.s.SetItem(l, index.Item{Key: k, Block: d.Key(), Inc: st.Inc, Seq: st.Seq})
					}
				}
			}
			// Items whose blocks do not hold their values, of sequence 0
			// (stale for the protocol; as a bare item reads).
			moved := []struct {
				l  int
				it index.Item
			}{
				{0, index.Item{Key: key("c9"), Block: key("d1"), Inc: st.Inc}},
				{1, index.Item{Key: index.IndexKey(false, key("red"), key("d0")), Block: key("d0"), Inc: st.Inc}},
				{1, index.Item{Key: index.IndexKey(false, key("red"), key("d25")), Block: key("d2"), Inc: st.Inc}},
				{1, index.Item{Key: index.IndexKey(false, key("green"), key("d1")), Block: key("d1"), Inc: st.Inc}},
			}
			for _, m := range moved {
				f.s.SetItem(m.l, m.it)
			}

			got, err := f.e.Get(ctx, "GetBy", 0, key("c2"))
			if err != nil || got.ID != "d2" {
				t.Fatalf("Get(c2) = %v %v, want d2", got.ID, err)
			}
			if _, err := f.e.Get(ctx, "GetBy", 0, key("c9")); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("Get(c9), whose block holds c1: %v, want ErrNotFound", err)
			}
			if _, err := f.e.Get(ctx, "GetBy", 0, key("c0")); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("Get(c0), held by nobody: %v, want ErrNotFound", err)
			}
			for _, tag := range []string{"red", "green"} {
				for _, desc := range []bool{false, true} {
					want := map[string]string{"red": "[d1 d2 d3]", "green": "[]"}[tag]
					if desc && tag == "red" {
						want = "[d3 d2 d1]"
					}
					r := &runtime.KeyRange{From: key(tag), To: runtime.TupleEnd(key(tag))}
					for _, n := range []int{100, 1} {
						var ids []string
						r.After = nil
						for {
							ds, last, more, err := f.e.Range(ctx, "ListBy", 1, r, n, desc)
							if err != nil {
								t.Fatal(err)
							}
							for _, d := range ds {
								ids = append(ids, d.ID)
							}
							if !more {
								break
							}
							r.After = last
						}
						if s := "[" + strings.Join(ids, " ") + "]"; s != want {
							t.Fatalf("Range(%s, desc %v) in pages of %d: %s, want %s", tag, desc, n, s, want)
						}
					}
				}
			}
			// Range over every tag: d1 is found twice (red and blue).
			all := &runtime.KeyRange{To: []byte{0xff}}
			ds, _, _, err := f.e.Range(ctx, "ListBy", 1, all, 100, false)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
			if s := strings.Join(ids, " "); s != "d1 d1 d2 d3" {
				t.Fatalf("Range over every tag: %s, want d1 (blue), d1, d2, d3 (red)", s)
			}

			for _, m := range moved {
				items, err := f.s.GetItems(ctx, m.l, [][]byte{m.it.Key})
				if err != nil {
					t.Fatal(err)
				}
				if kept := len(items) == 1; kept != atomic {
					t.Errorf("item %q of a block that does not hold it: kept %v, want %v", m.it.Key, kept, atomic)
				}
			}
			if atomic {
				if a.calls["GetItems"] != 0 || a.calls["ScanItems"] != 0 || a.calls["ReadItems"] == 0 || a.calls["RangeItems"] == 0 {
					t.Errorf("item reads %v, want ReadItems and RangeItems only", a.calls)
				}
			} else if a.calls["ReadItems"] != 0 || a.calls["RangeItems"] != 0 {
				t.Errorf("item reads %v, want GetItems and ScanItems only", a.calls)
			}
		})
	}
}
