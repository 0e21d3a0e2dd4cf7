package index

import (
	"bytes"
	"context"
	"slices"
	"strings"

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
// run, which makes the build safe while the application writes: the first
// pass writes an item only for a block that still holds its value
// (HeldPutter), or reads the blocks again after and takes back the items
// of blocks that changed meanwhile (repairKeys), so that a build leaves
// no item a block does not hold and misses none it does.
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
// there and point at them. It runs while the application writes (a
// lookup build): an item is written for a block as Repair read it, with
// that block's stamp, so that it is never newer than a write of the
// block that follows; with HeldPutter the item is written only if the
// block is still as read, otherwise the blocks are read again after the
// items are written and an item of a block that changed meanwhile and no
// longer holds the value is taken back, unless a write has touched it.
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
	var written []Item
	for _, w := range wants {
		var it *Item
		if s, ok := stored[string(w.key)]; ok {
			it = &s
		}
		put, err := e.repairKey(ctx, l, w.key, *w.block, it, rep, held)
		if err != nil {
			return err
		}
		if put != nil {
			stored[string(w.key)] = *put
			written = append(written, *put)
		}
	}
	if _, ok := e.P.(HeldPutter[T]); ok || len(written) == 0 {
		return nil
	}
	// Read the blocks again: an item written for a block that has changed
	// since the page was read, and no longer holds the value, goes (on
	// condition that no write has touched it since: a write of the block
	// upserts its own).
	blocks, err := e.readFields(ctx, written)
	if err != nil {
		return err
	}
	for _, it := range written {
		b, found := find(blocks, it.Block)
		if found && b.Err == nil && b.Stamp.Inc == it.Inc && Holds(LookupKeys(lk.Unique, lk.Values(b.Value), b.Key), it.Key) {
			continue
		}
		n, err := e.P.DeleteItems(ctx, l, [][]byte{it.Key}, Cond{Kind: Same, Item: it})
		if err != nil {
			return err
		}
		rep.Added -= n
	}
	return nil
}

// repairKey makes sure item key of lookup l of block b (as read) is there
// and points at it; it (nil: none) is the item stored, as read. It
// returns the item it wrote (nil: none).
func (e *Engine[T]) repairKey(ctx context.Context, l int, key []byte, b Block[T], it *Item, rep *runtime.RepairReport, held conflicts) (*Item, error) {
	lk := e.Lookups[l]
	holds := func(x Block[T]) bool {
		return x.Err == nil && Holds(LookupKeys(lk.Unique, lk.Values(x.Value), x.Key), key)
	}
	hp, checked := e.P.(HeldPutter[T])
	for range runtime.MaxAttempts {
		target := b // the block the item is to point at
		cond := Cond{Kind: Absent}
		if it != nil {
			cond = Cond{Kind: Same, Item: *it}
			switch {
			case bytes.Equal(it.Block, b.Key) && it.Inc == b.Stamp.Inc:
				return nil, nil // as it should be
			case bytes.Equal(it.Block, b.Key):
				// Of another incarnation: the block's current one (a
				// Create after Repair read it), or that of a Create of
				// the key in use, which undoes it. Decide on the block
				// as it is now.
				bs, err := e.readFields(ctx, []Item{{Block: b.Key}})
				if err != nil {
					return nil, err
				}
				fresh, found := find(bs, b.Key)
				if !found || !holds(fresh) || fresh.Stamp.Inc == it.Inc {
					return nil, nil // its writes answer for the item
				}
				b, target = fresh, fresh
			case !bytes.Equal(it.Block, b.Key):
				// A unique value recorded for another block: keep it
				// there if that block holds it and comes first.
				holders, err := e.readFields(ctx, []Item{*it})
				if err != nil {
					return nil, err
				}
				holder, found := find(holders, it.Block)
				if found && holds(holder) {
					// Both hold it: the first in key order keeps it
					// (blocks may come in any order, so the holders are
					// gathered and reported at the end).
					held.add(l, key, holder.Key, b.Key)
					if bytes.Compare(holder.Key, b.Key) < 0 {
						if holder.Stamp.Inc == it.Inc {
							return nil, nil
						}
						target = holder
					}
				}
			}
		}
		// The item is missing, points at the wrong block, or at an
		// earlier incarnation of this block: write it.
		mine := Item{Key: key, Block: target.Key, Inc: target.Stamp.Inc, Seq: target.Stamp.Seq}
		var done bool
		var err error
		if checked {
			done, err = hp.PutHeld(ctx, l, mine, cond, target, holds)
		} else {
			done, _, err = e.P.PutItem(ctx, l, mine, cond)
		}
		if err != nil {
			return nil, err
		}
		if done {
			rep.Added++
			if it != nil {
				rep.Removed++
			}
			return &mine, nil
		}
		// The item (or, with HeldPutter, the block) changed since it was
		// read: read it again (a write's item may be one its write
		// undoes). A block that no longer holds the value needs no item
		// (its write took care of it).
		if checked {
			bs, err := e.readFields(ctx, []Item{{Block: b.Key}})
			if err != nil {
				return nil, err
			}
			fresh, found := find(bs, b.Key)
			if !found || !holds(fresh) {
				return nil, nil
			}
			b = fresh
		}
		items, err := e.P.GetItems(ctx, l, [][]byte{key})
		if err != nil {
			return nil, err
		}
		it = nil
		if len(items) == 1 {
			it = &items[0]
		}
	}
	return nil, runtime.FailAt("Repair", e.Agg, e.id(b.Key), "(lookup "+lk.Name+" "+runtime.FormatKey(key)+": the block kept changing while its entry was written)", runtime.ErrConflict, nil)
}

// repairItems is Repair's second pass over the items of lookup l.
func (e *Engine[T]) repairItems(ctx context.Context, l int, rep *runtime.RepairReport) error {
	lk := e.Lookups[l]
	var from []byte
	for {
		items, err := e.P.ScanItems(ctx, l, from, nil, e.repairBatch(), false)
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
