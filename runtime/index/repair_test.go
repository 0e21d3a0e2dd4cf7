package index_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime/index"
)

func TestRepair(t *testing.T) {
	ctx := context.Background()
	f := newFixture(30 * time.Second)
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
	// Removed: c4, d1 green.
	if rep.Added != 5 || rep.Removed != 4 {
		t.Errorf("report %v, want 5 added and 4 removed", rep)
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
