package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// SchemaBucket holds the schema records of runtime/evolve.go: key the
// collection name, value the record EnsureIndexes keeps (runtime.
// SchemaRecord). No collection, index bucket ("$coll.$lookup") or
// CountersBucket has its name.
const SchemaBucket = "_noam_schema"

// FenceBucket holds the layout fence of each collection (runtime/fence.go):
// key the collection name, value the fence number of its schema record
// (8 bytes, big-endian), written in the transaction that writes the
// record. Every write transaction of a fenced write reads it.
const FenceBucket = "_noam_fence"

// FencesWrites implements runtime.LayoutFencer: every write checks the
// fence in its transaction.
func (s *Store[T, K]) FencesWrites() bool { return true }

// fenced fails with runtime.FenceMoved when the write running in ctx is
// fenced (runtime.WriteFence) and the fence stored for the collection (0:
// none) is another: the transaction then rolls back.
func (c collection[K]) fenced(ctx context.Context, tx *bbolt.Tx, op string, id any) error {
	want, ok := runtime.WriteFence(ctx)
	if !ok {
		return nil
	}
	var stored int64
	if b := tx.Bucket([]byte(FenceBucket)); b != nil {
		if v := b.Get([]byte(c.Name)); len(v) == 8 {
			stored = int64(binary.BigEndian.Uint64(v))
		}
	}
	if stored != want {
		return runtime.FenceMoved(op, c.Aggregate, id, stored, want)
	}
	return nil
}

// LoadSchema reads the collection's schema record in one read transaction
// (nil when there is none).
func (s *Store[T, K]) LoadSchema(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, runtime.Fail("LoadSchema", s.d.Aggregate, nil, nil, err)
	}
	var out []byte
	err := view(ctx, s.c.DB, func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(SchemaBucket)); b != nil {
			if v := b.Get([]byte(s.c.Name)); v != nil {
				out = bytes.Clone(v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, runtime.Fail("LoadSchema", s.d.Aggregate, nil, nil, err)
	}
	return out, nil
}

// SaveSchema stores rec as the collection's schema record in one write
// transaction, if the stored record is still old (nil: none); otherwise it
// fails with runtime.ErrConflict and writes nothing.
func (s *Store[T, K]) SaveSchema(ctx context.Context, old, rec []byte) error {
	const op = "SaveSchema"
	err := update(ctx, s.c.DB, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(SchemaBucket))
		if err != nil {
			return err
		}
		stored := b.Get([]byte(s.c.Name))
		if (stored == nil) != (old == nil) || !bytes.Equal(stored, old) {
			return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(the schema record of collection %s changed meanwhile)", s.c.Name), runtime.ErrConflict, nil)
		}
		if err := b.Put([]byte(s.c.Name), bytes.Clone(rec)); err != nil {
			return err
		}
		fb, err := tx.CreateBucketIfNotExists([]byte(FenceBucket))
		if err != nil {
			return err
		}
		return fb.Put([]byte(s.c.Name), binary.BigEndian.AppendUint64(nil, uint64(runtime.RecordFence(rec))))
	})
	if err != nil {
		return s.c.fail(op, nil, err)
	}
	return nil
}

// DropLookup deletes the index bucket of lookup l, which the repository no
// longer has; a bucket that does not exist is no error.
func (s *Store[T, K]) DropLookup(ctx context.Context, l runtime.LookupLayout) error {
	name := []byte(IndexBucket(s.c.Name, l.Name))
	err := update(ctx, s.c.DB, func(tx *bbolt.Tx) error {
		if tx.Bucket(name) == nil {
			return nil
		}
		return tx.DeleteBucket(name)
	})
	if err != nil {
		return s.c.fail("DropLookup", nil, err)
	}
	return nil
}

// MigrateBlocks reads up to n blocks in block-key order after the block
// whose encoded key is after (nil: from the first), in one write
// transaction (a read transaction in a dry run), and rewrites each that is
// stored in another layout in the descriptor's: its values as read, its
// version entry as stored. The transaction is the condition: no write
// comes between the read of a block and its rewrite. A block that cannot
// be read is reported (Err) and left as it is.
func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	const op = "Migrate"
	var from []byte
	if after != nil {
		if _, err := s.id(after); err != nil {
			return nil, nil, false, runtime.Fail(op, s.d.Aggregate, nil, runtime.ErrBadCursor, err)
		}
		from = runtime.PrefixEnd(BlockPrefix(after))
	}
	var res []runtime.BlockMigration
	var last K
	var more bool
	migrate := func(blk *block, id K) (runtime.BlockMigration, error) {
		m := runtime.BlockMigration{ID: id}
		marker, _ := blk.marker()
		ds := s.d.LayoutDiffs(s.shape(blk, marker, nil))
		if len(ds) == 0 {
			return m, nil
		}
		m.From = runtime.DescribeDiffs(ds)
		if _, err := s.read(blk, id); err != nil {
			m.Err = err
			return m, nil
		}
		m.Migrated = true
		if dryRun {
			return m, nil
		}
		if err := s.convert(blk, ds); err != nil {
			// Nothing of it is kept: the transaction rolls back.
			return m, err
		}
		return m, nil
	}
	run := func(tx *bbolt.Tx) error {
		if err := s.c.fenced(ctx, tx, op, nil); err != nil {
			return err
		}
		var err error
		res, last, more, err = readBlocks(s.c, tx.Bucket([]byte(s.c.Name)), op, from, n, migrate)
		return err
	}
	var err error
	if dryRun {
		if err = ctx.Err(); err == nil {
			err = view(ctx, s.c.DB, run)
		}
	} else {
		err = update(ctx, s.c.DB, run)
	}
	if err != nil {
		return nil, nil, false, s.c.fail(op, nil, err)
	}
	if len(res) == 0 {
		return nil, nil, false, nil
	}
	return res, s.d.Keys.Bytes(last), more, nil
}
