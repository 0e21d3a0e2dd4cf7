package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/noamgen/noamgen/runtime"
)

// DeleteMany is a batch of Deletes (runtime.BatchStore.DeleteMany) through
// the protocol on a store without atomic lookups, written once: the store
// reads the blocks' states in one round trip and sends their conditional
// deletes in another (Deletes); DeleteMany keeps, item by item, the rules
// of the single Delete:
//
//   - a block not found is runtime.ErrNotFound;
//   - a batch whose context ends before its deletes are sent deletes
//     nothing, and says so (runtime.NotSent);
//   - a delete whose outcome is unknown (Primitives.Ambiguous) is read
//     back: a block gone (or of another incarnation) was deleted, one
//     still there is runtime.ErrUnknownOutcome, its entries kept for
//     reads to verify;
//   - the entries of the blocks deleted go after them (DeletedMany), with
//     the store's own cleanup (Deletes.Cleanup);
//   - a block that changed since it was read, and a key given again
//     (runtime.ErrNotFound when the first one removed it), are deleted
//     after the batch by the single Delete.

// Deletes is what DeleteMany asks of a store for a batch of Deletes of
// blocks (DeleteMany's, by position).
type Deletes[V any] interface {
	// ReadStates reads the blocks of the items idx (distinct) in as few
	// round trips as the store allows; a store whose delete checks the
	// block itself may read nothing and report it Found. An error stops
	// its item.
	ReadStates(ctx context.Context, idx []int) ([]BlockState[V], []error)
	// DeleteBlocks deletes the blocks of the items idx, each on condition
	// that it is as ReadStates found it, in as few round trips as the
	// store allows, and reports per item: deleted (ok), condition failed
	// (not ok, no error: changed since it was read), outcome unknown (an
	// error Primitives.Ambiguous reports) or refused (a *runtime.Error,
	// as it is: nothing deleted, or an outcome the store knows it cannot
	// tell).
	DeleteBlocks(ctx context.Context, idx []int) (ok []bool, errs []error)
	// Cleanup runs the store's own steps after the blocks of the items
	// idx were deleted (Redis's listing), best effort, and returns per
	// item what failed (nil: nothing), left to Repair.
	Cleanup(ctx context.Context, idx []int) [][]error
	// Delete is the single Delete of item i.
	Delete(ctx context.Context, i int) error
}

// DeleteMany deletes the blocks blocks (ids name them in errors), as
// Delete each, over the store's deletes, and returns each item's error.
func DeleteMany[V any](ctx context.Context, e *Engine[V], op string, ids []any, blocks [][]byte, p Deletes[V]) []error {
	errs := make([]error, len(blocks))
	seen := make(map[string]bool, len(blocks))
	var first, again []int
	for i, b := range blocks {
		if seen[string(b)] {
			again = append(again, i)
			continue
		}
		seen[string(b)] = true
		first = append(first, i)
	}
	var single []int
	if len(first) > 0 {
		single = e.deleteRead(ctx, op, ids, blocks, first, p, errs)
	}
	for _, i := range append(single, again...) {
		errs[i] = p.Delete(ctx, i)
	}
	return errs
}

// deleteRead deletes the blocks of the items first (distinct) and returns
// those to delete one by one (changed since they were read).
func (e *Engine[V]) deleteRead(ctx context.Context, op string, ids []any, blocks [][]byte, first []int, p Deletes[V], errs []error) (single []int) {
	sts, rerrs := p.ReadStates(ctx, first)
	var send []int
	var read []BlockState[V]
	for j, i := range first {
		switch {
		case rerrs[j] != nil:
			errs[i] = rerrs[j]
		case !sts[j].Found:
			errs[i] = runtime.Fail(op, e.Agg, ids[i], runtime.ErrNotFound, nil)
		default:
			send, read = append(send, i), append(read, sts[j])
		}
	}
	if len(send) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		for _, i := range send {
			errs[i] = runtime.NotSent(op, e.Agg, ids[i], err, nil)
		}
		return nil
	}
	ok, derrs := p.DeleteBlocks(ctx, send)
	var check []int // positions in send to read back
	for j := range send {
		if derrs[j] != nil && e.P.Ambiguous(derrs[j]) {
			check = append(check, j)
		}
	}
	gone, rerr := e.goneMany(ctx, blocks, send, read, check)
	var deleted []int
	for j, i := range send {
		err := derrs[j]
		var re *runtime.Error
		switch {
		case err != nil && e.P.Ambiguous(err):
			if rerr != nil || !gone[j] {
				detail := "(outcome unknown: the block delete may have been applied; its lookup entries are kept for reads to verify)"
				if rerr != nil {
					detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v; its lookup entries are kept for reads to verify)", rerr)
				}
				errs[i] = runtime.FailAt(op, e.Agg, ids[i], detail, runtime.ErrUnknownOutcome, err)
				continue
			}
		case errors.As(err, &re):
			errs[i] = err
			continue
		case err != nil:
			errs[i] = runtime.Fail(op, e.Agg, ids[i], nil, err)
			continue
		case !ok[j]:
			single = append(single, i) // changed since it was read
			continue
		}
		deleted = append(deleted, j)
	}
	if len(deleted) == 0 {
		return single
	}
	idx := make([]int, len(deleted))
	ds := make([]Deletion, len(deleted))
	for n, j := range deleted {
		i := send[j]
		idx[n] = i
		ds[n] = Deletion{ID: ids[i], Block: blocks[i], Inc: read[j].Stamp.Inc}
		if len(e.Lookups) > 0 {
			ds[n].Keys = e.Keys(blocks[i], read[j].Value)
		}
	}
	left := p.Cleanup(ctx, idx)
	for n, err := range e.DeletedMany(ctx, op, ds) {
		if err == nil && left != nil {
			err = runtime.LeftToRepair(ctx, op, e.Agg, ids[idx[n]], left[n]...)
		}
		errs[idx[n]] = err
	}
	return single
}

// goneMany reads back the blocks of the items send[j] for j in check (on a
// context that ends runtime.CleanupTimeout after ctx) and reports, per
// position in send, whether the block read is gone: absent, or of
// another incarnation.
func (e *Engine[V]) goneMany(ctx context.Context, blocks [][]byte, send []int, read []BlockState[V], check []int) ([]bool, error) {
	gone := make([]bool, len(send))
	for _, j := range check {
		gone[j] = true
	}
	err := e.readBack(ctx, check, func(j int) []byte { return blocks[send[j]] }, func(j int, b Block[V]) {
		gone[j] = b.Stamp.Inc != read[j].Stamp.Inc
	})
	return gone, err
}
