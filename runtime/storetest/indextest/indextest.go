// Package indextest checks that a store's index.Primitives behave like
// the in-memory ones of runtime/storetest/memindex, which the engine's
// protocol is tested on: run Primitives from a store's tests.
package indextest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// Doc is the aggregate the suite stores: block key ID (encoded with
// runtime.AppendString), lookup 0 "code" unique over Code (none when
// empty), lookup 1 "tags" over each of Tags (runtime.AppendString).
type Doc struct {
	ID   string
	Code string
	Tags []string
}

// Key is the encoded block key of d.
func (d Doc) Key() []byte { return runtime.AppendString(nil, d.ID) }

// Lookups are the lookups of Doc, as an index.Engine of a store's
// Primitives[Doc] declares them.
func Lookups() []index.Lookup[Doc] {
	return []index.Lookup[Doc]{
		{Name: "Doc.code", Unique: true, Values: func(d Doc) [][]byte {
			if d.Code == "" {
				return nil
			}
			return [][]byte{runtime.AppendString(nil, d.Code)}
		}},
		{Name: "Doc.tags", Values: func(d Doc) [][]byte {
			var out [][]byte
			for _, t := range d.Tags {
				out = append(out, runtime.AppendString(nil, t))
			}
			return out
		}},
	}
}

// Harness is one empty store under test, of values T: the suite writes
// and reads them as Docs. Its lookups 0 and 1 are two index tables (the
// suite writes items of any key into them; lookup 0 should be unique).
type Harness[T any] struct {
	P index.Primitives[T]
	// Write stores block d (block key d.Key()) with stamp st, whatever
	// is stored (setup); a zero Seq or Inc is not stored.
	Write func(ctx context.Context, d Doc, st index.Stamp) error
	// View returns the Doc a value read back holds.
	View func(T) Doc
	// Unordered says that ScanBlocks returns blocks in the store's own
	// order, not in key order (index.Primitives.ScanBlocks): the suite
	// then checks that paging visits every block once.
	Unordered bool
}

func key(s string) []byte { return runtime.AppendString(nil, s) }

// Primitives checks the primitives open returns (an empty store each
// time) against the contract of index.Primitives.
func Primitives[T any](t *testing.T, open func(t *testing.T) Harness[T]) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, h Harness[T])
	}{
		{"PutAbsent", testPutAbsent[T]},
		{"PutAlways", testPutAlways[T]},
		{"PutSameMarked", testPutSameMarked[T]},
		{"DeleteItems", testDeleteItems[T]},
		{"ScanItems", testScanItems[T]},
		{"Blocks", testBlocks[T]},
		{"FenceAndDelete", testFenceAndDelete[T]},
		{"ScanBlocks", testScanBlocks[T]},
		{"DoneContext", testDoneContext[T]},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, context.Background(), open(t)) })
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func same(a, b index.Item) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Block, b.Block) && a.Inc == b.Inc && a.Seq == b.Seq && a.W == b.W
}

// getItem reads item k of lookup l (nil if none).
func getItem[T any](t *testing.T, ctx context.Context, h Harness[T], l int, k []byte) *index.Item {
	t.Helper()
	items, err := h.P.GetItems(ctx, l, [][]byte{k})
	must(t, err)
	switch len(items) {
	case 0:
		return nil
	case 1:
		return &items[0]
	}
	t.Fatalf("GetItems of one key returned %d items", len(items))
	return nil
}

func put[T any](t *testing.T, ctx context.Context, h Harness[T], l int, it index.Item, c index.Cond) (bool, *index.Item) {
	t.Helper()
	ok, prev, err := h.P.PutItem(ctx, l, it, c)
	must(t, err)
	return ok, prev
}

func wantItem[T any](t *testing.T, ctx context.Context, h Harness[T], l int, want index.Item) {
	t.Helper()
	got := getItem(t, ctx, h, l, want.Key)
	if got == nil || !same(*got, want) {
		t.Fatalf("item %x = %+v, want %+v", want.Key, got, want)
	}
}

func testPutAbsent[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	// Unique lookup: keys are values. Keys with bytes 0x00 and 0xff too.
	for _, k := range [][]byte{key("a"), {0x00, 0xff, 0x00}, key("")} {
		it := index.Item{Key: k, Block: key("b1"), Inc: 7, Seq: 100, W: 9}
		if ok, _ := put(t, ctx, h, 0, it, index.Cond{Kind: index.Absent}); !ok {
			t.Fatalf("PutItem Absent of a new key %x: not written", k)
		}
		wantItem(t, ctx, h, 0, it)
		other := index.Item{Key: k, Block: key("b2"), Inc: 8, Seq: 200, W: 10}
		if ok, _ := put(t, ctx, h, 0, other, index.Cond{Kind: index.Absent}); ok {
			t.Fatalf("PutItem Absent of a taken key %x: written", k)
		}
		wantItem(t, ctx, h, 0, it)
	}
	// The lookups are separate tables.
	if getItem(t, ctx, h, 1, key("a")) != nil {
		t.Fatal("an item of lookup 0 is found in lookup 1")
	}
	items, err := h.P.GetItems(ctx, 0, [][]byte{key("a"), key("zz"), {0x00, 0xff, 0x00}})
	must(t, err)
	if len(items) != 2 {
		t.Fatalf("GetItems of 2 stored and 1 missing key: %d items", len(items))
	}
}

func testPutAlways[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	k := append(key("red"), key("b1")...)
	it := index.Item{Key: k, Block: key("b1"), Inc: 7, Seq: 100, W: 1}
	ok, prev := put(t, ctx, h, 1, it, index.Cond{Kind: index.Always})
	if !ok || prev != nil {
		t.Fatalf("PutItem Always of a new key: ok %v, prev %+v", ok, prev)
	}
	newer := index.Item{Key: k, Block: key("b1"), Inc: 8, Seq: 300, W: 2}
	ok, prev = put(t, ctx, h, 1, newer, index.Cond{Kind: index.Always})
	if !ok || prev == nil || !same(*prev, it) {
		t.Fatalf("PutItem Always over an item: ok %v, prev %+v, want %+v", ok, prev, it)
	}
	wantItem(t, ctx, h, 1, newer)
	// An older write keeps the newer Seq, and writes the rest.
	older := index.Item{Key: k, Block: key("b1"), Inc: 9, Seq: 200, W: 3}
	ok, prev = put(t, ctx, h, 1, older, index.Cond{Kind: index.Always})
	if !ok || prev == nil || !same(*prev, newer) {
		t.Fatalf("PutItem Always of an older Seq: ok %v, prev %+v", ok, prev)
	}
	want := older
	want.Seq = 300
	wantItem(t, ctx, h, 1, want)
}

func testPutSameMarked[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	k := key("x")
	it := index.Item{Key: k, Block: key("b1"), Inc: 7, Seq: 100, W: 5}
	if ok, _ := put(t, ctx, h, 0, it, index.Cond{Kind: index.Same, Item: it}); ok {
		t.Fatal("PutItem Same of a missing item: written")
	}
	if ok, _ := put(t, ctx, h, 0, it, index.Cond{Kind: index.Marked, W: 5}); ok {
		t.Fatal("PutItem Marked of a missing item: written")
	}
	if getItem(t, ctx, h, 0, k) != nil {
		t.Fatal("a failed conditional put created the item")
	}
	put(t, ctx, h, 0, it, index.Cond{Kind: index.Absent})
	next := index.Item{Key: k, Block: key("b2"), Inc: 8, Seq: 50, W: 6}
	for _, bad := range []index.Item{
		{Key: k, Block: key("b1"), Inc: 7, Seq: 101, W: 5},
		{Key: k, Block: key("b1"), Inc: 7, Seq: 100, W: 4},
		{Key: k, Block: key("b1"), Inc: 7, Seq: 100},
		{Key: k, Block: key("b3"), Inc: 7, Seq: 100, W: 5},
	} {
		if ok, _ := put(t, ctx, h, 0, next, index.Cond{Kind: index.Same, Item: bad}); ok {
			t.Fatalf("PutItem Same with %+v over %+v: written", bad, it)
		}
	}
	if ok, _ := put(t, ctx, h, 0, next, index.Cond{Kind: index.Marked, W: 4}); ok {
		t.Fatal("PutItem Marked with another mark: written")
	}
	wantItem(t, ctx, h, 0, it)
	if ok, _ := put(t, ctx, h, 0, next, index.Cond{Kind: index.Same, Item: it}); !ok {
		t.Fatal("PutItem Same of the item as read: not written")
	}
	wantItem(t, ctx, h, 0, next) // Seq as given: no max
	back := index.Item{Key: k, Block: key("b1"), Inc: 7, Seq: 100}
	if ok, _ := put(t, ctx, h, 0, back, index.Cond{Kind: index.Marked, W: 6}); !ok {
		t.Fatal("PutItem Marked with the item's mark: not written")
	}
	wantItem(t, ctx, h, 0, back) // W 0: no mark
	unmarked := index.Item{Key: k, Block: key("b4"), Inc: 1, Seq: 1, W: 1}
	if ok, _ := put(t, ctx, h, 0, unmarked, index.Cond{Kind: index.Same, Item: back}); !ok {
		t.Fatal("PutItem Same of an unmarked item as read: not written")
	}
}

func testDeleteItems[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	mk := func(name string, blk string, inc, seq, w int64) index.Item {
		it := index.Item{Key: key(name), Block: key(blk), Inc: inc, Seq: seq, W: w}
		put(t, ctx, h, 1, it, index.Cond{Kind: index.Always})
		return it
	}
	a, b, c, d := mk("a", "b1", 1, 100, 5), mk("b", "b1", 1, 200, 5), mk("c", "b1", 2, 100, 6), mk("d", "b2", 1, 100, 0)
	del := func(keys [][]byte, c index.Cond, want int) {
		t.Helper()
		n, err := h.P.DeleteItems(ctx, 1, keys, c)
		must(t, err)
		if n != want {
			t.Fatalf("DeleteItems %+v: deleted %d, want %d", c, n, want)
		}
	}
	all := [][]byte{a.Key, b.Key, c.Key, d.Key, key("missing")}
	del(all, index.Cond{Kind: index.Held, Block: key("b1"), Inc: 1, Before: 200}, 1) // a
	if getItem(t, ctx, h, 1, a.Key) != nil || getItem(t, ctx, h, 1, b.Key) == nil {
		t.Fatal("DeleteItems Held with Before: wrong items deleted")
	}
	del(all, index.Cond{Kind: index.Marked, W: 6}, 1) // c
	if getItem(t, ctx, h, 1, c.Key) != nil {
		t.Fatal("DeleteItems Marked left the marked item")
	}
	stale := d
	stale.Seq++
	del([][]byte{d.Key}, index.Cond{Kind: index.Same, Item: stale}, 0)
	del([][]byte{d.Key}, index.Cond{Kind: index.Same, Item: d}, 1)
	del(all, index.Cond{Kind: index.Held, Block: key("b1"), Inc: 1}, 1) // b
	if items := scanAll(t, ctx, h, 1); len(items) != 0 {
		t.Fatalf("items left: %+v", items)
	}
}

func scanAll[T any](t *testing.T, ctx context.Context, h Harness[T], l int) []index.Item {
	t.Helper()
	items, err := h.P.ScanItems(ctx, l, nil, nil, 1000, false)
	must(t, err)
	return items
}

func testScanItems[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	var keys [][]byte
	for _, k := range [][]byte{key("b"), key("a"), append(key("a"), 0x00), append(key("a"), 0xff), key("ab"), {0xff, 0xff}, {0x01}} {
		keys = append(keys, k)
		put(t, ctx, h, 1, index.Item{Key: k, Block: key("x"), Inc: 1, Seq: 1}, index.Cond{Kind: index.Always})
	}
	slices.SortFunc(keys, bytes.Compare)
	got := scanAll(t, ctx, h, 1)
	if len(got) != len(keys) {
		t.Fatalf("ScanItems: %d items, want %d", len(got), len(keys))
	}
	for i := range keys {
		if !bytes.Equal(got[i].Key, keys[i]) || !bytes.Equal(got[i].Block, key("x")) {
			t.Fatalf("ScanItems[%d] = %x, want %x", i, got[i].Key, keys[i])
		}
	}
	for from := range keys {
		for to := from; to <= len(keys); to++ {
			var end []byte
			if to < len(keys) {
				end = keys[to]
			}
			for _, limit := range []int{1, 2, 100} {
				for _, desc := range []bool{false, true} {
					items, err := h.P.ScanItems(ctx, 1, keys[from], end, limit, desc)
					must(t, err)
					want := slices.Clone(keys[from:to])
					if to == len(keys) {
						want = slices.Clone(keys[from:])
					}
					if desc {
						slices.Reverse(want)
					}
					want = want[:min(len(want), limit)]
					if len(items) != len(want) {
						t.Fatalf("ScanItems [%x, %x) limit %d desc %v: %d items, want %d", keys[from], end, limit, desc, len(items), len(want))
					}
					for i := range want {
						if !bytes.Equal(items[i].Key, want[i]) {
							t.Fatalf("ScanItems [%x, %x) limit %d desc %v: item %d is %x, want %x", keys[from], end, limit, desc, i, items[i].Key, want[i])
						}
					}
				}
			}
		}
	}
	// Between the stored keys.
	from := append(key("a"), 0x00, 0x00)
	var want []string
	for _, k := range keys {
		if bytes.Compare(k, from) >= 0 && bytes.Compare(k, key("b")) < 0 {
			want = append(want, fmt.Sprintf("%x", k))
		}
	}
	for _, desc := range []bool{false, true} {
		items, err := h.P.ScanItems(ctx, 1, from, key("b"), 100, desc)
		must(t, err)
		var got2 []string
		for _, it := range items {
			got2 = append(got2, fmt.Sprintf("%x", it.Key))
		}
		if desc {
			slices.Reverse(got2)
		}
		if !slices.Equal(got2, want) {
			t.Fatalf("ScanItems between keys (desc %v): %v, want %v", desc, got2, want)
		}
	}
}

func docs() []Doc {
	return []Doc{{ID: "d1", Code: "c1", Tags: []string{"red", "blue"}}, {ID: "d2"}, {ID: "a\x00b", Code: "c3", Tags: []string{"x"}}}
}

func wantBlock[T any](t *testing.T, h Harness[T], b index.Block[T], d Doc, st index.Stamp) {
	t.Helper()
	v := h.View(b.Value)
	if !bytes.Equal(b.Key, d.Key()) || b.Stamp != st || b.Err != nil || v.ID != d.ID || v.Code != d.Code || !slices.Equal(v.Tags, d.Tags) {
		t.Fatalf("block %q = %+v, want %+v with stamp %+v", d.ID, b, d, st)
	}
}

func testBlocks[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	for i, d := range docs() {
		must(t, h.Write(ctx, d, index.Stamp{Seq: int64(100 + i), Inc: int64(i)}))
	}
	bs, err := h.P.ReadBlocks(ctx, [][]byte{key("d2"), key("missing"), key("d1"), key("a\x00b")})
	must(t, err)
	if len(bs) != 3 {
		t.Fatalf("ReadBlocks of 3 stored and 1 missing: %d blocks", len(bs))
	}
	for i, d := range docs() {
		j := slices.IndexFunc(bs, func(b index.Block[T]) bool { return bytes.Equal(b.Key, d.Key()) })
		if j < 0 {
			t.Fatalf("ReadBlocks: %q missing", d.ID)
		}
		wantBlock(t, h, bs[j], d, index.Stamp{Seq: int64(100 + i), Inc: int64(i)})
	}
}

func testFenceAndDelete[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	d := docs()[0]
	st := index.Stamp{Seq: 100, Inc: 7}
	must(t, h.Write(ctx, d, st))
	for _, bad := range []index.Stamp{{Seq: 99, Inc: 7}, {Seq: 100, Inc: 8}, {}} {
		ok, err := h.P.FenceBlock(ctx, d.Key(), bad, 200)
		must(t, err)
		if ok {
			t.Fatalf("FenceBlock over stamp %+v of a block at %+v: fenced", bad, st)
		}
		ok, err = h.P.DeleteBlock(ctx, d.Key(), bad)
		must(t, err)
		if ok {
			t.Fatalf("DeleteBlock at stamp %+v of a block at %+v: deleted", bad, st)
		}
	}
	ok, err := h.P.FenceBlock(ctx, d.Key(), st, 200)
	must(t, err)
	if !ok {
		t.Fatal("FenceBlock at the block's stamp: not fenced")
	}
	bs, err := h.P.ReadBlocks(ctx, [][]byte{d.Key()})
	must(t, err)
	if len(bs) != 1 {
		t.Fatal("the fenced block is gone")
	}
	wantBlock(t, h, bs[0], d, index.Stamp{Seq: 200, Inc: 7})
	ok, err = h.P.DeleteBlock(ctx, d.Key(), index.Stamp{Seq: 200, Inc: 7})
	must(t, err)
	if !ok {
		t.Fatal("DeleteBlock at the block's stamp: not deleted")
	}
	if bs, err := h.P.ReadBlocks(ctx, [][]byte{d.Key()}); err != nil || len(bs) != 0 {
		t.Fatalf("ReadBlocks after DeleteBlock: %v, %v", bs, err)
	}
	for _, f := range []func() (bool, error){
		func() (bool, error) { return h.P.FenceBlock(ctx, d.Key(), index.Stamp{}, 1) },
		func() (bool, error) { return h.P.DeleteBlock(ctx, d.Key(), index.Stamp{}) },
	} {
		ok, err := f()
		must(t, err)
		if ok {
			t.Fatal("FenceBlock or DeleteBlock of a missing block: done")
		}
	}
	// A block without a stamp (written before it had lookups).
	must(t, h.Write(ctx, d, index.Stamp{}))
	ok, err = h.P.FenceBlock(ctx, d.Key(), index.Stamp{}, 300)
	must(t, err)
	if !ok {
		t.Fatal("FenceBlock of a block without a stamp, at the zero stamp: not fenced")
	}
	bs, err = h.P.ReadBlocks(ctx, [][]byte{d.Key()})
	must(t, err)
	wantBlock(t, h, bs[0], d, index.Stamp{Seq: 300})
}

func testScanBlocks[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	ds := docs()
	for i := range 7 {
		ds = append(ds, Doc{ID: fmt.Sprintf("n%d", i), Tags: []string{"t"}})
	}
	for i, d := range ds {
		must(t, h.Write(ctx, d, index.Stamp{Seq: int64(i + 1), Inc: 1}))
	}
	slices.SortFunc(ds, func(a, b Doc) int { return bytes.Compare(a.Key(), b.Key()) })
	for _, limit := range []int{1, 3, 100} {
		var got []Doc
		var after []byte
		for {
			page, next, err := h.P.ScanBlocks(ctx, after, limit)
			must(t, err)
			if len(page) > limit {
				t.Fatalf("ScanBlocks limit %d: %d blocks", limit, len(page))
			}
			for _, b := range page {
				if b.Err != nil {
					t.Fatal(b.Err)
				}
				got = append(got, h.View(b.Value))
			}
			if next == nil {
				break
			}
			after = next
		}
		if len(got) != len(ds) {
			t.Fatalf("ScanBlocks limit %d: %d blocks, want %d", limit, len(got), len(ds))
		}
		if h.Unordered {
			slices.SortFunc(got, func(a, b Doc) int { return bytes.Compare(a.Key(), b.Key()) })
		}
		for i := range ds {
			if got[i].ID != ds[i].ID {
				t.Fatalf("ScanBlocks limit %d: block %d is %q, want %q (encoded key order)", limit, i, got[i].ID, ds[i].ID)
			}
		}
	}
}

func testDoneContext[T any](t *testing.T, ctx context.Context, h Harness[T]) {
	done, cancel := context.WithCancel(ctx)
	cancel()
	it := index.Item{Key: key("k"), Block: key("b1"), Inc: 1, Seq: 1}
	if _, _, err := h.P.PutItem(done, 0, it, index.Cond{Kind: index.Absent}); err == nil {
		t.Fatal("PutItem with a done context: no error")
	} else if !errors.Is(err, context.Canceled) && !h.P.Ambiguous(err) {
		t.Fatalf("PutItem with a done context: %v (neither context.Canceled nor ambiguous)", err)
	}
	if getItem(t, ctx, h, 0, it.Key) != nil {
		t.Fatal("PutItem with a done context wrote the item")
	}
	d := docs()[0]
	must(t, h.Write(ctx, d, index.Stamp{Seq: 1, Inc: 1}))
	if _, err := h.P.FenceBlock(done, d.Key(), index.Stamp{Seq: 1, Inc: 1}, 2); err == nil {
		t.Fatal("FenceBlock with a done context: no error")
	}
	if _, err := h.P.DeleteBlock(done, d.Key(), index.Stamp{Seq: 1, Inc: 1}); err == nil {
		t.Fatal("DeleteBlock with a done context: no error")
	}
	bs, err := h.P.ReadBlocks(ctx, [][]byte{d.Key()})
	must(t, err)
	if len(bs) != 1 {
		t.Fatal("DeleteBlock with a done context deleted the block")
	}
	wantBlock(t, h, bs[0], d, index.Stamp{Seq: 1, Inc: 1})
	for _, err := range []error{context.Canceled, context.DeadlineExceeded} {
		if !h.P.Ambiguous(err) {
			t.Fatalf("Ambiguous(%v) is false: a command cut short by its context may have been applied", err)
		}
	}
}
