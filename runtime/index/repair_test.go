package index_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// TestRepair runs Repair over blocks scanned in key order and in reverse
// key order (a store without ordered scans, Primitives.ScanBlocks): the
// same conflicts and the same index tables.
func TestRepair(t *testing.T) {
	t.Run("KeyOrder", func(t *testing.T) { testRepair(t, nil) })
	t.Run("ReverseOrder", func(t *testing.T) {
		testRepair(t, func(s *memindex.Store[Doc]) index.Primitives[Doc] { return reversed{s} })
	})
	t.Run("FieldReader", func(t *testing.T) {
		testRepair(t, func(s *memindex.Store[Doc]) index.Primitives[Doc] { return fieldReader{s} })
	})
}

// fieldReader are memindex primitives with a FieldReader, whose
// ReadBlocks (a read of whole blocks) fails: Repair must read the blocks
// its items point at with ReadFields.
type fieldReader struct{ *memindex.Store[Doc] }

func (r fieldReader) ReadBlocks(context.Context, [][]byte) ([]index.Block[Doc], error) {
	return nil, errors.New("ReadBlocks: Repair read whole blocks")
}

func (r fieldReader) ReadFields(ctx context.Context, keys [][]byte) ([]index.Block[Doc], error) {
	return r.Store.ReadBlocks(ctx, keys)
}

// reversed are memindex primitives whose ScanBlocks pages through the
// blocks in reverse key order.
type reversed struct{ *memindex.Store[Doc] }

func (r reversed) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[Doc], []byte, error) {
	all := r.Blocks()
	slices.Reverse(all)
	i := 0
	if after != nil {
		i = slices.IndexFunc(all, func(b index.Block[Doc]) bool { return bytes.Compare(b.Key, after) < 0 })
		if i < 0 {
			return nil, nil, ctx.Err()
		}
	}
	page := all[i:min(i+limit, len(all))]
	return page, index.NextAfter(page, limit), ctx.Err()
}

func testRepair(t *testing.T, wrap func(*memindex.Store[Doc]) index.Primitives[Doc]) {
	ctx := context.Background()
	f := newFixture(30 * time.Second)
	if wrap != nil {
		f.e.P = wrap(f.s)
	}
	f.s.Decode = func(d Doc) error {
		if d.ID == "bad" {
			return errors.New("does not decode")
		}
		return nil
	}
	st := index.Stamp{Seq: 10, Inc: 5}
	// Blocks written around the protocol: c1 held by d1, d5 and d3 (d1
	// first in key order, its claim pointing at d5), c2 by d2 only but
	// claimed by nobody.
	for _, d := range []Doc{
		{ID: "d5", Code: "c1", Tags: []string{"red"}},
		{ID: "d1", Code: "c1", Tags: []string{"red", "blue"}},
		{ID: "d3", Code: "c1"},
		{ID: "d2", Code: "c2"},
		{ID: "bad", Code: "c3", Tags: []string{"red"}},
	} {
		f.s.Set(d.Key(), st, d)
	}
	f.s.SetItem(0, index.Item{Key: key("c1"), Block: key("d5"), Inc: 5, Seq: 1})
	// An unreadable block's items stay; a stale item and an item of an
	// earlier incarnation go or are corrected.
	f.s.SetItem(0, index.Item{Key: key("c3"), Block: key("bad"), Inc: 5, Seq: 1})
	f.s.SetItem(0, index.Item{Key: key("c4"), Block: key("d2"), Inc: 5, Seq: 1})
	f.s.SetItem(1, index.Item{Key: index.IndexKey(false, key("red"), key("d1")), Block: key("d1"), Inc: 4, Seq: 1})
	f.s.SetItem(1, index.Item{Key: index.IndexKey(false, key("green"), key("d1")), Block: key("d1"), Inc: 5, Seq: 1})
	rep, err := f.e.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantConflicts := []string{`Doc.code "c1" is held by "d1", "d3" and "d5": kept for "d1"`}
	if !slices.Equal(rep.Conflicts, wantConflicts) {
		t.Errorf("conflicts %q, want %q", rep.Conflicts, wantConflicts)
	}
	if len(rep.Unreadable) != 1 || rep.Aggregates != 4 {
		t.Errorf("report %v, want 4 aggregates and 1 unreadable block", rep)
	}
	// Added: c2, d5 red, d1 blue; corrected: c1 (d5 -> d1), d1 red (inc 4).
	// Removed: c4, d1 green. In reverse order c1 is corrected twice (d5 ->
	// d3 -> d1).
	added, removed := 5, 4
	if _, reverse := f.e.P.(reversed); reverse {
		added, removed = 6, 5
	}
	if rep.Added != added || rep.Removed != removed {
		t.Errorf("report %v, want %d added and %d removed", rep, added, removed)
	}
	items := f.s.Items(0)
	var got []string
	for _, it := range items {
		got = append(got, string(it.Key[1:len(it.Key)-1])+"->"+string(it.Block[1:len(it.Block)-1]))
	}
	if want := []string{"c1->d1", "c2->d2", "c3->bad"}; !slices.Equal(got, want) {
		t.Errorf("codes %v, want %v", got, want)
	}
	if n := len(f.s.Items(1)); n != 3 {
		t.Errorf("%d tag items, want 3 (d1 red, d1 blue, d5 red) and none of bad's", n)
	}
	// Nothing left to do.
	if rep, err := f.e.Repair(ctx); err != nil || rep.Added+rep.Removed != 0 || len(rep.Conflicts) != 1 {
		t.Errorf("second Repair: %v, %v", rep, err)
	}
}

// TestRepairBuild: Repair as a lookup build (runtime.RepairOptions in its
// context) starts after the position given, reports each page, gives
// items to the lookups named only, and removes nothing: an item no block
// holds may be a write's in flight.
func TestRepairBuild(t *testing.T) {
	f := newFixture(30 * time.Second)
	st := index.Stamp{Seq: 10, Inc: 5}
	for _, d := range []Doc{
		{ID: "d1", Code: "c1", Tags: []string{"red"}},
		{ID: "d2", Code: "c2", Tags: []string{"red"}},
		{ID: "d3", Code: "c3", Tags: []string{"blue"}},
		{ID: "d4", Code: "c4", Tags: []string{"blue"}},
		{ID: "d5", Code: "c5"},
	} {
		f.s.Set(d.Key(), st, d)
	}
	// An item no block holds (as a write in flight leaves it).
	f.s.SetItem(1, index.Item{Key: index.IndexKey(false, key("green"), key("d9")), Block: key("d9"), Inc: 5, Seq: 1})
	var pages [][]byte
	ctx := runtime.WithRepairOptions(context.Background(), runtime.RepairOptions{
		After:   key("d1"),
		Lookups: []string{"tags"}, // Doc.tags, as the model names it
		OnPage: func(last []byte, blocks int) error {
			pages = append(pages, last)
			return nil
		},
	})
	rep, err := f.e.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Pages of two after d1: d2 d3, d4 d5.
	if want := [][]byte{key("d3"), key("d5")}; !slices.EqualFunc(pages, want, bytes.Equal) {
		t.Errorf("pages ending at %q, want %q", pages, want)
	}
	if n := len(f.s.Items(0)); n != 0 {
		t.Errorf("%d code items: the build gave items to a lookup it was not building", n)
	}
	var got []string
	for _, it := range f.s.Items(1) {
		got = append(got, string(it.Block[1:len(it.Block)-1]))
	}
	// d2 red, d3 blue, d4 blue, and d9's item left alone; d1 is before
	// the start.
	if want := []string{"d3", "d4", "d9", "d2"}; len(got) != len(want) || rep.Added != 3 || rep.Removed != 0 {
		t.Errorf("tag items of %v (report %v), want those of %v", got, rep, want)
	}
}
