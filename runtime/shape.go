package runtime

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// How a stored block differs from its descriptor's layout (issue 23,
// README "Changing a model"), decided once for every store: an adapter
// says what it physically found of one block (StoredShape) and
// Desc.LayoutDiffs names the differences (LayoutDiff), in the words of
// every store's ErrLayout messages and Migrate reports.

// Stored is how a block holds one field in an entry of its own.
type Stored uint8

const (
	// NoEntry: no entry of its own (a field added since, one of the root
	// entry, or one not looked at).
	NoEntry Stored = iota
	// EntryWhole: one entry holds the whole value.
	EntryWhole
	// EntrySplit: the field is partitioned: an element count and an
	// entry per element.
	EntrySplit
)

// StoredShape is what an adapter found of the layout of one stored block,
// whatever its physical tests are (a marker, an attribute, an element
// count).
type StoredShape struct {
	// Root: the block has a root entry (EAO wrote it). A block without
	// one was written by ETF if it has an entry of a field.
	Root bool
	// Entry says how the block holds field key in an entry of its own.
	Entry func(key string) Stored
	// Member reports whether the root entry holds field key; it is asked
	// only of partitions (nil: never).
	Member func(key string) bool
}

// LayoutChange is the kind of a LayoutDiff.
type LayoutChange uint8

const (
	StoredEAO       LayoutChange = iota + 1 // an EAO block, the descriptor ETF
	StoredETF                               // an ETF block, the descriptor EAO
	PartitionWhole                          // a partition in one entry of its own (ETF without it)
	PartitionInRoot                         // a partition in the root entry (EAO without it)
	FieldSplit                              // a field kept whole stored partitioned
	OutsideRoot                             // under EAO, a field of the root entry in an entry of its own
	Miscounted                              // a partition's count is not its number of elements (MongoDB's _len)
)

// LayoutDiff is one way a stored block differs from its descriptor's
// layout.
type LayoutDiff struct {
	Change LayoutChange
	// Entry is the field's entry key ("" for the strategy).
	Entry string
	// Count and Elems are a Miscounted partition's count and number of
	// elements.
	Count, Elems int
}

// layoutWords are how a block stores an entry and how the descriptor has
// it, per LayoutChange.
var layoutWords = [...][2]string{
	StoredEAO: {"eao", "etf"}, StoredETF: {"etf", "eao"},
	PartitionWhole: {"whole", "partitioned"}, PartitionInRoot: {"whole in the root entry", "partitioned"},
	FieldSplit: {"partitioned", "whole"}, OutsideRoot: {"outside the root entry", "inside it"},
}

// Words says how the block stores the entry, and how the descriptor has
// it: "eao" and "etf", "whole" and "partitioned".
func (d LayoutDiff) Words() (stored, want string) {
	if d.Change == Miscounted {
		return fmt.Sprintf("counted %d of %d elements", d.Count, d.Elems), fmt.Sprintf("counted %d", d.Elems)
	}
	w := layoutWords[d.Change]
	return w[0], w[1]
}

// String names the layout the block was found in where it differs:
// "eao", "scores whole".
func (d LayoutDiff) String() string {
	stored, _ := d.Words()
	if d.Entry == "" {
		return stored
	}
	return d.Entry + " " + stored
}

// Err is the error of operation op on block id refused for d
// (ErrLayout); cause, when set, is why the block could not be rewritten
// in the descriptor's layout either.
func (d LayoutDiff) Err(op, agg string, id any, cause error) error {
	stored, want := d.Words()
	entry := cmp.Or(d.Entry, "ε")
	if cause == nil {
		return LayoutMismatch(op, agg, id, entry, stored, want)
	}
	return FailAt(op, agg, id, fmt.Sprintf("entry %s is stored %s, this repository's layout has it %s, and the block cannot be rewritten in it (Migrate reports such blocks)", entry, stored, want), ErrLayout, cause)
}

// DescribeDiffs names the layout a block was found in, for
// BlockMigration.From: "etf, scores whole" ("" for none).
func DescribeDiffs(ds []LayoutDiff) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}

// LayoutDiffs lists how block s differs from d's layout, the strategy
// first, then in the order of d's fields; nil for a block in d's layout
// (fields missing from the block are no difference: they read as zero
// values).
func (d *Desc[T, K]) LayoutDiffs(s StoredShape) []LayoutDiff {
	var out []LayoutDiff
	switch {
	case s.Root && !d.EAO:
		out = append(out, LayoutDiff{Change: StoredEAO})
	case !s.Root && d.EAO && slices.ContainsFunc(d.Fields, func(f *Field[T]) bool { return s.Entry(f.Key) != NoEntry }):
		out = append(out, LayoutDiff{Change: StoredETF})
	}
	for _, f := range d.Fields {
		switch e := s.Entry(f.Key); {
		case f.Kind == KindField && e == EntrySplit:
			out = append(out, LayoutDiff{Change: FieldSplit, Entry: f.Key})
		case f.Kind == KindField && e == EntryWhole && d.EAO && s.Root:
			out = append(out, LayoutDiff{Change: OutsideRoot, Entry: f.Key})
		case f.Kind == KindPartition && e == EntryWhole:
			out = append(out, LayoutDiff{Change: PartitionWhole, Entry: f.Key})
		case f.Kind == KindPartition && e == NoEntry && s.Root && s.Member != nil && s.Member(f.Key):
			out = append(out, LayoutDiff{Change: PartitionInRoot, Entry: f.Key})
		}
	}
	return out
}

// Slice reports whether f is a field (not a partition) holding a slice,
// but not []byte (one value in every store): a field another layout of
// the model may have partitioned.
func (f *Field[T]) Slice() bool {
	if f.Kind != KindField || f.addr == nil {
		return false
	}
	t := reflect.TypeOf(f.addr(new(T))).Elem()
	return t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8
}

// Slices are the keys of d's fields holding slices (Field.Slice).
func (d *Desc[T, K]) Slices() map[string]bool {
	out := map[string]bool{}
	for _, f := range d.Fields {
		if f.Slice() {
			out[f.Key] = true
		}
	}
	return out
}
