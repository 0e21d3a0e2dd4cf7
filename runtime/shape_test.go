package runtime

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// shapeOf is the StoredShape of a block given as its entries of their own
// (key: Whole or Split) and the members of its root entry (nil: none).
func shapeOf(root bool, entries map[string]Stored, members ...string) StoredShape {
	return StoredShape{
		Root:   root,
		Entry:  func(k string) Stored { return entries[k] },
		Member: func(k string) bool { return slices.Contains(members, k) },
	}
}

func TestLayoutDiffs(t *testing.T) {
	etf, eao := evoDesc(false, false, false), evoDesc(true, false, false)
	part, eaopart := evoDesc(false, true, false), evoDesc(true, true, false)
	fields := map[string]Stored{"name": EntryWhole, "email": EntryWhole, "city": EntryWhole}
	with := func(k string, s Stored) map[string]Stored {
		m := map[string]Stored{k: s}
		for f, s := range fields {
			m[f] = s
		}
		return m
	}
	// The blocks each of the four layouts writes.
	etfBlock := shapeOf(false, with("scores", EntryWhole))
	eaoBlock := shapeOf(true, nil, "name", "email", "city", "scores")
	partBlock := shapeOf(false, with("scores", EntrySplit))
	eaopartBlock := shapeOf(true, map[string]Stored{"scores": EntrySplit}, "name", "email", "city")
	for _, c := range []struct {
		name  string
		d     *Desc[evoPlayer, string]
		block StoredShape
		want  string
	}{
		{"etf as etf", etf, etfBlock, ""},
		{"eao as eao", eao, eaoBlock, ""},
		{"part as part", part, partBlock, ""},
		{"eaopart as eaopart", eaopart, eaopartBlock, ""},
		{"etf as eao", eao, etfBlock, "etf"},
		{"eao as etf", etf, eaoBlock, "eao"},
		{"etf as part", part, etfBlock, "scores whole"},
		{"part as etf", etf, partBlock, "scores partitioned"},
		{"eao as eaopart", eaopart, eaoBlock, "scores whole in the root entry"},
		{"eaopart as eao", eao, eaopartBlock, "scores partitioned"},
		{"part as eaopart", eaopart, partBlock, "etf"},
		{"etf as eaopart", eaopart, etfBlock, "etf, scores whole"},
		{"eaopart as etf", etf, eaopartBlock, "eao, scores partitioned"},
		// A field beside the root entry of an EAO block.
		{"loose field", eao, shapeOf(true, map[string]Stored{"city": EntryWhole}), "city outside the root entry"},
		// No root entry and no entry of a field: nothing tells ETF.
		{"no entries", eao, shapeOf(false, nil), ""},
		// An ETF block whose fields are all partitions.
		{"partitions only", eaopart, shapeOf(false, map[string]Stored{"scores": EntrySplit}), "etf"},
		// A field added since is missing: no difference.
		{"added field", etf, shapeOf(false, map[string]Stored{"name": EntryWhole}), ""},
	} {
		if got := DescribeDiffs(c.d.LayoutDiffs(c.block)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if ds := part.LayoutDiffs(partBlock); ds != nil {
		t.Errorf("a block in the descriptor's layout: %v, want nil", ds)
	}
	// A partition in the root entry counts only under a root entry.
	if got := DescribeDiffs(part.LayoutDiffs(shapeOf(false, fields, "scores"))); got != "" {
		t.Errorf("members without a root entry: %q, want none", got)
	}
}

func TestLayoutDiffWords(t *testing.T) {
	for _, c := range []struct {
		d                   LayoutDiff
		str, stored, wanted string
	}{
		{LayoutDiff{Change: StoredEAO}, "eao", "eao", "etf"},
		{LayoutDiff{Change: StoredETF}, "etf", "etf", "eao"},
		{LayoutDiff{Change: PartitionWhole, Entry: "scores"}, "scores whole", "whole", "partitioned"},
		{LayoutDiff{Change: PartitionInRoot, Entry: "scores"}, "scores whole in the root entry", "whole in the root entry", "partitioned"},
		{LayoutDiff{Change: FieldSplit, Entry: "scores"}, "scores partitioned", "partitioned", "whole"},
		{LayoutDiff{Change: OutsideRoot, Entry: "city"}, "city outside the root entry", "outside the root entry", "inside it"},
		{LayoutDiff{Change: Miscounted, Entry: "scores", Count: 3, Elems: 5}, "scores counted 3 of 5 elements", "counted 3 of 5 elements", "counted 5"},
	} {
		if got := c.d.String(); got != c.str {
			t.Errorf("%+v: String %q, want %q", c.d, got, c.str)
		}
		stored, want := c.d.Words()
		if stored != c.stored || want != c.wanted {
			t.Errorf("%+v: Words %q, %q, want %q, %q", c.d, stored, want, c.stored, c.wanted)
		}
		entry := c.d.Entry
		if entry == "" {
			entry = "ε"
		}
		err := c.d.Err("Update", "Player", "p1", nil)
		if !errors.Is(err, ErrLayout) || err.Error() != LayoutMismatch("Update", "Player", "p1", entry, stored, want).Error() {
			t.Errorf("%+v: Err %v, want the LayoutMismatch of its words", c.d, err)
		}
	}
	cause := errors.New("bad root")
	err := LayoutDiff{Change: StoredETF}.Err("Update", "Player", "p1", cause)
	if !errors.Is(err, ErrLayout) || !errors.Is(err, cause) || !strings.Contains(err.Error(), "cannot be rewritten") || !strings.Contains(err.Error(), "entry ε is stored etf") {
		t.Errorf("Err with a cause: %v, want ErrLayout wrapping the cause, saying the block cannot be rewritten", err)
	}
	if got := DescribeDiffs(nil); got != "" {
		t.Errorf("DescribeDiffs(nil) = %q", got)
	}
}

func TestFieldSlice(t *testing.T) {
	type agg struct {
		Tags  []string
		Raw   []byte
		Name  string
		Elems []int
	}
	for _, c := range []struct {
		f    *Field[agg]
		want bool
	}{
		{NewField("tags", "Tags", func(a *agg) *[]string { return &a.Tags }), true},
		{NewField("raw", "Raw", func(a *agg) *[]byte { return &a.Raw }), false},
		{NewField("name", "Name", func(a *agg) *string { return &a.Name }), false},
		{NewPartition("elems", "Elems", func(a *agg) *[]int { return &a.Elems }), false},
	} {
		if got := c.f.Slice(); got != c.want {
			t.Errorf("%s: Slice() = %v, want %v", c.f.Key, got, c.want)
		}
	}
}
