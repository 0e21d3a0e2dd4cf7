package runtime

import (
	"fmt"
	"reflect"
	"strings"
)

// How a stored block differs from its descriptor's layout (issue 23,
// README "Changing a model"), decided once for every store: an adapter
// says what it physically found of one block (StoredShape: a root entry,
// and per field an entry of its own, whole or counted, or a member of the
// root entry) and Desc.LayoutDiffs names the differences (LayoutDiff),
// with the words every store's ErrLayout messages and Migrate reports use.

// Stored is how a block holds one field in an entry of its own.
type Stored uint8

const (
	// NoEntry: no entry of its own (a field added since, kept in the
	// root entry, or not looked at).
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
	// Strategy is the strategy the block shows it was written in: "eao"
	// when it has a root entry, "etf" when it has entries of their own
	// for its fields and no root entry, "" when nothing tells (no root
	// entry and no entry of a field, or a store whose blocks are the same
	// under both).
	Strategy string
	// Entry says how the block holds field key in an entry of its own.
	Entry func(key string) Stored
	// Member reports whether the block's root entry holds field key; it
	// is asked only of partitions and only under Strategy "eao" (nil:
	// never).
	Member func(key string) bool
}

// LayoutChange is the kind of a LayoutDiff.
type LayoutChange uint8

const (
	// StoredEAO: an EAO block under an ETF descriptor.
	StoredEAO LayoutChange = iota + 1
	// StoredETF: an ETF block under an EAO descriptor.
	StoredETF
	// PartitionWhole: a partition stored whole in an entry of its own, as
	// an ETF layout without the partition wrote it.
	PartitionWhole
	// PartitionInRoot: a partition stored whole in the root entry, as an
	// EAO layout without the partition wrote it.
	PartitionInRoot
	// FieldSplit: a field the descriptor keeps whole stored partitioned.
	FieldSplit
	// OutsideRoot: under EAO, a field of the root entry stored in an
	// entry of its own beside it.
	OutsideRoot
	// Miscounted: a partition whose element count is not its number of
	// elements (MongoDB's _len, see Miscount).
	Miscounted
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

// Miscount is the difference of a partition whose count is count, where
// it holds elems elements.
func Miscount(key string, count, elems int) LayoutDiff {
	return LayoutDiff{Change: Miscounted, Entry: key, Count: count, Elems: elems}
}

// Words says how the block stores the entry, and how the descriptor has
// it: "eao" and "etf", "whole" and "partitioned".
func (d LayoutDiff) Words() (stored, want string) {
	switch d.Change {
	case StoredEAO:
		return "eao", "etf"
	case StoredETF:
		return "etf", "eao"
	case PartitionWhole:
		return "whole", "partitioned"
	case PartitionInRoot:
		return "whole in the root entry", "partitioned"
	case FieldSplit:
		return "partitioned", "whole"
	case OutsideRoot:
		return "outside the root entry", "inside it"
	case Miscounted:
		return fmt.Sprintf("counted %d of %d elements", d.Count, d.Elems), fmt.Sprintf("counted %d", d.Elems)
	}
	return "otherwise", "as the repository has it"
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
	entry := d.Entry
	if entry == "" {
		entry = "ε"
	}
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

// LayoutDiffs lists how block s differs from d's layout, in the order of
// d's fields after the strategy; nil for a block in d's layout (fields
// missing from the block are no difference: they read as zero values).
func (d *Desc[T, K]) LayoutDiffs(s StoredShape) []LayoutDiff {
	var out []LayoutDiff
	switch {
	case s.Strategy == "eao" && !d.EAO:
		out = append(out, LayoutDiff{Change: StoredEAO})
	case s.Strategy == "etf" && d.EAO:
		out = append(out, LayoutDiff{Change: StoredETF})
	}
	for _, f := range d.Fields {
		e := s.Entry(f.Key)
		switch {
		case f.Kind == KindPartition:
			if e == EntryWhole {
				out = append(out, LayoutDiff{Change: PartitionWhole, Entry: f.Key})
			} else if e == NoEntry && s.Strategy == "eao" && s.Member != nil && s.Member(f.Key) {
				out = append(out, LayoutDiff{Change: PartitionInRoot, Entry: f.Key})
			}
		case e == EntrySplit:
			out = append(out, LayoutDiff{Change: FieldSplit, Entry: f.Key})
		case e == EntryWhole && d.EAO && s.Strategy == "eao":
			out = append(out, LayoutDiff{Change: OutsideRoot, Entry: f.Key})
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
	p := f.addr(new(T))
	if p == nil {
		return false
	}
	t := reflect.TypeOf(p).Elem()
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
