package boltstore

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// pairs are the key-value pairs of one block as a write builds them: keys
// and values are appended to two buffers and referred to by offset, so that
// a block of any size costs a few allocations, not two per entry.
type pairs struct {
	keys, vals []byte
	ents       []pair
	// Scratch of rewrite: the keys of entries to delete.
	dels []byte
	offs []int
}

type pair struct{ k0, k1, v0, v1 int }

func (p *pairs) key(i int) []byte { e := p.ents[i]; return p.keys[e.k0:e.k1] }
func (p *pairs) val(i int) []byte { e := p.ents[i]; return p.vals[e.v0:e.v1] }

var pairPool = sync.Pool{New: func() any { return new(pairs) }}

func getPairs() *pairs {
	p := pairPool.Get().(*pairs)
	p.keys, p.vals, p.ents, p.dels, p.offs = p.keys[:0], p.vals[:0], p.ents[:0], p.dels[:0], p.offs[:0]
	return p
}

// putPairs returns p to the pool unless it grew large.
func putPairs(p *pairs) {
	if cap(p.vals) <= 1<<20 && cap(p.keys) <= 1<<20 {
		pairPool.Put(p)
	}
}

// add appends the pair of entry entry (element i if i >= 0; the marker if
// entry is "" and i < 0), with value v encoded.
func (p *pairs) add(blk *block, entry string, i int, v any) error {
	k0, v0 := len(p.keys), len(p.vals)
	p.keys = append(p.keys, blk.prefix...)
	if entry != "" || i >= 0 {
		p.keys = runtime.AppendString(p.keys, entry)
		if i >= 0 {
			p.keys = runtime.AppendInt(p.keys, int64(i))
		}
	}
	var err error
	if p.vals, err = bsonval.Append(p.vals, v); err != nil {
		name := entryName(blk.prefix, p.keys[k0:])
		p.keys, p.vals = p.keys[:k0], p.vals[:v0]
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	p.ents = append(p.ents, pair{k0, len(p.keys), v0, len(p.vals)})
	return nil
}

// addRaw appends a pair whose value is already encoded.
func (p *pairs) addRaw(blk *block, entry string, i int, val []byte) {
	k0, v0 := len(p.keys), len(p.vals)
	p.keys = append(p.keys, blk.prefix...)
	if entry != "" || i >= 0 {
		p.keys = runtime.AppendString(p.keys, entry)
		if i >= 0 {
			p.keys = runtime.AppendInt(p.keys, int64(i))
		}
	}
	p.vals = append(p.vals, val...)
	p.ents = append(p.ents, pair{k0, len(p.keys), v0, len(p.vals)})
}

// build appends every pair of a block holding t with version entry
// version (none if version is negative: a block without one, rewritten
// into another layout), in key order.
func (s *Store[T, K]) build(p *pairs, blk *block, t *T, version int64) error {
	if s.d.EAO {
		if err := p.add(blk, "", -1, s.d.Root.Value(t)); err != nil {
			return err
		}
	} else {
		p.addRaw(blk, "", -1, nil) // the empty marker of an ETF block
	}
	for _, f := range s.d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			n := f.Len(t)
			for i := range n {
				if err := p.add(blk, f.Key, i, f.Elem(t, i)); err != nil {
					return err
				}
			}
			var count [9]byte
			p.addRaw(blk, f.Key, -1, bsonval.AppendInt(count[:0], int64(n)))
		case !s.d.EAO:
			if err := p.add(blk, f.Key, -1, f.Value(t)); err != nil {
				return err
			}
		}
	}
	if s.d.Version != nil && version >= 0 {
		var v [9]byte
		p.addRaw(blk, s.d.Version.Key, -1, bsonval.AppendInt(v[:0], version))
	}
	// Entry keys sort by field key, and a field's count before its elements.
	slices.SortFunc(p.ents, func(a, b pair) int { return bytes.Compare(p.keys[a.k0:a.k1], p.keys[b.k0:b.k1]) })
	return nil
}

// putAll puts the pairs of p with the given indexes. bbolt copies keys but
// keeps values until the transaction ends: the values are copied into one
// new buffer.
func (blk *block) putAll(p *pairs, idx []int) {
	size := 0
	for _, i := range idx {
		size += len(p.val(i))
	}
	arena := make([]byte, 0, size)
	for _, i := range idx {
		v0 := len(arena)
		arena = append(arena, p.val(i)...)
		if blk.err != nil {
			return
		}
		k, v := p.key(i), arena[v0:len(arena):len(arena)]
		if !blk.fits(func() string { return entryName(blk.prefix, k) }, k, v) {
			return
		}
		if blk.err = blk.bucket.Put(k, v); blk.err == nil {
			blk.keys++
			blk.bytes += int64(len(k) + len(v))
		}
	}
}

// writeNew writes every entry of t into blk, an empty block, with the
// version entry set to version.
func (s *Store[T, K]) writeNew(blk *block, t *T, version int64) {
	if blk.err != nil {
		return
	}
	p := getPairs()
	defer putPairs(p)
	if blk.err = s.build(p, blk, t, version); blk.err != nil {
		return
	}
	for i := range p.ents {
		p.offs = append(p.offs, i)
	}
	blk.putAll(p, p.offs)
}

// rewrite makes blk hold exactly the entries of t, with version entry
// version: the pairs Clear and writeNew would leave, but an entry whose
// stored bytes are already the new ones is not written again, and only
// entries t no longer has (elements past its length, fields it dropped)
// are deleted. A Put of a partitioned aggregate whose one element changed
// thus writes that element and the version, not every entry.
func (s *Store[T, K]) rewrite(blk *block, t *T, version int64) {
	if blk.err != nil {
		return
	}
	p := getPairs()
	defer putPairs(p)
	if blk.err = s.build(p, blk, t, version); blk.err != nil {
		return
	}
	// Merge the stored pairs (in key order) with the new ones. Changes are
	// made after the scan: writing under a bbolt cursor moves it.
	var dels []int // offsets into p.dels, pairs
	c := blk.bucket.Cursor()
	i := 0
	for k, v := c.Seek(blk.prefix); k != nil && bytes.HasPrefix(k, blk.prefix); k, v = c.Next() {
		for i < len(p.ents) && bytes.Compare(p.key(i), k) < 0 {
			p.offs = append(p.offs, i)
			i++
		}
		if i < len(p.ents) && bytes.Equal(p.key(i), k) {
			if !bytes.Equal(p.val(i), v) {
				p.offs = append(p.offs, i)
			}
			i++
			continue
		}
		dels = append(dels, len(p.dels))
		p.dels = append(p.dels, k...)
		dels = append(dels, len(p.dels))
	}
	for ; i < len(p.ents); i++ {
		p.offs = append(p.offs, i)
	}
	for j := 0; j < len(dels); j += 2 {
		if blk.err = blk.bucket.Delete(p.dels[dels[j]:dels[j+1]]); blk.err != nil {
			return
		}
		blk.deletes++
	}
	blk.putAll(p, p.offs)
}
