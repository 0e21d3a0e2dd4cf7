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
// expires field is counted through the listing (runtime.Repo), which reads
// each block to leave the expired ones out.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore in one read transaction.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if s.d.Expires != nil {
		return 0, false, nil
	}
	var n int64
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		if b == nil {
			return nil // the collection has never been written
		}
		var err error
		if l == nil {
			n, err = s.countBlocks(ctx, b)
		} else {
			n, err = countRange(ctx, tx.Bucket([]byte(s.boltLookup(l).Name)), rng)
		}
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// countBlocks counts the block markers of bucket b: the first key of each
// block is its marker (the block key and the separator), and the next
// block starts past every key the marker prefixes.
func (s *Store[T, K]) countBlocks(ctx context.Context, b *bbolt.Bucket) (int64, error) {
	var n int64
	cur := b.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Seek(runtime.PrefixEnd(k)) {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		r := runtime.NewKeyReader(k)
		if _, err := s.d.Keys.Read(r); err != nil || !bytes.Equal(r.Rest(), []byte{Separator}) {
			return 0, fmt.Errorf("key %x of bucket %s is no block marker: the collection is corrupt", k, s.c.Name)
		}
		n++
	}
	return n, nil
}

// countRange counts the keys of index bucket ib (nil: none yet) in
// [rng.From, rng.To): one entry per value and block.
func countRange(ctx context.Context, ib *bbolt.Bucket, rng *runtime.KeyRange) (int64, error) {
	if ib == nil {
		return 0, nil
	}
	var n int64
	cur := ib.Cursor()
	for k, _ := cur.Seek(rng.From); k != nil && bytes.Compare(k, rng.To) < 0; k, _ = cur.Next() {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		n++
	}
	return n, nil
}
