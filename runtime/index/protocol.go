package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/noamgen/noamgen/runtime"
)

// Contended is the error of a write that lost every attempt in a row.
func (e *Engine[T]) Contended(op string, id any) error {
	return runtime.Contended(op, e.Agg, id, "block")
}

// Run runs a write of block block (id names it in errors) through the
// protocol: read reads the block and says what to write (returning a
// definite error, such as a failed version check, stops the write); the
// attempt is committed, and read again while the block changed meanwhile,
// up to runtime.MaxAttempts times.
func (e *Engine[T]) Run(ctx context.Context, op string, id any, block []byte, read func() (Attempt, error)) error {
	var last *Attempt
	for range runtime.MaxAttempts {
		a, err := read()
		if err != nil {
			return err
		}
		if last != nil && a.Found && last.Found && a.Stamp == last.Stamp {
			return e.Contended(op, id)
		}
		last = &a
		inc := a.Stamp.Inc
		if !a.Found {
			inc = NewInc()
		}
		done, err := e.Commit(ctx, op, id, block, inc, a.Before, a.After, NextSeq(a.Stamp.Seq), !a.Found, a.Write)
		if err != nil || done {
			return err
		}
	}
	return e.Contended(op, id)
}

// attempt records what one attempt of a write did to the index tables, so
// that a failed attempt can undo it.
type attempt struct {
	w       int64      // the attempt's mark on the items it writes
	created [][][]byte // per lookup: keys of the items it created
	touched [][]Item   // per lookup: items it changed, as they were
	// unsure, per lookup: keys of non-unique items whose put lost its
	// reply: it may have replaced an item that was there, unread.
	unsure [][][]byte
}

// Commit runs one attempt of a write of block block (incarnation inc)
// whose index keys go from before to after, with write sequence seq: it
// adds the keys after has and before lacks (claiming unique ones first),
// runs write with the new stamp, then removes the keys before has and
// after lacks. If a claim fails or write definitely did not happen (its
// condition failed, or it returned a definite error), the attempt undoes
// its changes to the index tables (those no later write has touched) and
// nothing else is changed. If write's outcome is unknown (Ambiguous), the
// block is read back: with this attempt's stamp the write is done;
// otherwise the items stay and the error is runtime.ErrUnknownOutcome.
// insert says that write creates the block. It reports whether the write
// is done; false with a nil error means its condition failed.
func (e *Engine[T]) Commit(ctx context.Context, op string, id any, block []byte, inc int64, before, after Keys, seq int64, insert bool, write func(context.Context, Stamp) (bool, error)) (bool, error) {
	began := e.now()
	n := len(e.Lookups)
	before, after = fill(before, n), fill(after, n)
	a := &attempt{w: NewInc(), created: make([][][]byte, n), touched: make([][]Item, n)}
	for _, unique := range []bool{true, false} {
		for i, l := range e.Lookups {
			if l.Unique != unique {
				continue
			}
			for _, k := range Minus(after[i], before[i]) {
				if err := e.add(ctx, op, id, a, i, block, inc, k, seq); err != nil {
					e.undo(ctx, block, a)
					return false, err
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// The block command is never sent (checked here rather than
		// trusted to the client: a retry can return a context error
		// from before its second send after a first send): the write
		// definitely failed, so its items go.
		return false, runtime.NotSent(op, e.Agg, id, err, e.undo(ctx, block, a))
	}
	st := Stamp{Seq: seq, Inc: inc}
	ok, err := write(ctx, st)
	if err == nil && !ok && e.CheckUnmatched {
		if done, rerr := e.applied(ctx, block, st); rerr == nil && done {
			ok = true
		}
	}
	if err != nil && e.P.Ambiguous(err) {
		done, rerr := e.applied(ctx, block, st)
		if rerr != nil || !done {
			detail := "(outcome unknown: the write may not have been applied; its lookup entries are kept for reads to verify)"
			if rerr != nil {
				detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v; its lookup entries are kept for reads to verify)", rerr)
			}
			return false, runtime.FailAt(op, e.Agg, id, detail, runtime.ErrUnknownOutcome, err)
		}
		ok, err = true, nil // the reply was lost, the write is done
	}
	if err != nil || !ok {
		e.undo(ctx, block, a)
		var re *runtime.Error
		if errors.As(err, &re) {
			return false, err
		}
		if err != nil {
			return false, runtime.Fail(op, e.Agg, id, nil, err)
		}
		return false, nil
	}
	// What follows runs on a context that ends runtime.CleanupTimeout
	// after the caller's.
	caller := ctx
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	if insert && e.now()-began > e.staleAfter().Nanoseconds()/2 {
		if err := e.stillOwned(ctx, op, id, block, st, before, after); err != nil {
			return false, err
		}
	}
	// The write is done: removing the old items is best effort (reads
	// skip stale items, Repair removes them). Only items of this
	// incarnation written before seq go: a later write's are kept.
	var errs []error
	for i := range e.Lookups {
		errs = append(errs, e.deleteItems(ctx, i, Minus(before[i], after[i]), Cond{Kind: Held, Block: block, Inc: inc, Before: seq}))
	}
	return true, runtime.LeftToRepair(caller, op, e.Agg, id, errs...)
}

// Deleted removes the index items of block block after the block was
// deleted: those of keys (its keys as deleted) of its incarnation inc. It
// is best effort (reads skip stale items, Repair removes them) and runs on
// a context that ends runtime.CleanupTimeout after ctx; it returns
// runtime.LeftToRepair's error.
func (e *Engine[T]) Deleted(ctx context.Context, op string, id any, block []byte, inc int64, keys Keys) error {
	cctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var errs []error
	for i := range e.Lookups {
		if i < len(keys) {
			errs = append(errs, e.deleteItems(cctx, i, keys[i], Cond{Kind: Held, Block: block, Inc: inc}))
		}
	}
	return runtime.LeftToRepair(ctx, op, e.Agg, id, errs...)
}

// fill makes k one entry per lookup.
func fill(k Keys, n int) Keys {
	if len(k) >= n {
		return k
	}
	return append(k, make(Keys, n-len(k))...)
}

// deleteItems deletes the items of lookup l with keys on condition c, in
// batches; it returns the first error (and goes on with the others).
func (e *Engine[T]) deleteItems(ctx context.Context, l int, keys [][]byte, c Cond) error {
	var first error
	for _, run := range batches(keys, e.Batch) {
		if _, err := e.P.DeleteItems(ctx, l, run, c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// readBlock reads one block (found false if it does not exist).
func (e *Engine[T]) readBlock(ctx context.Context, block []byte) (Block[T], bool, error) {
	bs, err := e.P.ReadBlocks(ctx, [][]byte{block})
	if err != nil || len(bs) == 0 {
		return Block[T]{}, false, err
	}
	return bs[0], true, nil
}

// applied reads block back, on a context that ends runtime.CleanupTimeout
// after ctx, and reports whether it carries stamp st: the stamp of a write
// whose outcome is unknown.
func (e *Engine[T]) applied(ctx context.Context, block []byte, st Stamp) (bool, error) {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	b, found, err := e.readBlock(ctx, block)
	if err != nil || !found {
		return false, err
	}
	return b.Stamp == st, nil
}

// stillOwned checks, after a slow insert of block, that the unique claims
// it took are still its own (a takeover may have happened while it
// stalled past StaleAfter). If one is not, it deletes the block it
// inserted (on condition that it is still the one it wrote, stamp st) and
// fails with runtime.ErrDuplicate. If it cannot tell, or cannot delete
// the block, the write's outcome is unknown (runtime.ErrUnknownOutcome):
// the block is written but may hold a value another block claims.
func (e *Engine[T]) stillOwned(ctx context.Context, op string, id any, block []byte, st Stamp, before, after Keys) error {
	for i, l := range e.Lookups {
		if !l.Unique {
			continue
		}
		for _, k := range Minus(after[i], before[i]) {
			items, err := e.P.GetItems(ctx, i, [][]byte{k})
			if err != nil {
				return runtime.FailAt(op, e.Agg, id, "(outcome unknown: the block is written, but checking the unique claims of a slow write failed: it may have lost one)", runtime.ErrUnknownOutcome, err)
			}
			if len(items) == 1 && string(items[0].Block) == string(block) && items[0].Inc == st.Inc {
				continue
			}
			if _, derr := e.P.DeleteBlock(ctx, block, st); derr != nil {
				return runtime.FailAt(op, e.Agg, id, "(outcome unknown: lost the unique claim "+l.Name+" "+runtime.FormatKey(k)+" while stalled; removing the block failed)", runtime.ErrUnknownOutcome, derr)
			}
			return runtime.FailAt(op, e.Agg, id, "(lost the unique claim "+l.Name+" "+runtime.FormatKey(k)+" while stalled past StaleAfter)", runtime.ErrDuplicate, nil)
		}
	}
	return nil
}

// undo removes the items attempt a created and puts back those it
// changed (undoTouched), unless a later write has touched them since. It
// returns the first command error (what it could not undo stays for
// Repair). It runs on runtime.Detach: not cancelled with the caller, but
// bounded.
func (e *Engine[T]) undo(ctx context.Context, block []byte, a *attempt) error {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i, keys := range a.created {
		keep(e.deleteItems(ctx, i, keys, Cond{Kind: Marked, W: a.w}))
	}
	keep(e.undoUnsure(ctx, block, a))
	keep(e.undoTouched(ctx, block, a))
	return first
}

// touchedItem is an item an attempt changed, as it was, of lookup l.
type touchedItem struct {
	l  int
	it Item
}

// undoTouched puts back the items a changed, each on condition that it
// still bears a's mark. An item of another block (a stale unique claim a
// took over) goes back as it was. An item of block itself belonged to
// another write of the block, landed, failed or in flight: where the
// block, read now, holds the value, the item goes back as the current
// state's (its incarnation and sequence, no attempt's mark, so that no
// undo of another attempt removes it); elsewhere it goes back as it was,
// for its write, which may still land. If that write has already undone
// itself (its undo found a's mark and left the item), the item is left
// stale: reads skip it, drop it once older than StaleAfter, and Repair
// removes it. Fencing the block instead, so as to remove the item, makes
// every write in flight over the block start again: on a contended
// block each failed attempt fenced the others (16 writers of one block
// on a Redis Cluster: 6 s became 227 s).
func (e *Engine[T]) undoTouched(ctx context.Context, block []byte, a *attempt) error {
	mine := Cond{Kind: Marked, W: a.w}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	var own []touchedItem
	for l, items := range a.touched {
		for _, it := range items {
			if string(it.Block) == string(block) {
				own = append(own, touchedItem{l, it})
				continue
			}
			_, _, err := e.P.PutItem(ctx, l, it, mine)
			keep(err)
		}
	}
	if len(own) == 0 {
		return first
	}
	b, found, err := e.readBlock(ctx, block)
	keep(err)
	for _, t := range own {
		it := t.it
		if found && b.Err == nil && Holds(LookupKeys(e.Lookups[t.l].Unique, e.Lookups[t.l].Values(b.Value), block), it.Key) {
			it = Item{Key: it.Key, Block: block, Inc: b.Stamp.Inc, Seq: b.Stamp.Seq}
		}
		_, _, err := e.P.PutItem(ctx, t.l, it, mine)
		keep(err)
	}
	return first
}

// undoUnsure undoes the non-unique puts of a whose replies were lost.
// Such a put may have replaced an item the block's current state holds
// (a Create of a key in use): where the block, read now, holds the value,
// the item is put back as that state's (its incarnation and sequence),
// on condition that it still bears a's mark; elsewhere it is removed on
// that condition, as a created item.
func (e *Engine[T]) undoUnsure(ctx context.Context, block []byte, a *attempt) error {
	if a.unsure == nil {
		return nil
	}
	b, found, err := e.readBlock(ctx, block)
	if err != nil {
		return err
	}
	var first error
	for i, keys := range a.unsure {
		var gone [][]byte
		for _, k := range keys {
			if !found || b.Err != nil || !Holds(LookupKeys(false, e.Lookups[i].Values(b.Value), block), k) {
				gone = append(gone, k)
				continue
			}
			it := Item{Key: k, Block: block, Inc: b.Stamp.Inc, Seq: b.Stamp.Seq}
			if _, _, err := e.P.PutItem(ctx, i, it, Cond{Kind: Marked, W: a.w}); err != nil && first == nil {
				first = err
			}
		}
		if err := e.deleteItems(ctx, i, gone, Cond{Kind: Marked, W: a.w}); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// add writes the index item k of block (incarnation inc) for lookup i,
// recording in a what it did. A unique value another block holds fails
// with runtime.ErrDuplicate, unless that block no longer holds it and the
// item is stale: then the claim is taken over, after fencing the holder's
// write in flight (bumping its stamp).
func (e *Engine[T]) add(ctx context.Context, op string, id any, a *attempt, i int, block []byte, inc int64, k []byte, seq int64) error {
	fail := func(err error) error { return runtime.Fail(op, e.Agg, id, nil, err) }
	mine := Item{Key: k, Block: block, Inc: inc, Seq: seq, W: a.w}
	if !e.Lookups[i].Unique {
		_, prev, err := e.P.PutItem(ctx, i, mine, Cond{Kind: Always})
		if err != nil {
			if e.P.Ambiguous(err) {
				// It may have been written, over an item that was there
				// (its key names this block: an item of the block's
				// current state, when a Create finds the key in use). The
				// undo removes it if it bears this attempt's mark, unless
				// the block holds the value (see undo).
				if a.unsure == nil {
					a.unsure = make([][][]byte, len(e.Lookups))
				}
				a.unsure[i] = append(a.unsure[i], k)
			}
			return fail(err)
		}
		if prev == nil {
			a.created[i] = append(a.created[i], k)
		} else {
			a.touched[i] = append(a.touched[i], *prev)
		}
		return nil
	}
	return e.claim(ctx, op, id, a, i, block, inc, k, seq, false)
}

// claim claims index key k of lookup i for block (incarnation inc), as
// add does for a unique lookup: by creating the item, else by making an
// item of the same block this write's (on condition that it is as read,
// so that an undo can put it back), else by taking over a stale claim.
// tried says that a create was just refused (CommitMany's ClaimItems):
// the first attempt starts by reading the item stored.
func (e *Engine[T]) claim(ctx context.Context, op string, id any, a *attempt, i int, block []byte, inc int64, k []byte, seq int64, tried bool) error {
	fail := func(err error) error { return runtime.Fail(op, e.Agg, id, nil, err) }
	mine := Item{Key: k, Block: block, Inc: inc, Seq: seq, W: a.w}
	for range runtime.MaxAttempts {
		if !tried {
			ok, _, err := e.P.PutItem(ctx, i, mine, Cond{Kind: Absent})
			if err != nil {
				if e.P.Ambiguous(err) {
					// It may have been written: the undo removes it if so
					// (it bears this attempt's mark).
					a.created[i] = append(a.created[i], k)
				}
				return fail(err)
			}
			if ok {
				a.created[i] = append(a.created[i], k)
				return nil
			}
		}
		tried = false
		items, err := e.P.GetItems(ctx, i, [][]byte{k})
		if err != nil {
			return fail(err)
		}
		if len(items) == 0 {
			continue // removed meanwhile: claim again
		}
		held := items[0]
		put := mine
		if string(held.Block) == string(block) {
			// Already this block's (an item of an earlier write or
			// incarnation): make it this write's.
			put.Seq = max(seq, held.Seq)
		} else {
			hb, found, err := e.readBlock(ctx, held.Block)
			if err != nil {
				return fail(err)
			}
			holds := found && hb.Err == nil && Holds(LookupKeys(true, e.Lookups[i].Values(hb.Value), held.Block), k)
			if holds || !e.stale(held.Seq) {
				return runtime.LookupTaken(op, e.Agg, id, e.Lookups[i].Name, k, nil)
			}
			// A stale claim: its block does not hold the value and its
			// write should be long over. Fence that write (it may only
			// be stalled): bump the holder's stamp, so that its block
			// write, conditioned on the stamp it read, can no longer
			// land. Then take the claim over.
			if found {
				fenced, err := e.P.FenceBlock(ctx, held.Block, hb.Stamp, NextSeq(hb.Stamp.Seq))
				if err != nil {
					return fail(err)
				}
				if !fenced {
					continue // the holder changed meanwhile: look again
				}
			}
		}
		ok, _, err := e.P.PutItem(ctx, i, put, Cond{Kind: Same, Item: held})
		if err != nil {
			if e.P.Ambiguous(err) {
				a.touched[i] = append(a.touched[i], held) // put back if it was taken
			}
			return fail(err)
		}
		if ok {
			a.touched[i] = append(a.touched[i], held)
			return nil
		}
		// The item changed since it was read: claim again.
	}
	return e.Contended(op, id)
}
