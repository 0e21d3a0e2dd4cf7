package index

import (
	"bytes"
	"context"
	"slices"

	"github.com/noamgen/noamgen/runtime"
)

// ItemReader may be implemented by the Primitives of an Engine with
// Atomic set: its reads (Get, Range) then take their items from it. The
// methods are GetItems and ScanItems, except that the items need carry
// only Key and Block: a store whose block and items change in one step
// need not read the protocol's fields (Inc, Seq, W) for a read.
type ItemReader interface {
	ReadItems(ctx context.Context, l int, keys [][]byte) ([]Item, error)
	RangeItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]Item, error)
}

// getItems is GetItems for the reads (ReadItems when Atomic allows it).
func (e *Engine[T]) getItems(ctx context.Context, l int, keys [][]byte) ([]Item, error) {
	if r, ok := e.P.(ItemReader); ok && e.Atomic {
		return r.ReadItems(ctx, l, keys)
	}
	return e.P.GetItems(ctx, l, keys)
}

// scanItems is ScanItems for the reads (RangeItems when Atomic allows it).
func (e *Engine[T]) scanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]Item, error) {
	if r, ok := e.P.(ItemReader); ok && e.Atomic {
		return r.RangeItems(ctx, l, from, to, limit, desc)
	}
	return e.P.ScanItems(ctx, l, from, to, limit, desc)
}

// holds reports whether block value v holds item key of lookup l with
// block key block: whether key is the index key (IndexKey) of one of its
// values.
func (e *Engine[T]) holds(l int, v T, block, key []byte) bool {
	lk := e.Lookups[l]
	for _, x := range lk.Values(v) {
		if lk.Unique {
			if bytes.Equal(x, key) {
				return true
			}
		} else if len(x)+len(block) == len(key) && bytes.HasPrefix(key, x) && bytes.HasSuffix(key, block) {
			return true
		}
	}
	return false
}

// drop removes a stale item a read met, once it is older than StaleAfter
// and unless it changed since it was read. With Atomic, no item is stale:
// a block that does not hold its item's value changed after the item was
// read, and the item is gone with the value.
func (e *Engine[T]) drop(ctx context.Context, l int, it Item) {
	if !e.Atomic && e.stale(it.Seq) {
		ctx, cancel := runtime.Detach(ctx)
		defer cancel()
		_, _ = e.P.DeleteItems(ctx, l, [][]byte{it.Key}, Cond{Kind: Same, Item: it})
	}
}

// Get reads the block holding encoded value value of unique lookup l. It
// fails with runtime.ErrNotFound if none does; an item whose block does
// not hold the value is skipped (and dropped once stale).
func (e *Engine[T]) Get(ctx context.Context, op string, l int, value []byte) (T, error) {
	var zero T
	items, err := e.getItems(ctx, l, [][]byte{value})
	if err != nil {
		return zero, runtime.Fail(op, e.Agg, nil, nil, err)
	}
	if len(items) == 0 {
		return zero, e.notFound(op, value)
	}
	it := items[0]
	b, found, err := e.readBlock(ctx, it.Block)
	if err != nil {
		return zero, runtime.Fail(op, e.Agg, e.id(it.Block), nil, err)
	}
	if found && b.Err != nil {
		return zero, runtime.Unreadable(op, e.Agg, e.id(it.Block), b.Err)
	}
	if found && e.holds(l, b.Value, it.Block, value) {
		return b.Value, nil
	}
	e.drop(ctx, l, it)
	return zero, e.notFound(op, value)
}

func (e *Engine[T]) notFound(op string, value []byte) error {
	return runtime.FailAt(op, e.Agg, nil, runtime.FormatKey(value), runtime.ErrNotFound, nil)
}

// Range reads up to n blocks found by lookup l in key range rng after
// position rng.After, in index key order (with desc: before it, in
// descending index key order): items are read n+1 at a time, their blocks
// in one batch, and every item is verified against its block; stale items
// are skipped (and dropped once older than StaleAfter). It returns the
// index key of the last block returned and whether more follow.
func (e *Engine[T]) Range(ctx context.Context, op string, l int, rng *runtime.KeyRange, n int, desc bool) ([]T, []byte, bool, error) {
	fail := func(err error) ([]T, []byte, bool, error) {
		return nil, nil, false, runtime.Fail(op, e.Agg, nil, nil, err)
	}
	out := make([]T, 0, min(n+1, 64))
	keys := make([][]byte, 0, cap(out))
	start, end := rng.Start(), rng.To
	if desc {
		start, end = rng.From, rng.To
		if rng.After != nil {
			end = rng.After
		}
	}
	for len(out) <= n && bytes.Compare(start, end) < 0 {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		want := n + 1 - len(out)
		items, err := e.scanItems(ctx, l, start, end, want, desc)
		if err != nil {
			return fail(err)
		}
		if len(items) == 0 {
			break
		}
		blocks, err := e.readBlocks(ctx, items)
		if err != nil {
			return fail(err)
		}
		for _, it := range items {
			if b, ok := find(blocks, it.Block); ok {
				if b.Err != nil {
					return nil, nil, false, runtime.Unreadable(op, e.Agg, e.id(it.Block), b.Err)
				}
				if e.holds(l, b.Value, it.Block, it.Key) {
					out, keys = append(out, b.Value), append(keys, it.Key)
					continue
				}
			}
			e.drop(ctx, l, it)
		}
		if desc {
			end = bytes.Clone(items[len(items)-1].Key)
		} else {
			start = append(append([]byte(nil), items[len(items)-1].Key...), 0)
		}
		if len(items) < want {
			break
		}
	}
	more := len(out) > n
	out = out[:min(len(out), n)]
	var last []byte
	if len(out) > 0 {
		last = keys[len(out)-1]
	}
	return out, last, more, nil
}

// readBlocks reads the blocks items point at, each once, in batches, and
// returns them sorted by key (find looks one up).
func (e *Engine[T]) readBlocks(ctx context.Context, items []Item) ([]Block[T], error) {
	return e.readBatches(ctx, items, e.P.ReadBlocks)
}

// readFields is readBlocks for Repair: with the primitives' ReadFields
// when they have it (the values then hold only the lookups' fields).
func (e *Engine[T]) readFields(ctx context.Context, items []Item) ([]Block[T], error) {
	if r, ok := e.P.(FieldReader[T]); ok {
		return e.readBatches(ctx, items, r.ReadFields)
	}
	return e.readBlocks(ctx, items)
}

// readBatches reads the blocks items point at with read (ReadBlocks or
// ReadFields), each once, in batches, sorted by key.
func (e *Engine[T]) readBatches(ctx context.Context, items []Item, read func(context.Context, [][]byte) ([]Block[T], error)) ([]Block[T], error) {
	keys := make([][]byte, len(items))
	for i, it := range items {
		keys[i] = it.Block
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	var out []Block[T]
	for _, run := range batches(keys, e.Batch) {
		bs, err := read(ctx, run)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = bs
		} else {
			out = append(out, bs...)
		}
	}
	slices.SortFunc(out, func(a, b Block[T]) int { return bytes.Compare(a.Key, b.Key) })
	return out, nil
}

// find returns the block with key key of blocks (sorted by key).
func find[T any](blocks []Block[T], key []byte) (Block[T], bool) {
	i, ok := slices.BinarySearchFunc(blocks, key, func(b Block[T], k []byte) int { return bytes.Compare(b.Key, k) })
	if !ok {
		return Block[T]{}, false
	}
	return blocks[i], true
}
