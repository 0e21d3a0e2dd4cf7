package index

import (
	"bytes"
	"context"

	"github.com/noamgen/noamgen/runtime"
)

// drop removes a stale item a read met, once it is older than StaleAfter
// and unless it changed since it was read.
func (e *Engine[T]) drop(ctx context.Context, l int, it Item) {
	if e.stale(it.Seq) {
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
	notFound := runtime.FailAt(op, e.Agg, nil, runtime.FormatKey(value), runtime.ErrNotFound, nil)
	items, err := e.P.GetItems(ctx, l, [][]byte{value})
	if err != nil {
		return zero, runtime.Fail(op, e.Agg, nil, nil, err)
	}
	if len(items) == 0 {
		return zero, notFound
	}
	it := items[0]
	b, found, err := e.readBlock(ctx, it.Block)
	if err != nil {
		return zero, runtime.Fail(op, e.Agg, e.id(it.Block), nil, err)
	}
	if found && b.Err != nil {
		return zero, runtime.Unreadable(op, e.Agg, e.id(it.Block), b.Err)
	}
	if found && Holds(LookupKeys(true, e.Lookups[l].Values(b.Value), it.Block), value) {
		return b.Value, nil
	}
	e.drop(ctx, l, it)
	return zero, notFound
}

// Range reads up to n blocks found by lookup l in key range rng after
// position rng.After, in index key order: items are read n+1 at a time,
// their blocks in one batch, and every item is verified against its block;
// stale items are skipped (and dropped once older than StaleAfter). It
// returns the index key of the last block returned and whether more
// follow.
func (e *Engine[T]) Range(ctx context.Context, op string, l int, rng *runtime.KeyRange, n int) ([]T, []byte, bool, error) {
	fail := func(err error) ([]T, []byte, bool, error) {
		return nil, nil, false, runtime.Fail(op, e.Agg, nil, nil, err)
	}
	unique := e.Lookups[l].Unique
	out := make([]T, 0, min(n, 64))
	var keys [][]byte
	start, end := rng.Start(), rng.To
	for len(out) <= n && bytes.Compare(start, end) < 0 {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		want := n + 1 - len(out)
		items, err := e.P.ScanItems(ctx, l, start, end, want)
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
			if b, ok := blocks[string(it.Block)]; ok {
				if b.Err != nil {
					return nil, nil, false, runtime.Unreadable(op, e.Agg, e.id(it.Block), b.Err)
				}
				if Holds(LookupKeys(unique, e.Lookups[l].Values(b.Value), it.Block), it.Key) {
					out, keys = append(out, b.Value), append(keys, it.Key)
					continue
				}
			}
			e.drop(ctx, l, it)
		}
		start = append(append([]byte(nil), items[len(items)-1].Key...), 0)
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

// readBlocks reads the blocks items point at, in batches, by encoded key.
func (e *Engine[T]) readBlocks(ctx context.Context, items []Item) (map[string]Block[T], error) {
	seen := make(map[string]bool, len(items))
	var keys [][]byte
	for _, it := range items {
		if !seen[string(it.Block)] {
			seen[string(it.Block)] = true
			keys = append(keys, it.Block)
		}
	}
	out := make(map[string]Block[T], len(keys))
	for _, run := range batches(keys, e.Batch) {
		bs, err := e.P.ReadBlocks(ctx, run)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			out[string(b.Key)] = b
		}
	}
	return out, nil
}
