package index

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// IndexKey is the index key of encoded value value of a block with encoded
// key block: the value for a unique lookup, the value followed by the
// block key otherwise.
func IndexKey(unique bool, value, block []byte) []byte {
	if unique {
		return value
	}
	return append(append(make([]byte, 0, len(value)+len(block)), value...), block...)
}

// LookupKeys returns the index keys of block block holding values (see
// IndexKey), sorted and distinct.
func LookupKeys(unique bool, values [][]byte, block []byte) [][]byte {
	out := make([][]byte, 0, len(values))
	for _, v := range values {
		out = append(out, IndexKey(unique, v, block))
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// Keys returns the index keys of block block holding v, per lookup.
func (e *Engine[T]) Keys(block []byte, v T) Keys {
	out := make(Keys, len(e.Lookups))
	for i, l := range e.Lookups {
		out[i] = LookupKeys(l.Unique, l.Values(v), block)
	}
	return out
}

// Holds reports whether the sorted keys hold key.
func Holds(keys [][]byte, key []byte) bool {
	_, ok := slices.BinarySearchFunc(keys, key, bytes.Compare)
	return ok
}

// Minus returns the keys of a that b lacks (both sorted).
func Minus(a, b [][]byte) [][]byte {
	var out [][]byte
	for _, k := range a {
		if !Holds(b, k) {
			out = append(out, k)
		}
	}
	return out
}

// NextSeq is the write sequence of a write over sequence old: later than
// old and about the time in nanoseconds, plus up to a millisecond of
// jitter, so that two writers over one state pick different sequences.
func NextSeq(old int64) int64 {
	return max(old, time.Now().UnixNano()) + 1 + rand.Int64N(1<<20)
}

// NewInc draws the incarnation of a new block (never 0).
func NewInc() int64 {
	for {
		if n := rand.Int64(); n != 0 {
			return n
		}
	}
}

// batches splits keys into runs within lim.
func batches(keys [][]byte, lim Limits) [][][]byte {
	maxKeys, maxBytes := lim.Keys, lim.Bytes
	if maxKeys <= 0 {
		maxKeys = 500
	}
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	var out [][][]byte
	start, size := 0, 0
	for i, k := range keys {
		if i > start && (i-start == maxKeys || size+len(k) > maxBytes) {
			out = append(out, keys[start:i])
			start, size = i, 0
		}
		size += len(k)
	}
	if start < len(keys) {
		out = append(out, keys[start:])
	}
	return out
}

func (e *Engine[T]) staleAfter() time.Duration {
	if e.StaleAfter == nil {
		return 30 * time.Second
	}
	return e.StaleAfter()
}

func (e *Engine[T]) now() int64 {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now().UnixNano()
}

// stale reports whether an item of sequence s is older than StaleAfter.
func (e *Engine[T]) stale(s int64) bool {
	return e.now()-s > e.staleAfter().Nanoseconds()
}

// id is the block key errors name.
func (e *Engine[T]) id(block []byte) any {
	if e.ID != nil {
		return e.ID(block)
	}
	return runtime.FormatKey(block)
}
