package index

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/noamgen/noamgen/runtime"
)

// Batch writes (runtime.BatchStore) through the protocol: CommitMany runs
// one attempt of many writes of distinct blocks phase by phase, each
// phase for all items together, so that a batch costs a number of
// commands bounded by the phases and the lookups, not by the items:
//
//  1. the items of every item's new values, per lookup (unique lookups
//     first), in one Batcher.ClaimItems each; an item whose claim finds an
//     item stored goes through the single protocol's claim of a unique
//     value: an item of the same block (written before) is made this
//     write's on condition that it is as read, so that an undo puts it
//     back; a stale claim is taken over; a taken value is ErrDuplicate;
//  2. the block writes, in one call of the store's BlockWrites (one
//     command where the store has one); the items whose outcome is
//     unknown are read back in one ReadBlocks, as Commit reads one back;
//  3. the items of the values the written blocks no longer hold, per
//     lookup in one Batcher.DeleteEach.
//
// Every item keeps the invariants of Commit (I1-I4): its entries are
// added before its block write and removed after it; an item that fails
// (a taken unique value, a refused or unmatched block write, a command
// error) undoes its own entries as Commit does, and only its own, and
// writes nothing; the others go on. Two items of one batch that touch
// the same unique value (one claims what another holds or claims) or the
// same block do not go in one pass: the later one waits for a later pass,
// so that the outcome is that of the single writes in slice order.

// Batcher may be implemented by Primitives that can send many index item
// writes in one command (a MongoDB bulkWrite, a Redis pipeline). Without
// it the engine sends the batch phases as single PutItem and DeleteItems
// calls, with the same outcome.
type Batcher interface {
	// ClaimItems writes the items its of lookup l (distinct keys, within
	// Engine.Batch) each on condition Absent, independently of each other
	// (one refused write does not stop the others). ok[i] reports whether
	// its[i] was written; errs[i] is its error (nil when it was written or
	// its condition failed); a failure of the whole command is every
	// item's error. It must work for non-unique lookups too.
	ClaimItems(ctx context.Context, l int, its []Item) (ok []bool, errs []error)
	// DeleteEach deletes the items of lookup l with keys[i] (distinct,
	// within Engine.Batch) that satisfy conds[i] (Marked or Held), those
	// that do not are left alone. An error says the command failed: some
	// may be deleted.
	DeleteEach(ctx context.Context, l int, keys [][]byte, conds []Cond) error
}

// Write is one item of CommitMany: the arguments of Commit for one block.
type Write struct {
	ID            any    // names the block in errors
	Block         []byte // encoded block key
	Inc           int64  // incarnation
	Before, After Keys   // index keys before and after the write
	Seq           int64  // write sequence
	Insert        bool   // the write creates the block
}

// BlockWrites sends the block commands of the items idx of a batch
// (positions in CommitMany's writes), item idx[j] with stamp sts[j], in as
// few commands as the store allows. For each it returns what Commit's
// write returns: ok[j] whether its condition held, errs[j] its error
// (Primitives.Ambiguous: its outcome is unknown and it is read back; a
// *runtime.Error: a definite refusal, returned as it is).
type BlockWrites func(ctx context.Context, idx []int, sts []Stamp) (ok []bool, errs []error)

// CommitMany runs one attempt of each of ws (distinct blocks) as Commit
// runs one write, phase by phase for all of them. done[i] and errs[i] are
// Commit's results for ws[i]: done false with a nil error means its block
// write's condition failed (nothing of it is left).
func (e *Engine[T]) CommitMany(ctx context.Context, op string, ws []Write, write BlockWrites) (done []bool, errs []error) {
	done, errs = make([]bool, len(ws)), make([]error, len(ws))
	n := len(e.Lookups)
	for i := range ws {
		ws[i].Before, ws[i].After = fill(ws[i].Before, n), fill(ws[i].After, n)
	}
	pending := make([]int, len(ws))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		pass, later := e.pass(ws, pending)
		e.commitPass(ctx, op, ws, pass, write, done, errs)
		pending = later
	}
	return done, errs
}

// RunMany runs writes of the blocks blocks (ids name them in errors) as
// Run runs each, in passes: read reads the items idx (the blocks of one
// pass, distinct) and says for each what to write, as Run's read does (its
// Write is not used: write sends the block commands of a pass, of what
// read returned last for each item); a definite error of read stops that
// item. An item whose block write's condition failed is read and written
// again in a later pass, up to Attempts times, before any later item
// that touches the same block or unique value. It returns each item's
// error.
func (e *Engine[T]) RunMany(ctx context.Context, op string, ids []any, blocks [][]byte, read func(ctx context.Context, idx []int) ([]Attempt, []error), write BlockWrites) []error {
	n := len(blocks)
	errs := make([]error, n)
	done := make([]bool, n)
	ws := make([]Write, n)
	last := make([]*Attempt, n)
	tries := make([]int, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		seen := map[string]bool{}
		var now, next []int
		for _, i := range pending {
			if seen[string(blocks[i])] {
				next = append(next, i)
				continue
			}
			seen[string(blocks[i])] = true
			now = append(now, i)
		}
		as, rerrs := read(ctx, now)
		prev := make(map[int]*Attempt, len(now))
		var run []int
		for j, i := range now {
			a := as[j]
			if errs[i] = rerrs[j]; errs[i] != nil {
				continue
			}
			if last[i] != nil && a.Found && last[i].Found && a.Stamp == last[i].Stamp || tries[i] == runtime.MaxAttempts {
				errs[i] = e.Contended(op, ids[i])
				continue
			}
			prev[i], last[i] = last[i], &a
			tries[i]++
			inc := a.Stamp.Inc
			if !a.Found {
				inc = NewInc()
			}
			ws[i] = Write{ID: ids[i], Block: blocks[i], Inc: inc, Before: fill(a.Before, len(e.Lookups)), After: fill(a.After, len(e.Lookups)), Seq: NextSeq(a.Stamp.Seq), Insert: !a.Found}
			run = append(run, i)
		}
		pass, later := e.pass(ws, run)
		e.commitPass(ctx, op, ws, pass, write, done, errs)
		for _, i := range later {
			tries[i], last[i] = tries[i]-1, prev[i] // it waited: no attempt
		}
		next = append(next, later...)
		for _, i := range pass {
			if !done[i] && errs[i] == nil {
				next = append(next, i) // changed meanwhile: read it again
			}
		}
		slices.Sort(next)
		pending = next
	}
	return errs
}

// pass splits the items idx into those that go in one pass (in slice
// order, no two of one block or touching one unique value) and the rest.
func (e *Engine[T]) pass(ws []Write, idx []int) (pass, later []int) {
	blocks := map[string]bool{}
	taken := make([]map[string]bool, len(e.Lookups))
	for i := range taken {
		taken[i] = map[string]bool{}
	}
	for _, i := range idx {
		w := ws[i]
		clash := blocks[string(w.Block)]
		for l, lk := range e.Lookups {
			if !lk.Unique {
				continue
			}
			for _, k := range w.After[l] {
				clash = clash || taken[l][string(k)]
			}
			for _, k := range w.Before[l] {
				clash = clash || taken[l][string(k)]
			}
		}
		// A later item that clashes with this one waits too, whether
		// this one goes now or not: the writes keep their order.
		blocks[string(w.Block)] = true
		for l, lk := range e.Lookups {
			if lk.Unique {
				for _, k := range w.After[l] {
					taken[l][string(k)] = true
				}
				for _, k := range w.Before[l] {
					taken[l][string(k)] = true
				}
			}
		}
		if clash {
			later = append(later, i)
		} else {
			pass = append(pass, i)
		}
	}
	return pass, later
}

// commitPass runs the items idx of ws (one pass) through the three
// phases, setting their done and errs.
func (e *Engine[T]) commitPass(ctx context.Context, op string, ws []Write, idx []int, write BlockWrites, done []bool, errs []error) {
	began := e.now()
	as := make(map[int]*attempt, len(idx))
	for _, i := range idx {
		as[i] = &attempt{w: NewInc(), created: make([][][]byte, len(e.Lookups)), touched: make([][]Item, len(e.Lookups))}
	}
	live := idx
	// drop undoes the attempts of the items that failed and takes them out
	// of live.
	drop := func() {
		kept := live[:0:0]
		for _, i := range live {
			if errs[i] != nil {
				e.undo(ctx, ws[i].Block, as[i])
				continue
			}
			kept = append(kept, i)
		}
		live = kept
	}

	// 1. The new items, unique lookups first.
	for _, unique := range []bool{true, false} {
		for l, lk := range e.Lookups {
			if lk.Unique != unique || len(live) == 0 {
				continue
			}
			var its []Item
			var who []int
			for _, i := range live {
				w := ws[i]
				for _, k := range Minus(w.After[l], w.Before[l]) {
					its = append(its, Item{Key: k, Block: w.Block, Inc: w.Inc, Seq: w.Seq, W: as[i].w})
					who = append(who, i)
				}
			}
			ok, cerrs := e.claimItems(ctx, l, its)
			for j, it := range its {
				i := who[j]
				switch {
				case cerrs[j] != nil:
					if e.P.Ambiguous(cerrs[j]) {
						as[i].created[l] = append(as[i].created[l], it.Key) // undone if written
					}
					if errs[i] == nil {
						errs[i] = runtime.Fail(op, e.Agg, ws[i].ID, nil, cerrs[j])
					}
				case ok[j]:
					as[i].created[l] = append(as[i].created[l], it.Key)
				case errs[i] == nil:
					// An item is stored at the key: the single add
					// settles it (a value of this block written before,
					// a stale claim to take over, a taken value).
					errs[i] = e.claim(ctx, op, ws[i].ID, as[i], l, ws[i].Block, ws[i].Inc, it.Key, ws[i].Seq, true)
				}
			}
			drop()
		}
	}
	if err := ctx.Err(); err != nil {
		// The block commands are never sent: nothing is written.
		for _, i := range live {
			errs[i] = runtime.NotSent(op, e.Agg, ws[i].ID, err, e.undo(ctx, ws[i].Block, as[i]))
		}
		return
	}
	if len(live) == 0 {
		return
	}

	// 2. The block writes.
	sts := make([]Stamp, len(live))
	for j, i := range live {
		sts[j] = Stamp{Seq: ws[i].Seq, Inc: ws[i].Inc}
	}
	ok, werrs := write(ctx, live, sts)
	var check []int // positions in live to read back
	for j := range live {
		if werrs[j] != nil && e.P.Ambiguous(werrs[j]) || werrs[j] == nil && !ok[j] && e.CheckUnmatched {
			check = append(check, j)
		}
	}
	applied, rerr := e.appliedMany(ctx, ws, live, sts, check)
	var wrote []int
	for j, i := range live {
		err := werrs[j]
		if err != nil && e.P.Ambiguous(err) {
			if rerr != nil || !applied[j] {
				detail := "(outcome unknown: the write may not have been applied; its lookup entries are kept for reads to verify)"
				if rerr != nil {
					detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v; its lookup entries are kept for reads to verify)", rerr)
				}
				errs[i] = runtime.FailAt(op, e.Agg, ws[i].ID, detail, runtime.ErrUnknownOutcome, err)
				continue
			}
			err = nil // the reply was lost, the write is done
		} else if err == nil && !ok[j] && applied[j] {
			ok[j] = true
		}
		if err == nil && (ok[j] || applied[j]) {
			wrote = append(wrote, i)
			continue
		}
		e.undo(ctx, ws[i].Block, as[i])
		var re *runtime.Error
		switch {
		case errors.As(err, &re):
			errs[i] = err
		case err != nil:
			errs[i] = runtime.Fail(op, e.Agg, ws[i].ID, nil, err)
		}
	}

	// 3. The old items, on a context that ends runtime.CleanupTimeout
	// after the caller's.
	caller := ctx
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	slow := e.now()-began > e.staleAfter().Nanoseconds()/2
	var gone []int
	for _, i := range wrote {
		w := ws[i]
		if w.Insert && slow {
			if err := e.stillOwned(ctx, op, w.ID, w.Block, Stamp{Seq: w.Seq, Inc: w.Inc}, w.Before, w.After); err != nil {
				errs[i] = err
				continue
			}
		}
		done[i] = true
		gone = append(gone, i)
	}
	left := make(map[int][]error)
	for l := range e.Lookups {
		var keys [][]byte
		var conds []Cond
		var who []int
		for _, i := range gone {
			w := ws[i]
			for _, k := range Minus(w.Before[l], w.After[l]) {
				keys = append(keys, k)
				conds = append(conds, Cond{Kind: Held, Block: w.Block, Inc: w.Inc, Before: w.Seq})
				who = append(who, i)
			}
		}
		for j, err := range e.deleteEach(ctx, l, keys, conds) {
			if err != nil {
				left[who[j]] = append(left[who[j]], err)
			}
		}
	}
	for _, i := range gone {
		errs[i] = runtime.LeftToRepair(caller, op, e.Agg, ws[i].ID, left[i]...)
	}
}

// appliedMany reads back the blocks of the items live[j] for j in check
// (on a context that ends runtime.CleanupTimeout after ctx) and reports,
// per position in live, whether the block carries stamp sts[j].
func (e *Engine[T]) appliedMany(ctx context.Context, ws []Write, live []int, sts []Stamp, check []int) ([]bool, error) {
	applied := make([]bool, len(live))
	err := e.readBack(ctx, check, func(j int) []byte { return ws[live[j]].Block }, func(j int, b Block[T]) {
		applied[j] = b.Stamp == sts[j]
	})
	return applied, err
}

// readBack reads the blocks key(j) for j in check, in batches, on a
// context that ends runtime.CleanupTimeout after ctx, and calls found(j,
// b) for each block read.
func (e *Engine[T]) readBack(ctx context.Context, check []int, key func(j int) []byte, found func(j int, b Block[T])) error {
	if len(check) == 0 {
		return nil
	}
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	keys := make([][]byte, len(check))
	at := make(map[string]int, len(check))
	for n, j := range check {
		keys[n] = key(j)
		at[string(keys[n])] = j
	}
	for _, run := range batches(keys, e.Batch) {
		bs, err := e.P.ReadBlocks(ctx, run)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if j, ok := at[string(b.Key)]; ok {
				found(j, b)
			}
		}
	}
	return nil
}

// spans splits keys into runs within lim: the [from, to) of each.
func spans(keys [][]byte, lim Limits) [][2]int {
	var out [][2]int
	from := 0
	for _, run := range batches(keys, lim) {
		out = append(out, [2]int{from, from + len(run)})
		from += len(run)
	}
	return out
}

// claimItems writes its (lookup l) each on condition Absent: through the
// Batcher in runs within Batch, else one PutItem each.
func (e *Engine[T]) claimItems(ctx context.Context, l int, its []Item) ([]bool, []error) {
	ok, errs := make([]bool, len(its)), make([]error, len(its))
	if len(its) == 0 {
		return ok, errs
	}
	b, batched := e.P.(Batcher)
	if !batched {
		for j, it := range its {
			ok[j], _, errs[j] = e.P.PutItem(ctx, l, it, Cond{Kind: Absent})
		}
		return ok, errs
	}
	keys := make([][]byte, len(its))
	for j, it := range its {
		keys[j] = it.Key
	}
	for _, s := range spans(keys, e.Batch) {
		if err := ctx.Err(); err != nil {
			for j := s[0]; j < s[1]; j++ {
				errs[j] = err
			}
			continue
		}
		o, es := b.ClaimItems(ctx, l, its[s[0]:s[1]])
		copy(ok[s[0]:], o)
		copy(errs[s[0]:], es)
	}
	return ok, errs
}

// deleteEach deletes the items of lookup l with keys[j] on condition
// conds[j] (best effort): through the Batcher in runs within Batch, else
// one DeleteItems each. It returns each key's error (nil: deleted, or
// left alone by its condition).
func (e *Engine[T]) deleteEach(ctx context.Context, l int, keys [][]byte, conds []Cond) []error {
	errs := make([]error, len(keys))
	b, batched := e.P.(Batcher)
	if !batched {
		for j, k := range keys {
			_, errs[j] = e.P.DeleteItems(ctx, l, [][]byte{k}, conds[j])
		}
		return errs
	}
	for _, s := range spans(keys, e.Batch) {
		if err := b.DeleteEach(ctx, l, keys[s[0]:s[1]], conds[s[0]:s[1]]); err != nil {
			for j := s[0]; j < s[1]; j++ {
				errs[j] = err
			}
		}
	}
	return errs
}

// Deletion is one item of DeletedMany: the arguments of Deleted.
type Deletion struct {
	ID    any
	Block []byte
	Inc   int64
	Keys  Keys
}

// DeletedMany removes the index items of blocks deleted, as Deleted each,
// per lookup in one Batcher.DeleteEach (within Batch). It returns each
// item's runtime.LeftToRepair error.
func (e *Engine[T]) DeletedMany(ctx context.Context, op string, ds []Deletion) []error {
	cctx, cancel := runtime.Detach(ctx)
	defer cancel()
	left := make([][]error, len(ds))
	for l := range e.Lookups {
		var keys [][]byte
		var conds []Cond
		var who []int
		for i, d := range ds {
			if l >= len(d.Keys) {
				continue
			}
			for _, k := range d.Keys[l] {
				keys = append(keys, k)
				conds = append(conds, Cond{Kind: Held, Block: d.Block, Inc: d.Inc})
				who = append(who, i)
			}
		}
		for j, err := range e.deleteEach(cctx, l, keys, conds) {
			if err != nil {
				left[who[j]] = append(left[who[j]], err)
			}
		}
	}
	errs := make([]error, len(ds))
	for i, d := range ds {
		errs[i] = runtime.LeftToRepair(ctx, op, e.Agg, d.ID, left[i]...)
	}
	return errs
}
