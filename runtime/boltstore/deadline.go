package boltstore

import (
	"context"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// view runs fn in one read transaction of db, as db.View does, counting
// the transaction as a round trip of the operation running in ctx
// (runtime.RoundTrip).
func view(ctx context.Context, db *bbolt.DB, fn func(*bbolt.Tx) error) error {
	runtime.RoundTrip(ctx)
	return db.View(fn)
}

// update runs fn in one write transaction of db, as db.Update does, but
// bounded by ctx, which bbolt does not take: it waits for the database's
// write lock (held by another write transaction of this process) only
// until ctx ends, and once fn has run it commits only if ctx has not
// ended, rolling back otherwise, so that a write whose context is done
// writes nothing. The commit itself (writing and syncing the pages) is not
// cancellable: a write that began committing before its deadline finishes.
// The transaction counts as a round trip of the operation running in ctx
// (runtime.RoundTrip).
func update(ctx context.Context, db *bbolt.DB, fn func(*bbolt.Tx) error) error {
	runtime.RoundTrip(ctx)
	tx, err := begin(ctx, db)
	if err != nil {
		return err
	}
	defer func() {
		if tx.DB() != nil {
			_ = tx.Rollback() // fn panicked or failed
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return tx.Commit()
}

// begin starts a write transaction, giving up when ctx ends first.
func begin(ctx context.Context, db *bbolt.DB) (*bbolt.Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return db.Begin(true)
	}
	type began struct {
		tx  *bbolt.Tx
		err error
	}
	ch := make(chan began, 1)
	go func() {
		tx, err := db.Begin(true)
		ch <- began{tx, err}
	}()
	select {
	case b := <-ch:
		return b.tx, b.err
	case <-ctx.Done():
		// The transaction, when it comes, is rolled back unused.
		go func() {
			if b := <-ch; b.tx != nil {
				_ = b.tx.Rollback()
			}
		}()
		return nil, ctx.Err()
	}
}
