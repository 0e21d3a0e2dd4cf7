package boltstore

import (
	"fmt"
	"reflect"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Blocks written in another layout of the aggregate (issue 23, README
// "Changing a model"). A block says which layout wrote it: its marker is
// empty under ETF and holds the root entry under EAO, and the entry of a
// partitioned field holds its element count (an int64) where a whole
// field's entry holds its value (a slice is a BSON array or null). Reads
// (blockReader) read every such block as the layout that wrote it meant;
// an entry-level write on one first rewrites it whole in the descriptor's
// layout, in its own transaction (convert); Put rewrites every block in
// it anyway; MigrateBlocks rewrites them a batch at a time.

// isCount reports whether a stored value is an element count.
func isCount(v []byte) bool { return len(v) == 9 && bson.Type(v[0]) == bson.TypeInt64 }

// wholeSlices returns the keys of d's non-partitioned fields whose values
// are slices (but not []byte, which is one BSON binary value): the fields
// another layout may have partitioned.
func wholeSlices[T any, K comparable](d *runtime.Desc[T, K]) map[string]bool {
	out := map[string]bool{}
	t := new(T)
	for _, f := range d.Fields {
		if f.Kind != runtime.KindField {
			continue
		}
		p := f.Addr(t)
		if p == nil {
			continue
		}
		typ := reflect.TypeOf(p).Elem()
		if typ.Kind() == reflect.Slice && typ.Elem().Kind() != reflect.Uint8 {
			out[f.Key] = true
		}
	}
	return out
}

// rootMembers calls fn with each member of root, a stored root entry (a
// BSON document value), as a stored value (type byte, then the value).
func rootMembers(root []byte, fn func(key string, v []byte) error) error {
	if len(root) == 0 || bson.Type(root[0]) != bson.TypeEmbeddedDocument {
		return fmt.Errorf("the root entry is no document")
	}
	elems, err := bson.Raw(root[1:]).Elements()
	if err != nil {
		return fmt.Errorf("the root entry: %w", err)
	}
	for _, el := range elems {
		v := el.Value()
		if err := fn(el.Key(), append([]byte{byte(v.Type)}, v.Value...)); err != nil {
			return err
		}
	}
	return nil
}

// members decodes the members of root into the fields of t that have
// their entry keys (only into field only, when set): the root entry of a
// block written under EAO, read under ETF, or a partition of an EAO block
// written by a layout that kept it whole.
func (s *Store[T, K]) members(t *T, root []byte, only *runtime.Field[T], dec *valueDecoder) error {
	return rootMembers(root, func(key string, v []byte) error {
		f := s.d.Field(key)
		if f == nil || f.Kind == runtime.KindVersion || only != nil && f != only {
			return nil
		}
		dec.b = v
		return f.Decode(t, dec)
	})
}

// hasMember reports whether the stored root entry root has member key.
func hasMember(root []byte, key string) bool {
	found := false
	_ = rootMembers(root, func(k string, _ []byte) error {
		found = found || k == key
		return nil
	})
	return found
}

// mismatch is one way a stored block differs from the descriptor's
// layout: entry is stored as stored, the layout wants it as want.
type mismatch struct{ entry, stored, want string }

// mismatches lists how block blk, whose marker holds marker, is stored in
// another layout than the descriptor's: its strategy, and how it stores
// the fields given (every field when fields is nil). It reads one entry per
// partition or slice field it checks, and nothing for the others.
func (s *Store[T, K]) mismatches(blk *block, marker []byte, fields []string) []mismatch {
	var out []mismatch
	eao := len(marker) > 0
	switch {
	case eao && !s.d.EAO:
		out = append(out, mismatch{"ε", "eao", "etf"})
	case !eao && s.d.EAO:
		out = append(out, mismatch{"ε", "etf", "eao"})
	}
	check := func(f *runtime.Field[T]) {
		switch {
		case f.Kind == runtime.KindPartition:
			v := blk.bucket.Get(blk.key(f.Key, -1))
			if v != nil && !isCount(v) || v == nil && eao && hasMember(marker, f.Key) {
				out = append(out, mismatch{f.Key, "whole", "partitioned"})
			}
		case s.wholeSlices[f.Key]:
			if v := blk.bucket.Get(blk.key(f.Key, -1)); v != nil && isCount(v) {
				out = append(out, mismatch{f.Key, "partitioned", "whole"})
			}
		}
	}
	if fields == nil {
		for _, f := range s.d.Fields {
			check(f)
		}
		return out
	}
	for _, k := range fields {
		if f := s.d.Field(k); f != nil {
			check(f)
		}
	}
	return out
}

// describe names the layout a block was found in, for
// runtime.BlockMigration.From: "etf", "eao", "scores whole", joined by
// ", ".
func describe(ms []mismatch) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		if m.entry == "ε" {
			parts[i] = m.stored
		} else {
			parts[i] = m.entry + " " + m.stored
		}
	}
	return strings.Join(parts, ", ")
}

// convert rewrites block blk, stored in another layout (ms), in the
// descriptor's, inside the write's transaction: the values read in the
// layout that wrote them, the version entry as stored (none if none). A
// block it cannot read fails with runtime.ErrLayout, and the transaction
// writes nothing.
func (s *Store[T, K]) convert(blk *block, ms []mismatch) error {
	id := blk.id.(K)
	t, err := s.read(blk, id)
	if err != nil {
		m := ms[0]
		return runtime.FailAt(blk.op, s.d.Aggregate, id, fmt.Sprintf("entry %s is stored %s, this repository's layout has it %s, and the block cannot be rewritten in it (Migrate reports such blocks)", m.entry, m.stored, m.want), runtime.ErrLayout, err)
	}
	version := int64(-1)
	if s.d.Version != nil && blk.bucket.Get(blk.key(s.d.Version.Key, -1)) != nil {
		if version, err = blk.version(s.d.Version.Key); err != nil {
			return err
		}
	}
	s.rewrite(blk, t, version)
	return blk.Err()
}

// current converts block blk when it is stored in another layout in the
// way the fields given are (the strategy, and the fields' own entries): an
// entry-level write then writes into a block of the descriptor's layout.
// On a block of the descriptor's layout it costs one read per partition or
// slice field given.
func (s *Store[T, K]) current(blk *block, marker []byte, fields []string) error {
	if ms := s.mismatches(blk, marker, fields); len(ms) > 0 {
		return s.convert(blk, ms)
	}
	return nil
}
