package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
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

// MigrateBlocks is runtime.MigrateBlocks over the blocks of one write
// transaction (a read transaction in a dry run), read in block-key order:
// the transaction is the condition, no write comes between the read of a
// block and its rewrite, and the batch is one atomic write. A rewrite
// that fails rolls the whole batch back.
func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	const op = "Migrate"
	var res []runtime.BlockMigration
	var last []byte
	var more bool
	run := func(tx *bbolt.Tx) error {
		if err := s.c.fenced(ctx, tx, op, nil); err != nil {
			return err
		}
		var err error
		res, last, more, err = runtime.MigrateBlocks(ctx, s.d.Aggregate, s.d.Keys, migrator[T, K]{s, tx}, after, n, dryRun)
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
		var rb rolledBack
		if errors.As(err, &rb) {
			err = rb.err
		}
		return nil, nil, false, s.c.fail(op, nil, err)
	}
	if len(res) == 0 {
		return nil, nil, false, nil
	}
	return res, last, more, nil
}

// migrator is runtime.BlockMigrator in transaction tx: a block is a
// handle that reads and writes its entries in tx.
type migrator[T any, K comparable] struct {
	s  *Store[T, K]
	tx *bbolt.Tx
}

func (m migrator[T, K]) ScanBlocks(_ context.Context, after *K, n int) ([]runtime.ScannedBlock[K, *block], bool, error) {
	var from []byte
	if after != nil {
		from = runtime.PrefixEnd(BlockPrefix(m.s.d.Keys.Bytes(*after)))
	}
	blocks, _, more, err := readBlocks(m.s.c, m.tx.Bucket([]byte(m.s.c.Name)), "Migrate", from, n, false, func(blk *block, id K) (runtime.ScannedBlock[K, *block], error) {
		return runtime.ScannedBlock[K, *block]{ID: id, Raw: blk, Read: true}, nil
	})
	return blocks, more, err
}

// ReadBlock is never called: the transaction keeps each block as read.
func (m migrator[T, K]) ReadBlock(context.Context, K, int) (*block, bool, error) {
	return nil, false, errors.New("boltstore: a block read again within the migration's transaction")
}

func (m migrator[T, K]) diffs(blk *block) []runtime.LayoutDiff {
	marker, _ := blk.marker()
	return m.s.d.LayoutDiffs(m.s.shape(blk, marker, nil))
}

func (m migrator[T, K]) StoredLayout(id K, blk *block) (string, error) {
	ds := m.diffs(blk)
	if len(ds) == 0 {
		return "", nil
	}
	_, err := m.s.read(blk, id)
	return runtime.DescribeDiffs(ds), err
}

// RewriteBlock converts blk in the transaction; its failure rolls the
// batch back (rolledBack: nothing of the block's partial rewrite is kept).
func (m migrator[T, K]) RewriteBlock(_ context.Context, _ K, blk *block) error {
	if err := m.s.convert(blk, m.diffs(blk)); err != nil {
		return rolledBack{err}
	}
	return nil
}

// rolledBack carries a failed rewrite out of runtime.MigrateBlocks as a
// failure of the batch (not of the block alone, which would let the
// transaction commit a block rewritten in part).
type rolledBack struct{ err error }

func (e rolledBack) Error() string { return e.err.Error() }
