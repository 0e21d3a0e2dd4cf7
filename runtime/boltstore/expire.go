package boltstore

import (
	"context"
	"errors"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// errKept is what delete returns when its condition keeps the block: its
// transaction is rolled back, nothing is written.
var errKept = errors.New("boltstore: the block is kept")

// deleteCond is the condition of a conditional delete: the block, read
// with the entries fields name (and those the lookups read), is kept when
// keep reports true.
type deleteCond[T any] struct {
	fields []string
	keep   func(*T) bool
}

// DeleteExpired removes block id and its index entries, in the one
// transaction of Delete, if its expires entry is set and not after now:
// bbolt has no native expiry, so this (through the repository's writes
// and Sweep) is how expired blocks leave the file.
func (s *Store[T, K]) DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	if s.d.Expires == nil {
		return false, nil
	}
	err := s.delete(ctx, "DeleteExpired", id, &deleteCond[T]{
		fields: []string{s.d.Expires.Key},
		keep:   func(t *T) bool { return !s.d.Expired(t, now) },
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errKept), errors.Is(err, runtime.ErrNotFound):
		return false, nil
	}
	return false, err
}

// expired reports whether block blk, read in the transaction of a read,
// has expired by the store's clock: ReadElems of it fails like a read of
// a missing block.
func (s *Store[T, K]) expired(blk *block) (bool, error) {
	if s.d.Expires == nil {
		return false, nil
	}
	t, err := s.readIndexed(blk, s.d.Expires.Key)
	if err != nil {
		return false, err
	}
	return s.d.Expired(t, s.now()), nil
}
