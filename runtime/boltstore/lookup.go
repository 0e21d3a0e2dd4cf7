package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// indexTable is one index table of aggregate type A: the bucket Name (the
// lookup's qualified name, "Hotel.cityStars"), which maps each value of the
// lookup to the block keys holding it. Values are tuples encoded with the
// key codec (Keys returns them, without the block key), so that the bucket
// is in (value, block key) order and a query is one key range.
//
//	non-unique: key = value + block key, value empty
//	unique:     key = value,             value = block key
//
// A unique lookup's value is held by one block at most: a write that would
// give it to a second one finds the first one's key with a single Get.
type indexTable[A any] struct {
	Name   string
	Unique bool
	// Parts is the number of components of a value (the lookup's parts),
	// which tells where the block key starts in a non-unique entry's key.
	Parts int
	// Keys returns the encoded values an aggregate holds, sorted and
	// without duplicates.
	Keys func(*A) [][]byte
}

// CountersBucket holds the counters of enumerable block keys: key the
// encoded collection name followed by the encoded scope (nothing for a
// scalar block key), value the last number allocated or used.
const CountersBucket = "noam.counters"

// counter describes a collection's enumerable block keys
// (noam:"id,counter"): the counted part of a key is a number allocated 1,
// 2, 3, ... per scope, the key parts before it (none for a scalar key).
type counter[K any] struct {
	// Split returns the encoded scope of id and its counted part.
	Split func(id K) (scope []byte, n int64)
	// With returns id with its counted part set to n.
	With func(id K, n int64) K
}

// reindexTable moves the entries of lookup l of block b from the values held by
// old to those held by new, where nil stands for no aggregate (a block
// being created or deleted): entries of values only old holds are deleted,
// entries of values only new holds are written, the others are left alone
// (a write that does not change the values writes no entry). With old nil,
// new may be a partial aggregate: reindexTable then only adds its values (an
// appended element's). A unique value held by another block records a
// runtime.ErrDuplicate, so that the transaction changes nothing.
func reindexTable[A any](b *block, l indexTable[A], old, new *A) {
	if b.err != nil {
		return
	}
	var ok, nk [][]byte
	if old != nil {
		ok = runtime.SortKeys(l.Keys(old))
	}
	if new != nil {
		nk = runtime.SortKeys(l.Keys(new))
	}
	for i, j := 0, 0; i < len(ok) || j < len(nk); {
		switch c := compareAt(ok, i, nk, j); {
		case c < 0:
			b.unindex(l.Name, l.Unique, ok[i])
			i++
		case c > 0:
			b.index(l.Name, l.Unique, nk[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
}

// compareAt compares a[i] with b[j], where a missing element sorts last.
func compareAt(a [][]byte, i int, b [][]byte, j int) int {
	switch {
	case i == len(a):
		return 1
	case j == len(b):
		return -1
	}
	return bytes.Compare(a[i], b[j])
}

// lookupBucket returns the index bucket name of a write transaction,
// creating it if needed.
func (b *block) lookupBucket(name string) *bbolt.Bucket {
	if bk := b.lookups[name]; bk != nil {
		return bk
	}
	bk, err := b.tx.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		b.err = fmt.Errorf("index table %s: %w", name, err)
		return nil
	}
	if b.lookups == nil {
		b.lookups = map[string]*bbolt.Bucket{}
	}
	b.lookups[name] = bk
	return bk
}

// index writes the entry of value for this block, if it is missing. A
// value or block key with a string that is not valid UTF-8 records a
// runtime.ErrInvalidValue instead (every store refuses those, see
// runtime.CheckKey), so that the transaction changes nothing.
func (b *block) index(name string, unique bool, value []byte) {
	bk, k, v, stored := b.indexable(name, unique, value)
	if b.err != nil {
		return
	}
	switch {
	case stored == nil && unique:
		b.putIn(bk, bytes.Clone(k), bytes.Clone(v)) // bbolt keeps both: value and blockKey are the caller's
	case stored == nil:
		b.putIn(bk, k, v) // a new key
	}
}

// indexable checks, without writing, that this block may hold the entry
// of value: its strings are valid UTF-8, it fits, and a unique value is
// not held by another block; a failure is recorded as index records it.
// It returns the index bucket, the entry's key and value, and the value
// stored under the key (nil: none).
func (b *block) indexable(name string, unique bool, value []byte) (bk *bbolt.Bucket, k, v, stored []byte) {
	if err := runtime.CheckKey(b.op, b.agg, b.id, "lookup "+name, value); err != nil {
		b.err = err
		return
	}
	if err := runtime.CheckKey(b.op, b.agg, b.id, "block key", b.blockKey); err != nil {
		b.err = err
		return
	}
	bk = b.lookupBucket(name)
	if b.err != nil {
		return
	}
	k, v = index.IndexKey(unique, value, b.blockKey), []byte{}
	if unique {
		v = b.blockKey
	}
	if !b.fits(func() string { return "lookup " + name }, k, v) {
		return
	}
	stored = bk.Get(k)
	if unique && stored != nil && !bytes.Equal(stored, b.blockKey) {
		if b.held != nil && !b.held(name, value, stored) {
			return bk, k, v, nil // a stale claim: taken over
		}
		b.err = runtime.LookupTaken(b.op, b.agg, b.id, name, value, nil)
	}
	return
}

// unindex deletes the entry of value for this block, if there is one. A
// unique value held by another block (which only a write bypassing the
// repository can cause) is left to its holder.
func (b *block) unindex(name string, unique bool, value []byte) {
	bk := b.lookupBucket(name)
	if b.err != nil {
		return
	}
	k := index.IndexKey(unique, value, b.blockKey)
	switch stored := bk.Get(k); {
	case stored == nil, unique && !bytes.Equal(stored, b.blockKey):
		return
	}
	if b.err = bk.Delete(k); b.err == nil {
		b.deletes++
	}
}

func (b *block) putIn(bk *bbolt.Bucket, k, v []byte) {
	if b.err = bk.Put(k, v); b.err == nil {
		b.keys++
		b.bytes += int64(len(k) + len(v))
	}
}

// FormatKey renders an encoded tuple for messages: its components
// separated by commas, strings quoted ("Dortmund", 4).
func FormatKey(k []byte) string { return strings.Join(runtime.KeyParts(k), ", ") }

// skipComponents skips n components of r.
func skipComponents(r *runtime.KeyReader, n int) error {
	for range n {
		if _, err := r.String(); err == nil {
			continue
		}
		if _, err := r.Int(); err == nil {
			continue
		}
		if _, err := r.Uint(); err != nil {
			return err
		}
	}
	return nil
}

// entry splits an index entry of lookup l into the value and the block key.
func entry[A any](l indexTable[A], k, v []byte) (value, blockKey []byte, err error) {
	if l.Unique {
		return k, v, nil
	}
	r := runtime.NewKeyReader(k)
	if err := skipComponents(r, l.Parts); err != nil {
		return nil, nil, err
	}
	n := len(k) - len(r.Rest())
	return k[:n], k[n:], nil
}

// holds reports whether keys (an aggregate's values) hold value.
func holds(keys [][]byte, value []byte) bool {
	for _, k := range keys {
		if bytes.Equal(k, value) {
			return true
		}
	}
	return false
}

// resolve reads the block an index entry points at, in a read
// transaction. It returns false, and no error, for a stale entry: one whose
// block does not exist or does not hold the value (which only a write
// bypassing the repository can leave behind; Repair removes them).
func resolve[K, A any](c collection[K], tx *bbolt.Tx, b *bbolt.Bucket, op string, l indexTable[A], value, blockKey []byte, read func(*block, K) (*A, error)) (*A, bool, error) {
	r := runtime.NewKeyReader(blockKey)
	id, err := c.Keys.Read(r)
	if err != nil || !r.Done() {
		return nil, false, fmt.Errorf("index table %s: entry %x holds no %s block key: the index is corrupt", l.Name, blockKey, c.Aggregate)
	}
	blk := c.block(tx, b, op, id)
	if !blk.Exists() {
		return nil, false, nil
	}
	a, err := read(blk, id)
	if err != nil {
		return nil, false, c.fail(op, id, err)
	}
	if !holds(l.Keys(a), value) {
		return nil, false, nil
	}
	return a, true, nil
}

// GetBy reads the aggregate holding value of unique lookup rl, in one read
// transaction. It fails with runtime.ErrNotFound if none does.
func (s *Store[T, K]) GetBy(ctx context.Context, op string, rl *runtime.Lookup[T], value []byte) (*T, error) {
	l := s.boltLookup(rl)
	var out *T
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		var owner []byte
		if ib := tx.Bucket([]byte(l.Name)); ib != nil && b != nil {
			owner = ib.Get(value)
		}
		if owner != nil {
			a, ok, err := resolve(s.c, tx, b, op, l, value, owner, s.read)
			if err != nil || ok {
				out = a
				return err
			}
		}
		return runtime.FailAt(op, s.c.Aggregate, nil, l.Name+" "+FormatKey(value), runtime.ErrNotFound, nil)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetMany reads the blocks with the given keys in one read transaction.
// Keys with no block are absent from the map; repeated keys are read once.
func (s *Store[T, K]) GetMany(ctx context.Context, ids []K) (map[K]*T, error) {
	out := make(map[K]*T, len(ids))
	err := s.c.viewTx(ctx, "GetMany", nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if _, done := out[id]; done {
				continue
			}
			blk := s.c.block(tx, b, "GetMany", id)
			if !blk.Exists() {
				continue
			}
			item, err := s.read(blk, id)
			if err != nil {
				return s.c.fail("GetMany", id, err)
			}
			out[id] = item
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// counterKey is the key of the counter of scope in CountersBucket.
func (c collection[K]) counterKey(scope []byte) []byte {
	return append(runtime.AppendString(nil, c.Name), scope...)
}

// allocate gives id its counted part, in a write transaction: a zero one
// is the next number after the scope's counter whose block does not exist,
// a non-zero one raises the counter. Either way the counter ends at the
// largest number allocated or used, and numbers are never handed out twice.
func (c collection[K]) allocate(tx *bbolt.Tx, b *bbolt.Bucket, op string, id K) (K, error) {
	cb, err := tx.CreateBucketIfNotExists([]byte(CountersBucket))
	if err != nil {
		return id, err
	}
	scope, n := c.Counter.Split(id)
	key := c.counterKey(scope)
	last, err := readCounter(cb, key)
	if err != nil {
		return id, err
	}
	if n == 0 {
		// In the transaction: the next number whose block does not exist.
		n = last
		var got K
		if got, err = runtime.AllocateKey(context.Background(), runtime.Allocation[K]{
			Op: op, Agg: c.Aggregate, Counter: FormatKey(key),
			Next: func(context.Context) (int64, error) {
				if n == math.MaxInt64 {
					return 0, runtime.ErrOverflow
				}
				n++
				return n, nil
			},
			With:   func(n int64) K { return c.Counter.With(id, n) },
			Number: func(id K) int64 { _, n := c.Counter.Split(id); return n },
			Try:    func(_ context.Context, id K) (bool, error) { return c.block(tx, b, "", id).Exists(), nil },
		}); err != nil {
			return id, err
		}
		id = got
	}
	if n > last {
		if err := tooLarge(op, c.Aggregate, id, func() string { return "counter " + CountersBucket }, key, nil); err != nil {
			return id, err
		}
		if err := cb.Put(key, encodeInt(n)); err != nil {
			return id, err
		}
	}
	return id, nil
}

func readCounter(cb *bbolt.Bucket, key []byte) (int64, error) {
	if cb == nil {
		return 0, nil
	}
	v := cb.Get(key)
	if v == nil {
		return 0, nil
	}
	n, err := decodeInt(v)
	if err != nil {
		return 0, fmt.Errorf("counter %s: %w", FormatKey(key), err)
	}
	return n, nil
}

// Ensure creates the collection's bucket, the given index buckets and, for
// a collection with a Counter, the counters bucket, in one write
// transaction. Writes create them too when needed, and reads of a bucket
// that does not exist find nothing, so calling it is optional.
func (c collection[K]) Ensure(ctx context.Context, lookups ...string) error {
	if err := ctx.Err(); err != nil {
		return runtime.Fail("EnsureIndexes", c.Aggregate, nil, nil, err)
	}
	names := append([]string{c.Name}, lookups...)
	if c.Counter != nil {
		names = append(names, CountersBucket)
	}
	err := update(ctx, c.DB, func(tx *bbolt.Tx) error {
		for _, n := range names {
			if _, err := tx.CreateBucketIfNotExists([]byte(n)); err != nil {
				return fmt.Errorf("bucket %s: %w", n, err)
			}
		}
		return nil
	})
	if err != nil {
		return runtime.Fail("EnsureIndexes", c.Aggregate, nil, nil, err)
	}
	return nil
}
