package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Batch writes (CreateMany, PutMany, DeleteMany), written once for every
// store: each item is written as its single call would write it (checks,
// timestamps, versions, counters, lookups and unique values, expiry), and
// the batch reports which items failed and why in one *BatchError; the
// others are written. A store writes the batch in few round trips where
// it can (BatchStore); otherwise the repository makes the single calls.

// BatchStore is what a store adapter implements to write many blocks in
// fewer round trips than one per block. Each method returns one error per
// item, nil for an item written, with the meaning of the single call's
// (Create, Put, Delete): items are applied as the single calls in slice
// order would be (a key twice in one CreateMany: the second fails with
// ErrDuplicate), and a failed item writes nothing of its own. When the
// batch fails as a whole (the context ends, the connection is lost) the
// items it could not settle get that error, ErrUnknownOutcome where they
// may have been applied. The items are checked already (no nil, keys
// within the store's limits), timestamps set.
type BatchStore[T any, K comparable] interface {
	CreateMany(ctx context.Context, ts []*T) []error
	PutMany(ctx context.Context, ts []*T) []error
	DeleteMany(ctx context.Context, ids []K) []error
}

// BatchError is the error of a batch write some of whose items failed:
// the others were written. errors.Is matches the error of any item (a
// CreateMany with a duplicate is errors.Is(err, ErrDuplicate)).
type BatchError struct {
	// Op is the operation ("CreateMany"), Aggregate the aggregate class.
	Op, Aggregate string
	// Total is the number of items in the batch.
	Total int
	// Items are the failed items, in batch order.
	Items []BatchItemError
}

// BatchItemError is one failed item of a batch write.
type BatchItemError struct {
	// Index is the item's position in the batch, Key its block key (nil
	// for a nil aggregate).
	Index int
	Key   any
	// Err is what the single call would have returned (an *Error).
	Err error
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "noam: %s %s: %d of %d items failed", e.Op, e.Aggregate, len(e.Items), e.Total)
	for i, it := range e.Items {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Items)-i)
			break
		}
		fmt.Fprintf(&b, "; item %d: %v", it.Index, it.Err)
	}
	return b.String()
}

// Unwrap returns the items' errors, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Items))
	for i, it := range e.Items {
		out[i] = it.Err
	}
	return out
}

// Failed returns the error of item i, nil when it was written.
func (e *BatchError) Failed(i int) error {
	for _, it := range e.Items {
		if it.Index == i {
			return it.Err
		}
	}
	return nil
}

// batch is the outcome of a batch write, item by item.
type batch[K comparable] struct {
	op   string
	keys []any
	errs []error
}

func newBatch[K comparable](op string, n int) *batch[K] {
	return &batch[K]{op: op, keys: make([]any, n), errs: make([]error, n)}
}

// result is nil when every item was written, the *BatchError otherwise.
func (b *batch[K]) result(agg string) error {
	be := &BatchError{Op: b.op, Aggregate: agg, Total: len(b.errs)}
	for i, err := range b.errs {
		if err != nil {
			be.Items = append(be.Items, BatchItemError{Index: i, Key: b.keys[i], Err: err})
		}
	}
	if len(be.Items) == 0 {
		return nil
	}
	return be
}

// writeMany writes the aggregates ts (Create or Put, by op) that pass the
// single call's checks: natively with many, one by one with one without a
// BatchStore, then once more each those an expired block was in the way of.
func (r Repo[T, K]) writeMany(ctx context.Context, op string, ts []*T, many func(context.Context, BatchStore[T, K], []*T) []error, one func(context.Context, *T) error) error {
	single := map[string]string{"CreateMany": "Create", "PutMany": "Put"}[op]
	b := newBatch[K](op, len(ts))
	var idx []int
	var send []*T
	for i, t := range ts {
		if err := r.checkAgg(single, t); err != nil {
			b.errs[i] = err
			continue
		}
		b.keys[i] = *r.D.ID(t)
		if err := r.keyTooLarge(single, *r.D.ID(t)); err != nil {
			b.errs[i] = err
			continue
		}
		idx, send = append(idx, i), append(send, t)
	}
	if len(send) > 0 {
		if err := r.gate(ctx, op, nil); err != nil {
			return err
		}
	}
	ctx, err := r.fence(ctx, op, false)
	if err != nil {
		return err
	}
	now := r.Now()
	if op == "PutMany" {
		// An expired block is absent to PutMany too (Put's clearExpired).
		ids := make([]K, len(send))
		for j, t := range send {
			ids[j] = *r.D.ID(t)
		}
		if _, err := r.clearExpiredMany(ctx, ids, now); err != nil {
			for _, i := range idx {
				b.errs[i] = r.ctxErr(ctx, single, err)
			}
			return b.result(r.D.Aggregate)
		}
	}
	undos := make([]func(), len(send))
	for j, t := range send {
		undos[j] = r.D.Stamp(t, now, true)
	}
	var errs []error
	if bs, ok := r.S.(BatchStore[T, K]); ok && len(send) > 0 {
		errs = many(ctx, bs, send)
	} else {
		errs = make([]error, len(send))
		for j, t := range send {
			errs[j] = one(ctx, t)
		}
	}
	for j, t := range send {
		err := errs[j]
		if errors.Is(err, errFenceMoved) {
			// Nothing written: once more under the record as it is.
			err = r.fenced(ctx, single, r.knownID(t), func(ctx context.Context) error { return one(ctx, t) })
		}
		if err != nil && r.purgeable(err) {
			if removed, perr := r.purge(ctx, t); perr == nil && removed {
				err = one(ctx, t)
			}
		}
		if err != nil {
			undos[j]()
			b.errs[idx[j]] = r.ctxErr(ctx, single, err)
		}
		if counted := *r.D.ID(t); err == nil {
			b.keys[idx[j]] = counted // the allocated id of a counted key
		}
	}
	return b.result(r.D.Aggregate)
}

// createMany stores new blocks, as Create each.
func (r Repo[T, K]) createMany(ctx context.Context, ts []*T) error {
	return r.writeMany(ctx, "CreateMany", ts,
		func(ctx context.Context, bs BatchStore[T, K], ts []*T) []error { return bs.CreateMany(ctx, ts) },
		func(ctx context.Context, t *T) error { return r.S.Create(ctx, t) })
}

// putMany creates or replaces blocks whole, as Put each.
func (r Repo[T, K]) putMany(ctx context.Context, ts []*T) error {
	return r.writeMany(ctx, "PutMany", ts,
		func(ctx context.Context, bs BatchStore[T, K], ts []*T) []error { return bs.PutMany(ctx, ts) },
		func(ctx context.Context, t *T) error { return r.S.Put(ctx, t) })
}

// deleteMany removes blocks, as Delete each.
func (r Repo[T, K]) deleteMany(ctx context.Context, ids []K) error {
	b := newBatch[K]("DeleteMany", len(ids))
	var idx []int
	var send []K
	for i, id := range ids {
		b.keys[i] = id
		if err := r.writeKey("Delete", id); err != nil {
			b.errs[i] = err
			continue
		}
		idx, send = append(idx, i), append(send, id)
	}
	ctx, err := r.fence(ctx, "DeleteMany", false)
	if err != nil {
		return err
	}
	// An expired block is absent to DeleteMany too (Delete's liveWrite):
	// removed first, its item fails with ErrNotFound.
	removed, err := r.clearExpiredMany(ctx, send, r.Now())
	if err != nil {
		for _, i := range idx {
			b.errs[i] = r.ctxErr(ctx, "Delete", err)
		}
		return b.result(r.D.Aggregate)
	}
	if slices.Contains(removed, true) {
		live, at := send[:0:0], idx[:0:0]
		for j, id := range send {
			if removed[j] {
				b.errs[idx[j]] = FailAt("Delete", r.D.Aggregate, id, "(expired)", ErrNotFound, nil)
				continue
			}
			live, at = append(live, id), append(at, idx[j])
		}
		send, idx = live, at
	}
	var errs []error
	if bs, ok := r.S.(BatchStore[T, K]); ok && len(send) > 0 {
		errs = bs.DeleteMany(ctx, send)
	} else {
		errs = make([]error, len(send))
		for j, id := range send {
			errs[j] = r.S.Delete(ctx, id)
		}
	}
	for j, err := range errs {
		if errors.Is(err, errFenceMoved) {
			// Nothing written: once more under the record as it is.
			err = r.fenced(ctx, "Delete", send[j], func(ctx context.Context) error { return r.S.Delete(ctx, send[j]) })
		}
		if err != nil {
			b.errs[idx[j]] = r.ctxErr(ctx, "Delete", err)
		}
	}
	return b.result(r.D.Aggregate)
}
