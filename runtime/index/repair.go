package index

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// Repair rebuilds the index tables from the blocks, a page of
// RepairBatch blocks or items at a time (it never holds more):
//
//  1. it scans the blocks in key order and makes sure every index key a
//     readable block holds has its item, pointing at it with its
//     incarnation (writing the missing ones, correcting the wrong ones);
//  2. it scans each index table and removes the items no block holds
//     (items of unreadable blocks are left alone).
//
// A unique value held by several blocks stays with the first in block-key
// order; the others are reported as conflicts (in any scan order: see
// Primitives.ScanBlocks). Blocks that do not decode
// are reported as unreadable. Run it while nothing else writes the
// collection: an item of a write in flight may be removed.
//
// A lookup build of EnsureIndexes (runtime/evolve.go) passes options in
// ctx (runtime.RepairOptionsOf): the first pass starts from scan
// position o.After (Primitives.ScanBlocks) and calls o.OnPage after each
// page with the position of the next (nil after the last), and with
// o.Lookups set only those lookups get items and the second pass does not
// run, which makes the build safe while the application writes.
func (e *Engine[T]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	var rep runtime.RepairReport
	held := conflicts{}
	err := e.repairBlocks(ctx, &rep, held)
	names := make([]string, len(e.Lookups))
	for l, lk := range e.Lookups {
		names[l] = lk.Name
	}
	held.report(names, &rep)
	if err != nil {
		return rep, runtime.Fail("Repair", e.Agg, nil, nil, err)
	}
	if runtime.RepairOptionsOf(ctx).Lookups != nil {
		return rep, nil // a build: see RepairOptions.Lookups
	}
	for l := range e.Lookups {
		if err := e.repairItems(ctx, l, &rep); err != nil {
			return rep, runtime.Fail("Repair", e.Agg, nil, nil, err)
		}
	}
	return rep, nil
}

func (e *Engine[T]) repairBatch() int {
	if e.RepairBatch <= 0 {
		return 64
	}
	return e.RepairBatch
}

// repairBlocks is Repair's first pass.
func (e *Engine[T]) repairBlocks(ctx context.Context, rep *runtime.RepairReport, held conflicts) error {
	o := runtime.RepairOptionsOf(ctx)
	after := o.After
	for {
		page, next, err := e.P.ScanBlocks(ctx, after, e.repairBatch())
		if err != nil {
			return err
		}
		if len(page) == 0 && next == nil {
			return nil
		}
		after = next
		var readable []Block[T]
		for _, b := range page {
			if b.Err != nil {
				rep.AddUnreadable(e.Agg, e.id(b.Key), b.Err)
				continue
			}
			rep.Aggregates++
			readable = append(readable, b)
		}
		for l, lk := range e.Lookups {
			if !building(o.Lookups, lk.Name) {
				continue
			}
			if err := e.repairKeys(ctx, l, readable, rep, held); err != nil {
				return err
			}
		}
		if o.OnPage != nil {
			if err := o.OnPage(after, len(page)); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
	}
}

// building reports whether the lookup named name is one of those a build
// fills (RepairOptions.Lookups, nil: every lookup), named as the model
// names them or as the store does ("email" is "players.email").
func building(names []string, name string) bool {
	if names == nil {
		return true
	}
	for _, n := range names {
		if n == name || strings.HasSuffix(name, "."+n) {
			return true
		}
	}
	return false
}

// repairKeys makes sure the items of lookup l of a page of blocks are
// there and point at them.
func (e *Engine[T]) repairKeys(ctx context.Context, l int, page []Block[T], rep *runtime.RepairReport, held conflicts) error {
	lk := e.Lookups[l]
	type want struct {
		key   []byte
		block *Block[T]
	}
	var wants []want
	var keys [][]byte
	for i := range page {
		b := &page[i]
		for _, k := range LookupKeys(lk.Unique, lk.Values(b.Value), b.Key) {
			wants = append(wants, want{k, b})
			keys = append(keys, k)
		}
	}
	stored := make(map[string]Item, len(keys))
	for _, run := range batches(keys, e.Batch) {
		items, err := e.P.GetItems(ctx, l, dedup(run))
		if err != nil {
			return err
		}
		for _, it := range items {
			stored[string(it.Key)] = it
		}
	}
	now := time.Now().UnixNano()
	for _, w := range wants {
		mine := Item{Key: w.key, Block: w.block.Key, Inc: w.block.Stamp.Inc, Seq: now}
		it, ok := stored[string(w.key)]
		switch {
		case !ok:
			done, _, err := e.P.PutItem(ctx, l, mine, Cond{Kind: Absent})
			if err != nil {
				return err
			}
			if done {
				rep.Added++
				stored[string(w.key)] = mine
			}
			continue
		case bytes.Equal(it.Block, w.block.Key) && it.Inc == w.block.Stamp.Inc:
			continue // as it should be
		case !bytes.Equal(it.Block, w.block.Key):
			// A unique value recorded for another block: keep it there if
			// that block holds it and comes first.
			holders, err := e.readFields(ctx, []Item{it})
			if err != nil {
				return err
			}
			holder, found := find(holders, it.Block)
			if found && holder.Err == nil && Holds(LookupKeys(true, lk.Values(holder.Value), holder.Key), w.key) {
				// Both hold it: the first in key order keeps it (blocks
				// may come in any order, so the holders are gathered and
				// reported at the end).
				held.add(l, w.key, holder.Key, w.block.Key)
				if bytes.Compare(holder.Key, w.block.Key) < 0 {
					if holder.Stamp.Inc == it.Inc {
						continue
					}
					mine.Block, mine.Inc = holder.Key, holder.Stamp.Inc
				}
			}
		}
		// The wrong block, or an item of an earlier incarnation of this
		// block: correct it.
		done, _, err := e.P.PutItem(ctx, l, mine, Cond{Kind: Same, Item: it})
		if err != nil {
			return err
		}
		if done {
			rep.Removed++
			rep.Added++
			stored[string(w.key)] = mine
		}
	}
	return nil
}

// repairItems is Repair's second pass over the items of lookup l.
func (e *Engine[T]) repairItems(ctx context.Context, l int, rep *runtime.RepairReport) error {
	lk := e.Lookups[l]
	var from []byte
	for {
		items, err := e.P.ScanItems(ctx, l, from, nil, e.repairBatch())
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		from = append(append([]byte(nil), items[len(items)-1].Key...), 0)
		blocks, err := e.readFields(ctx, items)
		if err != nil {
			return err
		}
		for _, it := range items {
			b, found := find(blocks, it.Block)
			switch {
			case found && b.Err != nil:
				continue // an unreadable block's: left as it is
			case found && b.Stamp.Inc == it.Inc && Holds(LookupKeys(lk.Unique, lk.Values(b.Value), b.Key), it.Key):
				continue
			}
			n, err := e.P.DeleteItems(ctx, l, [][]byte{it.Key}, Cond{Kind: Same, Item: it})
			if err != nil {
				return err
			}
			rep.Removed += n
		}
		if len(items) < e.repairBatch() {
			return nil
		}
	}
}

// dedup returns keys without repeats (keeping the first).
func dedup(keys [][]byte) [][]byte {
	seen := make(map[string]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// conflicts gathers the holders of unique values held by several blocks,
// per lookup and value.
type conflicts map[int]map[string][][]byte

// add records that blocks a and b both hold value of lookup l.
func (c conflicts) add(l int, value []byte, a, b []byte) {
	if c[l] == nil {
		c[l] = map[string][][]byte{}
	}
	hs := c[l][string(value)]
	for _, h := range [][]byte{a, b} {
		if !slices.ContainsFunc(hs, func(x []byte) bool { return bytes.Equal(x, h) }) {
			hs = append(hs, h)
		}
	}
	c[l][string(value)] = hs
}

// report adds the conflicts to rep, by lookup, value and holder in key
// order, each kept for its first holder.
func (c conflicts) report(names []string, rep *runtime.RepairReport) {
	for l, name := range names {
		values := make([]string, 0, len(c[l]))
		for v := range c[l] {
			values = append(values, v)
		}
		slices.Sort(values)
		for _, v := range values {
			hs := c[l][v]
			slices.SortFunc(hs, bytes.Compare)
			for _, h := range hs[1:] {
				rep.AddConflict(name, []byte(v), hs[0], h)
			}
		}
	}
}
