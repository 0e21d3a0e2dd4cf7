package boltstore

import (
	"context"
	"errors"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// Batch writes (runtime.BatchStore): the whole batch is one write
// transaction, whose items are the single calls' writes (create, put,
// remove) in slice order. An item that fails writes nothing of its own:
// everything that can refuse it (the block's state, its version, its
// unique values, the strings and sizes of its index entries) is checked
// before its first write, and an item that fails after writing anyway
// (an entry too large, a counter raised before the failure) makes the
// transaction roll back and run again without it, so that the others
// commit.

var _ runtime.BatchStore[struct{}, string] = (*Store[struct{}, string])(nil)

// errRedo rolls a batch's transaction back: an item failed after writing.
var errRedo = errors.New("boltstore: batch item failed after writing")

// CreateMany writes new blocks in one transaction, as Create each.
func (s *Store[T, K]) CreateMany(ctx context.Context, ts []*T) []error {
	return s.writeMany(ctx, "Create", ts, func(blk *block, t *T) error { return s.create(blk, t, s.indexable) },
		func(t *T) { s.d.SetVersion(t, 1) })
}

// PutMany replaces blocks whole in one transaction, as Put each.
func (s *Store[T, K]) PutMany(ctx context.Context, ts []*T) []error {
	want := make(map[*T]int64, len(ts))
	for _, t := range ts {
		want[t] = s.d.VersionOf(t)
	}
	return s.writeMany(ctx, "Put", ts, func(blk *block, t *T) error { return s.put(blk, t, want[t], s.indexable) },
		func(t *T) { s.d.SetVersion(t, want[t]+1) })
}

// DeleteMany removes blocks in one transaction, as Delete each.
func (s *Store[T, K]) DeleteMany(ctx context.Context, ids []K) []error {
	_, errs := s.batch(ctx, "Delete", len(ids), func(i int) K { return ids[i] }, false,
		func(_ int, blk *block) error { return s.remove(blk, nil) })
	return errs
}

// writeMany writes the aggregates ts with write (create or put), allocating
// zero counted ids, and finishes each written one with done.
func (s *Store[T, K]) writeMany(ctx context.Context, op string, ts []*T, write func(*block, *T) error, done func(*T)) []error {
	ids, errs := s.batch(ctx, op, len(ts), func(i int) K { return *s.d.ID(ts[i]) }, s.c.Counter != nil,
		func(i int, blk *block) error { return write(blk, ts[i]) })
	for i, t := range ts {
		if errs[i] == nil {
			*s.d.ID(t) = ids[i]
			done(t)
		}
	}
	return errs
}

// indexable checks, before t is written into blk, that every index entry
// it will hold may be written (block.indexable), recording the failure.
func (s *Store[T, K]) indexable(blk *block, t *T) {
	s.checkHolders(blk)
	for _, l := range s.lookups {
		for _, k := range l.Keys(t) {
			if blk.indexable(l.Name, l.Unique, k); blk.err != nil {
				return
			}
		}
	}
}

// batch runs write on the block of each of n items (block key id(i),
// allocated first when alloc) in one write transaction, in item order. It
// returns the block keys written and one error per item. An item whose
// write fails before changing anything is left out; one that fails after
// (or after its counter moved) rolls the transaction back, which runs
// again without it. A failure of the transaction (the context ends, the
// commit fails) is every written item's error: nothing was committed.
func (s *Store[T, K]) batch(ctx context.Context, op string, n int, id func(int) K, alloc bool, write func(int, *block) error) ([]K, []error) {
	ids, errs := make([]K, n), make([]error, n)
	for i := range n {
		ids[i] = id(i)
		errs[i] = tooLarge(op, s.c.Aggregate, ids[i], func() string { return "block key" }, BlockPrefix(s.c.Keys.Bytes(ids[i])), nil)
	}
	for {
		var keys, bytes, deletes int64
		err := update(ctx, s.c.DB, func(tx *bbolt.Tx) error {
			keys, bytes, deletes = 0, 0, 0
			b, err := tx.CreateBucketIfNotExists([]byte(s.c.Name))
			if err != nil {
				return err
			}
			for i := range n {
				if errs[i] != nil {
					continue
				}
				key, moved := id(i), false
				if alloc {
					var before int64
					if before, err = s.c.counted(tx, key); err == nil {
						key, err = s.c.allocate(tx, b, op, key)
					}
					if err != nil {
						errs[i] = s.c.fail(op, key, err)
						continue // allocate writes the counter last
					}
					after, _ := s.c.counted(tx, key)
					moved = after != before
				}
				blk := s.c.block(tx, b, op, key)
				if err := write(i, blk); err != nil {
					errs[i] = s.c.fail(op, key, err)
					if blk.Changed() || moved {
						return errRedo
					}
					continue
				}
				ids[i] = key
				keys, bytes, deletes = keys+blk.keys, bytes+blk.bytes, deletes+blk.deletes
			}
			return nil
		})
		if errors.Is(err, errRedo) {
			continue
		}
		if err != nil {
			for i := range n {
				if errs[i] == nil {
					errs[i] = s.c.fail(op, ids[i], err)
				}
			}
			return ids, errs
		}
		written.keys.Add(keys)
		written.bytes.Add(bytes)
		written.deletes.Add(deletes)
		return ids, errs
	}
}

// counted returns the counter of id's scope (0 when none was written).
func (c collection[K]) counted(tx *bbolt.Tx, id K) (int64, error) {
	scope, _ := c.Counter.Split(id)
	return readCounter(tx.Bucket([]byte(CountersBucket)), c.counterKey(scope))
}
