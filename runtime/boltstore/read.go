package boltstore

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Reading a whole block decodes the elements of a partition together: the
// stored element values (each a BSON type byte and value) are laid out as
// one BSON array, and the partition's slice is decoded from it in one pass
// (of bsonval's fast decoder, or of the driver's), as a hand-written
// program decodes a document holding the slice. Decoding element by
// element sets up a decoder per element (12 for a game of 12 rounds). The stored bytes are the same
// either way; only the reading differs.

// elems gathers the elements of one partition as a BSON array value.
type elems struct {
	f   any    // the *runtime.Field being gathered, nil if none
	arr []byte // type byte TypeArray, then the array document so far
	n   int    // elements gathered
	// offs are the offsets in arr of the elements' values, for the
	// element-by-element fallback that names a bad element.
	offs []int
}

var elemsPool = sync.Pool{New: func() any { return new(elems) }}

func (g *elems) start(f any) {
	g.f, g.n = f, 0
	g.arr = append(g.arr[:0], byte(bson.TypeArray), 0, 0, 0, 0)
	g.offs = g.offs[:0]
}

// add appends element value v (type byte, then the value), named by its
// index.
func (g *elems) add(v []byte) error {
	if len(v) == 0 {
		return fmt.Errorf("empty value")
	}
	g.arr = append(g.arr, v[0])
	g.arr = strconv.AppendInt(g.arr, int64(g.n), 10)
	g.arr = append(g.arr, 0)
	g.offs = append(g.offs, len(g.arr))
	g.arr = append(g.arr, v[1:]...)
	g.n++
	return nil
}

// value ends the array and returns it as a stored value (type byte, then
// the array document).
func (g *elems) value() []byte {
	g.arr = append(g.arr, 0)
	binary.LittleEndian.PutUint32(g.arr[1:5], uint32(len(g.arr)-1))
	return g.arr
}

// elem returns element i's stored value (type byte included), valid until
// the next start.
func (g *elems) elem(i int, buf []byte) []byte {
	end := len(g.arr) - 1 // the array's terminating 0
	if i+1 < len(g.offs) {
		// Up to the next element's type byte and name.
		end = g.offs[i+1] - 1 - len(strconv.Itoa(i+1)) - 1
	}
	nameStart := g.offs[i] - 1 - len(strconv.Itoa(i))
	return append(append(buf[:0], g.arr[nameStart-1]), g.arr[g.offs[i]:end]...)
}

// blockReader decodes the entries of one block, in key order, into t. It
// reads a block written in another layout of the aggregate (issue 23,
// runtime/evolve.go) as the layout that wrote it meant: the root entry of
// an EAO block under ETF (its members are the fields), the field entries
// of an ETF block under EAO (the field accessors decode them), a
// partition stored whole (one value) and a whole slice stored partitioned
// (a count and elements). What it cannot read right is runtime.ErrLayout,
// never a zero value.
type blockReader[T any, K comparable] struct {
	s   *Store[T, K]
	t   *T
	dec valueDecoder
	g   *elems
	op  string
	id  any
	// root is the stored root entry of an EAO block (nil under ETF).
	root []byte
}

// reader returns a reader of block blk into a new aggregate with key id;
// release returns its buffers.
func (s *Store[T, K]) reader(blk *block, id K) blockReader[T, K] {
	return blockReader[T, K]{s: s, t: s.d.New(id), g: elemsPool.Get().(*elems), op: blk.op, id: blk.id}
}

func (r *blockReader[T, K]) release() {
	r.g.f = nil
	if cap(r.g.arr) <= 1<<20 {
		elemsPool.Put(r.g)
	}
}

func (r *blockReader[T, K]) entry(e blockEntry) error {
	if r.g.f != nil && e.Elem && e.Key == r.fieldKey() {
		// The next element of the partition being gathered.
		if e.Index != r.g.n {
			return fmt.Errorf("entry %s: want element %d: the block is corrupt", e, r.g.n)
		}
		if err := r.g.add(e.Value); err != nil {
			return fmt.Errorf("entry %s: %w", e, err)
		}
		return nil
	}
	if r.g.f != nil {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if e.Key == "" {
		return r.rootEntry(e)
	}
	f := r.s.d.Field(e.Key)
	if f == nil {
		return nil // an entry of a removed field
	}
	if f.Kind != runtime.KindPartition {
		if e.Elem || r.s.wholeSlices[f.Key] && isCount(e.Value) {
			// The count or an element of a slice this layout keeps
			// whole: a layout with the field partitioned wrote it.
			return r.gather(f, e)
		}
		r.dec.b = e.Value
		return f.Decode(r.t, &r.dec)
	}
	if !e.Elem {
		if !isCount(e.Value) {
			// The partition stored whole, by a layout without it: the
			// partition's Decode decodes the whole slice.
			r.dec.b = e.Value
			return f.Decode(r.t, &r.dec)
		}
		n, err := decodeInt(e.Value)
		if err != nil {
			return fmt.Errorf("entry %s: %w", e, err)
		}
		if n < 0 {
			return fmt.Errorf("entry %s: negative element count %d", e, n)
		}
		f.Reset(r.t, 0)
		r.g.start(f)
		return nil
	}
	if r.g.f == nil {
		// Elements without a count entry (a block written before counts).
		f.Reset(r.t, 0)
		r.g.start(f)
	}
	if e.Index != r.g.n {
		return fmt.Errorf("entry %s: want element %d: the block is corrupt", e, r.g.n)
	}
	if err := r.g.add(e.Value); err != nil {
		return fmt.Errorf("entry %s: %w", e, err)
	}
	return nil
}

// gather starts gathering the elements of f, a field this layout keeps
// whole that the block holds partitioned (e is its count or its first
// element): flush decodes them as the whole slice.
func (r *blockReader[T, K]) gather(f *runtime.Field[T], e blockEntry) error {
	if !r.s.wholeSlices[f.Key] {
		return runtime.LayoutMismatch(r.op, r.s.d.Aggregate, r.id, e.String(), "partitioned", "whole (not a slice)")
	}
	r.g.start(f)
	if !e.Elem {
		return nil
	}
	if e.Index != 0 {
		return fmt.Errorf("entry %s: want element 0: the block is corrupt", e)
	}
	if err := r.g.add(e.Value); err != nil {
		return fmt.Errorf("entry %s: %w", e, err)
	}
	return nil
}

// rootEntry decodes the block marker: the root entry of an EAO block, or
// the empty marker of an ETF block (whose field entries follow, and decode
// into the fields under either strategy).
func (r *blockReader[T, K]) rootEntry(e blockEntry) error {
	if len(e.Value) == 0 {
		return nil
	}
	r.root = e.Value
	if r.s.d.Root != nil {
		r.dec.b = e.Value
		return r.s.d.Root.Decode(r.t, &r.dec)
	}
	// The root entry of an EAO block read under ETF: its members are the
	// fields, by entry key.
	return r.s.members(r.t, e.Value, nil, &r.dec)
}

// finish decodes what the last entries left pending; under EAO, a
// partition without entries of its own is read from the root entry, where
// a layout without the partition keeps it.
func (r *blockReader[T, K]) finish() error {
	if r.g.f != nil {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if r.root == nil || !r.s.d.EAO {
		return nil
	}
	for _, f := range r.s.parts {
		if f.Len(r.t) == 0 {
			if err := r.s.members(r.t, r.root, f, &r.dec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *blockReader[T, K]) fieldKey() string { return r.g.f.(*runtime.Field[T]).Key }

// flush decodes the gathered partition into t.
func (r *blockReader[T, K]) flush() error {
	f := r.g.f.(*runtime.Field[T])
	r.g.f = nil
	if f.Kind != runtime.KindPartition {
		// The elements of a field this layout keeps whole: one array.
		r.dec.b = r.g.value()
		return f.Decode(r.t, &r.dec)
	}
	if r.g.n == 0 {
		f.Reset(r.t, 0)
		return nil
	}
	r.dec.b = r.g.value()
	if err := f.Decode(r.t, &r.dec); err == nil {
		return nil
	}
	// Decode element by element, as the elements were written: the error
	// names the bad element (and should every element decode alone, that
	// is the partition).
	f.Reset(r.t, r.g.n)
	var buf []byte
	for i := range r.g.n {
		buf = r.g.elem(i, buf)
		r.dec.b = buf
		if err := f.AppendDecoded(r.t, &r.dec); err != nil {
			return fmt.Errorf("entry %s: %w", f.ElemKey(i), err)
		}
	}
	return nil
}

// read reads block blk, key id, whole.
func (s *Store[T, K]) read(blk *block, id K) (*T, error) {
	r := s.reader(blk, id)
	defer r.release()
	if err := blk.Scan(r.entry); err != nil {
		return nil, runtime.Unreadable(blk.op, s.d.Aggregate, id, err)
	}
	if err := r.finish(); err != nil {
		return nil, runtime.Unreadable(blk.op, s.d.Aggregate, id, err)
	}
	return r.t, nil
}
