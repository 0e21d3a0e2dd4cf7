package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// Counts (runtime.CountStore). A block's index entries are written in the
// transaction that writes the block, so a lookup's bucket holds exactly
// the entries a listing returns (one per value of a multi-valued lookup):
// CountBy counts the keys of the bucket in the query's range with a
// cursor, and Count the block markers of the collection's bucket, seeking
// past each block's entries; neither reads a block. An aggregate with an
// expires field is counted in the same transaction, each counted block's
// expires entry read (that entry alone, not the block) and the block left
// out when it has expired at the repository's clock (runtime.Desc.Expired,
// the rule the listing applies); a block whose expires entry cannot be
// decoded is counted, as the listing counts an unreadable block.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore in one read transaction.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	var n int64
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		if b == nil {
			return nil // the collection has never been written
		}
		live := s.liveAt(tx, b, op, now)
		var err error
		if l == nil {
			n, err = s.countBlocks(ctx, b, nil, nil, live)
		} else {
			bl := s.boltLookup(l)
			n, err = countRange(ctx, tx.Bucket([]byte(bl.Name)), rng, func(k, v []byte) (bool, error) {
				if live == nil {
					return true, nil
				}
				_, blockKey, err := entry(bl, k, v)
				if err != nil {
					return false, fmt.Errorf("index table %s: entry %x: %w", bl.Name, k, err)
				}
				r := runtime.NewKeyReader(blockKey)
				id, err := s.d.Keys.Read(r)
				if err != nil || !r.Done() {
					return false, fmt.Errorf("index table %s: entry %x holds no %s block key: the index is corrupt", bl.Name, k, s.d.Aggregate)
				}
				return live(id), nil
			})
		}
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

var _ runtime.ScopeCountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// CountScope implements runtime.ScopeCountStore in one read transaction:
// the blocks of a scope are one key range of the collection's bucket, in
// number order, counted as Count counts the bucket's.
func (s *Store[T, K]) CountScope(ctx context.Context, op string, scope K, now time.Time) (int64, bool, error) {
	prefix, _ := s.c.Counter.Split(scope)
	var n int64
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		if b == nil {
			return nil
		}
		in := func(id K) bool {
			sc, num := s.c.Counter.Split(id)
			return num >= 1 && bytes.Equal(sc, prefix)
		}
		var err error
		n, err = s.countBlocks(ctx, b, BlockPrefix(s.d.Keys.Bytes(s.c.Counter.With(scope, 1))), in, s.liveAt(tx, b, op, now))
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// liveAt returns what tells whether block id of bucket b is counted at
// now: whether its expires entry, read alone in transaction tx, has not
// expired (runtime.Desc.Expired). A block that does not exist (an index
// entry written behind the repository's back), or whose expires entry
// cannot be decoded, is counted, as without an expires field. It returns
// nil for an aggregate without an expires field: every block is counted.
func (s *Store[T, K]) liveAt(tx *bbolt.Tx, b *bbolt.Bucket, op string, now time.Time) func(id K) bool {
	if s.d.Expires == nil {
		return nil
	}
	return func(id K) bool {
		t, err := s.readIndexed(s.c.block(tx, b, op, id), s.d.Expires.Key)
		return err != nil || !s.d.Expired(t, now)
	}
}

// countBlocks counts the block markers of bucket b from key first on
// (nil: the first of the bucket) while in reports true (nil: to the
// last): the first key of each block is its marker (the block key and
// the separator), and the next block starts past every key the marker
// prefixes. live, when set, says which blocks are counted.
func (s *Store[T, K]) countBlocks(ctx context.Context, b *bbolt.Bucket, first []byte, in, live func(K) bool) (int64, error) {
	var n, seen int64
	cur := b.Cursor()
	k, _ := cur.First()
	if first != nil {
		k, _ = cur.Seek(first)
	}
	for ; k != nil; k, _ = cur.Seek(runtime.PrefixEnd(k)) {
		if seen%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		seen++
		r := runtime.NewKeyReader(k)
		id, err := s.d.Keys.Read(r)
		if err != nil || !bytes.Equal(r.Rest(), []byte{Separator}) {
			return 0, fmt.Errorf("key %x of bucket %s is no block marker: the collection is corrupt", k, s.c.Name)
		}
		if in != nil && !in(id) {
			break
		}
		if live == nil || live(id) {
			n++
		}
	}
	return n, nil
}

// countRange counts the keys of index bucket ib (nil: none yet) in
// [rng.From, rng.To) that counted reports true for: one entry per value
// and block.
func countRange(ctx context.Context, ib *bbolt.Bucket, rng *runtime.KeyRange, counted func(k, v []byte) (bool, error)) (int64, error) {
	if ib == nil {
		return 0, nil
	}
	var n, seen int64
	cur := ib.Cursor()
	for k, v := cur.Seek(rng.From); k != nil && bytes.Compare(k, rng.To) < 0; k, v = cur.Next() {
		if seen%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		seen++
		ok, err := counted(k, v)
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}
