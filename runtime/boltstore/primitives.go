package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// primitives are the store primitives Repair (index.Engine.Repair) runs
// on. bbolt writes a block and its index entries in one transaction, so
// the cross-item protocol never runs here and its state is not stored: an
// item's Inc, Seq and W are always 0 (a condition on them holds only for
// 0), blocks carry no stamp, FenceBlock and DeleteBlock are not
// supported, and no error is ambiguous. Each method is one transaction.
type primitives[T any, K comparable] struct{ s *Store[T, K] }

var (
	_ index.Primitives[*struct{}] = primitives[struct{}, string]{}
	_ index.HeldPutter[*struct{}] = primitives[struct{}, string]{}
)

// item reads the item at key k of lookup l from its bucket (nil if none).
func (p primitives[T, K]) item(l indexTable[T], ib *bbolt.Bucket, k []byte) *index.Item {
	if ib == nil {
		return nil
	}
	if v := ib.Get(k); v != nil {
		return itemOf(l, k, v)
	}
	return nil
}

// itemOf is the item of the pair k, v of lookup l's bucket.
func itemOf[T any](l indexTable[T], k, v []byte) *index.Item {
	// A key that does not split into a value and a block key points at no
	// block (Block nil): Repair removes it.
	_, blockKey, _ := entry(l, k, v)
	return &index.Item{Key: bytes.Clone(k), Block: bytes.Clone(blockKey)}
}

// meets reports whether stored item it satisfies condition c.
func meets(it *index.Item, c index.Cond) bool {
	switch c.Kind {
	case index.Always:
		return true
	case index.Absent:
		return it == nil
	case index.Same:
		return it != nil && bytes.Equal(it.Block, c.Item.Block) && c.Item.Seq == 0 && c.Item.W == 0
	case index.Marked:
		return it != nil && c.W == 0
	case index.Held:
		return it != nil && bytes.Equal(it.Block, c.Block) && c.Inc == 0 && c.Before >= 0 // the stored Seq is 0
	}
	return false
}

// updateItems runs fn on the bucket of lookup l in one write transaction.
func (p primitives[T, K]) updateItems(ctx context.Context, l int, fn func(indexTable[T], *bbolt.Bucket, *block) error) error {
	return p.updateIn(ctx, l, func(_ *bbolt.Tx, lt indexTable[T], ib *bbolt.Bucket, stats *block) error { return fn(lt, ib, stats) })
}

// updateIn is updateItems whose fn also gets the transaction.
func (p primitives[T, K]) updateIn(ctx context.Context, l int, fn func(*bbolt.Tx, indexTable[T], *bbolt.Bucket, *block) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var stats block
	err := update(ctx, p.s.c.DB, func(tx *bbolt.Tx) error {
		stats = block{}
		ib, err := tx.CreateBucketIfNotExists([]byte(p.s.lookups[l].Name))
		if err != nil {
			return err
		}
		return fn(tx, p.s.lookups[l], ib, &stats)
	})
	if err == nil {
		written.keys.Add(stats.keys)
		written.bytes.Add(stats.bytes)
		written.deletes.Add(stats.deletes)
	}
	return err
}

// PutItem writes it in the bucket of lookup l: for a unique lookup the
// pair (key, block key), otherwise (key, empty), where the key must end
// with the block key.
func (p primitives[T, K]) PutItem(ctx context.Context, l int, it index.Item, c index.Cond) (ok bool, prev *index.Item, err error) {
	err = p.updateItems(ctx, l, func(lt indexTable[T], ib *bbolt.Bucket, stats *block) error {
		if prev = p.item(lt, ib, it.Key); !meets(prev, c) {
			return nil
		}
		ok = true
		return putItem(lt, ib, stats, it)
	})
	if err != nil || c.Kind != index.Always {
		ok, prev = ok && err == nil, nil
	}
	return ok, prev, err
}

// putItem writes it in bucket ib of lookup lt.
func putItem[T any](lt indexTable[T], ib *bbolt.Bucket, stats *block, it index.Item) error {
	v := []byte{}
	if lt.Unique {
		v = bytes.Clone(it.Block)
	} else if _, blockKey, err := entry(lt, it.Key, nil); err != nil || !bytes.Equal(blockKey, it.Block) {
		return fmt.Errorf("index table %s: key %x does not end with block key %x", lt.Name, it.Key, it.Block)
	}
	stats.putIn(ib, bytes.Clone(it.Key), v)
	return stats.err
}

// PutHeld implements index.HeldPutter: in the transaction of the put,
// block it.Block is read again (the fields the lookups read) and must
// hold the item (holds), so that a write of the block since Repair read
// it cannot leave an item of a value the block no longer holds.
func (p primitives[T, K]) PutHeld(ctx context.Context, l int, it index.Item, c index.Cond, _ index.Block[*T], holds func(index.Block[*T]) bool) (bool, error) {
	ok := false
	err := p.updateIn(ctx, l, func(tx *bbolt.Tx, lt indexTable[T], ib *bbolt.Bucket, stats *block) error {
		if !meets(p.item(lt, ib, it.Key), c) {
			return nil
		}
		b, found := p.blockIn(tx, it.Block, p.s.readIndexed)
		if !found || !holds(b) {
			return nil
		}
		ok = true
		return putItem(lt, ib, stats, it)
	})
	return ok && err == nil, err
}

// GetItems reads the items of lookup l with the given keys.
func (p primitives[T, K]) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	var out []index.Item
	err := p.viewItems(ctx, l, func(lt indexTable[T], ib *bbolt.Bucket) error {
		for _, k := range keys {
			if it := p.item(lt, ib, k); it != nil {
				out = append(out, *it)
			}
		}
		return nil
	})
	return out, err
}

// DeleteItems deletes the items of lookup l with the given keys that
// satisfy c.
func (p primitives[T, K]) DeleteItems(ctx context.Context, l int, keys [][]byte, c index.Cond) (int, error) {
	n := 0
	err := p.updateItems(ctx, l, func(lt indexTable[T], ib *bbolt.Bucket, stats *block) error {
		n = 0
		for _, k := range keys {
			it := p.item(lt, ib, k)
			if it == nil || c.Kind == index.Always || c.Kind == index.Absent || !meets(it, c) {
				continue
			}
			if err := ib.Delete(k); err != nil {
				return err
			}
			stats.deletes++
			n++
		}
		return nil
	})
	return n, err
}

// ScanItems reads up to limit items of lookup l in key order (desc: in
// descending key order, with a reverse cursor).
func (p primitives[T, K]) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	var out []index.Item
	err := p.viewItems(ctx, l, func(lt indexTable[T], ib *bbolt.Bucket) error {
		if ib == nil {
			return nil
		}
		cur := ib.Cursor()
		if desc {
			for k, v := lastBefore(cur, to); k != nil && len(out) < limit && bytes.Compare(k, from) >= 0; k, v = cur.Prev() {
				out = append(out, *itemOf(lt, k, v))
			}
			return nil
		}
		k, v := cur.First()
		if from != nil {
			k, v = cur.Seek(from)
		}
		for ; k != nil && len(out) < limit && (to == nil || bytes.Compare(k, to) < 0); k, v = cur.Next() {
			out = append(out, *itemOf(lt, k, v))
		}
		return nil
	})
	return out, err
}

func (p primitives[T, K]) viewItems(ctx context.Context, l int, fn func(indexTable[T], *bbolt.Bucket) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return view(ctx, p.s.c.DB, func(tx *bbolt.Tx) error { return fn(p.s.lookups[l], tx.Bucket([]byte(p.s.lookups[l].Name))) })
}

// ReadBlocks reads the blocks with the given keys whole.
func (p primitives[T, K]) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[*T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []index.Block[*T]
	err := view(ctx, p.s.c.DB, func(tx *bbolt.Tx) error {
		for _, k := range keys {
			if b, ok := p.blockIn(tx, k, func(blk *block, _ ...string) (*T, error) { return p.s.read(blk, blk.id.(K)) }); ok {
				out = append(out, b)
			}
		}
		return nil
	})
	return out, err
}

// blockIn reads block k in transaction tx with read (ok false: no such
// block).
func (p primitives[T, K]) blockIn(tx *bbolt.Tx, k []byte, read func(*block, ...string) (*T, error)) (index.Block[*T], bool) {
	b := tx.Bucket([]byte(p.s.c.Name))
	if b == nil {
		return index.Block[*T]{}, false
	}
	id, err := p.s.id(k)
	if err != nil {
		return index.Block[*T]{}, false // no block of this collection has that key
	}
	blk := p.s.c.block(tx, b, "Repair", id)
	if !blk.Exists() {
		return index.Block[*T]{}, false
	}
	t, err := read(blk)
	return index.Block[*T]{Key: bytes.Clone(k), Value: t, Err: err}, true
}

// ScanBlocks reads up to limit blocks after after in block-key order,
// with the fields the lookups read.
func (p primitives[T, K]) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[*T], []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var from []byte
	if after != nil {
		from = runtime.PrefixEnd(BlockPrefix(after))
	}
	var out []index.Block[*T]
	err := view(ctx, p.s.c.DB, func(tx *bbolt.Tx) error {
		var err error
		out, _, _, err = readBlocks(p.s.c, tx.Bucket([]byte(p.s.c.Name)), "Repair", from, limit, false, func(blk *block, _ K) (index.Block[*T], error) {
			t, err := p.s.readIndexed(blk)
			return index.Block[*T]{Key: bytes.Clone(blk.blockKey), Value: t, Err: err}, nil
		})
		return err
	})
	return out, index.NextAfter(out, limit), err
}

var errStamps = errors.New("boltstore: blocks carry no stamp: bbolt writes a block and its index entries in one transaction")

// FenceBlock is not supported: see errStamps.
func (p primitives[T, K]) FenceBlock(context.Context, []byte, index.Stamp, int64) (bool, error) {
	return false, errStamps
}

// DeleteBlock is not supported: see errStamps.
func (p primitives[T, K]) DeleteBlock(context.Context, []byte, index.Stamp) (bool, error) {
	return false, errStamps
}

// Ambiguous is false: a bbolt transaction either committed or did not.
func (p primitives[T, K]) Ambiguous(error) bool { return false }
