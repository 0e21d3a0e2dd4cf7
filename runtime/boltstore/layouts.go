package boltstore

import (
	"fmt"
	"slices"

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

// shape is what block blk, whose marker holds marker, shows of its layout
// (runtime.Desc.LayoutDiffs): its marker holds the root entry, the entry of
// a partition or slice field holds its element count when the field is
// stored partitioned. It looks only at the fields given (every field when
// fields is nil), reading one entry per field it is asked about.
func (s *Store[T, K]) shape(blk *block, marker []byte, fields []string) runtime.StoredShape {
	return runtime.StoredShape{
		Root: len(marker) > 0,
		Entry: func(k string) runtime.Stored {
			if fields != nil && !slices.Contains(fields, k) {
				return runtime.NoEntry
			}
			switch v := blk.bucket.Get(blk.key(k, -1)); {
			case v == nil:
				return runtime.NoEntry
			case isCount(v) && (s.wholeSlices[k] || s.d.Field(k).Kind == runtime.KindPartition):
				// (an int64 value of another field is no count)
				return runtime.EntrySplit
			}
			return runtime.EntryWhole
		},
		Member: func(k string) bool { return hasMember(marker, k) },
	}
}

// convert rewrites block blk, stored in another layout (ds), in the
// descriptor's, inside the write's transaction: the values read in the
// layout that wrote them, the version entry as stored (none if none). A
// block it cannot read fails with runtime.ErrLayout, and the transaction
// writes nothing.
func (s *Store[T, K]) convert(blk *block, ds []runtime.LayoutDiff) error {
	id := blk.id.(K)
	t, err := s.read(blk, id)
	if err != nil {
		return ds[0].Err(blk.op, s.d.Aggregate, id, err)
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
// On a block of the descriptor's layout it costs one read per field given
// (every field when fields is nil).
func (s *Store[T, K]) current(blk *block, marker []byte, fields []string) error {
	if ds := s.d.LayoutDiffs(s.shape(blk, marker, fields)); len(ds) > 0 {
		return s.convert(blk, ds)
	}
	return nil
}
