// Package boltstore is the bbolt adapter of noamgen's runtime. Generated
// bbolt repositories call Open, which returns the Store of one aggregate
// class (runtime.Store, the contract every adapter implements, plus DB);
// the rest of the package's API names what the mapping stores, for tests
// and tools that read a database: BlockPrefix and Separator (the keys of a
// block), IndexBucket and CountersBucket (the other buckets), Encode and
// Decode (the values), FormatKey (an encoded key, for messages), and
// Written (the bytes and keys committed, for benchmarks). Inside, a Store
// runs each method as one transaction over a collection's bucket: a block
// (one block's key range) for its entries, indexTable for its lookups,
// counter for enumerable keys.
//
// Mapping (NoAM paper, section 7.1, Fig. 4 and 9): every entry of a block is
// one key-value pair, and a block is the group of pairs that share its major
// key. Each collection is a bucket named after it; inside the bucket a key
// is the block key encoded with the runtime's order-preserving key codec,
// the separator byte 0x01 (the paper's "-" between major and minor key), and
// then the entry key, one codec component per access path step:
//
//	block prefix                                  the block marker: the EAO root entry, or an empty value (ETF)
//	block prefix + "firstPlayer"                  an ETF entry
//	block prefix + "rounds"                       the element count of a partitioned field
//	block prefix + "rounds" + int(3)              the element rounds[3]
//	block prefix + "version"                      the version entry
//
// Key encodings are self-delimiting, so no block prefix is a prefix of
// another block's: every block is one contiguous key range that starts
// with its marker, blocks sort in block-key order, and elements sort by
// index. Values are BSON values (a type byte, then the value's bytes) made
// by the MongoDB driver's codec, so the same bson struct tags apply on
// every store.
//
// A repository method is one bbolt transaction: reading a block is one read
// transaction over its key range; writing it, with the version check and
// bump, is one write transaction, so that concurrent writers cannot lose
// updates (the paper's version-entry precaution).
//
// Index tables (lookups) are buckets of their own, named after the lookup
// ("Hotel.cityStars"), and counters of enumerable keys live in the bucket
// CountersBucket; both are written in the transaction of the block's write
// (lookup.go), with the index keys of runtime/index (index.IndexKey).
// Repair is runtime/index's (index.Engine.Repair), over the primitives of
// primitives.go; the engine's cross-item protocol never runs here.
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/internal/limit"
)

// Separator ends a block's major key (the encoded block key) in every key
// of the block.
const Separator = 0x01

// BlockPrefix returns the key prefix shared by every entry of the block
// whose encoded block key is blockKey. It is also the block marker's key.
func BlockPrefix(blockKey []byte) []byte {
	p := make([]byte, 0, len(blockKey)+1)
	return append(append(p, blockKey...), Separator)
}

// collection is one aggregate class stored in a bbolt database: the bucket
// Name, holding the blocks of aggregate type Aggregate whose block keys K
// are encoded with Keys.
type collection[K any] struct {
	DB        *bbolt.DB
	Name      string
	Aggregate string
	Keys      runtime.KeyCodec[K]
	// Counter is set for enumerable block keys (noam:"id,counter"): see
	// UpdateAlloc and ListScope.
	Counter *counter[K]
	// names interns the entry keys Scan reads (the field keys of the
	// aggregate), so that reading a block does not allocate them.
	names map[string]string
}

// View runs fn on block id in one read transaction. A failure returned by
// fn or by the store becomes a *runtime.Error of operation op on block id.
func (c collection[K]) View(ctx context.Context, op string, id K, fn func(*block) error) error {
	return c.viewTx(ctx, op, id, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		return fn(c.block(tx, b, op, id))
	})
}

// Update runs fn on block id in one write transaction, which commits only
// when fn returns nil and none of the block's writes failed: otherwise
// nothing fn wrote is kept. A failure becomes a *runtime.Error of operation
// op on block id.
func (c collection[K]) Update(ctx context.Context, op string, id K, fn func(*block) error) error {
	_, err := c.update(ctx, op, id, false, fn)
	return err
}

// UpdateAlloc is Update for Create and Put of a collection with a counter:
// when the counted part of id is 0, it is allocated in the transaction from
// the counter of id's scope (the next number whose block does not exist);
// otherwise the counter is raised to it if it is larger, so that later
// allocations and ListScope see it. It returns the block key fn wrote,
// which the caller stores into the aggregate only on success.
func (c collection[K]) UpdateAlloc(ctx context.Context, op string, id K, fn func(*block) error) (K, error) {
	return c.update(ctx, op, id, c.Counter != nil, fn)
}

func (c collection[K]) update(ctx context.Context, op string, id K, alloc bool, fn func(*block) error) (K, error) {
	if err := ctx.Err(); err != nil {
		return id, runtime.Fail(op, c.Aggregate, id, nil, err)
	}
	// Every key of a block starts with its marker's: a block key too long
	// for it is refused before the transaction.
	if err := tooLarge(op, c.Aggregate, id, func() string { return "block key" }, BlockPrefix(c.Keys.Bytes(id)), nil); err != nil {
		return id, err
	}
	var blk *block
	err := update(ctx, c.DB, func(tx *bbolt.Tx) error {
		if err := c.fenced(ctx, tx, op, id); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists([]byte(c.Name))
		if err != nil {
			return err
		}
		if alloc {
			if id, err = c.allocate(tx, b, op, id); err != nil {
				return err
			}
		}
		blk = c.block(tx, b, op, id)
		if err := fn(blk); err != nil {
			return err
		}
		return blk.err
	})
	if err != nil {
		return id, c.fail(op, id, err)
	}
	written.keys.Add(blk.keys)
	written.bytes.Add(blk.bytes)
	written.deletes.Add(blk.deletes)
	return id, nil
}

// view runs fn in one read transaction on the collection's bucket, which is
// nil while the collection has never been written.
func (c collection[K]) view(ctx context.Context, op string, id any, fn func(*bbolt.Bucket) error) error {
	return c.viewTx(ctx, op, id, func(tx *bbolt.Tx, b *bbolt.Bucket) error { return fn(b) })
}

// viewTx is view with the transaction, for reads of other buckets.
func (c collection[K]) viewTx(ctx context.Context, op string, id any, fn func(*bbolt.Tx, *bbolt.Bucket) error) error {
	if err := ctx.Err(); err != nil {
		return runtime.Fail(op, c.Aggregate, id, nil, err)
	}
	err := view(ctx, c.DB, func(tx *bbolt.Tx) error {
		return fn(tx, tx.Bucket([]byte(c.Name)))
	})
	if err != nil {
		return c.fail(op, id, err)
	}
	return nil
}

// fail makes err a *runtime.Error of op on block id, unless it is one.
func (c collection[K]) fail(op string, id any, err error) error {
	if re := (*runtime.Error)(nil); errors.As(err, &re) {
		return err
	}
	return runtime.Fail(op, c.Aggregate, id, nil, err)
}

func (c collection[K]) block(tx *bbolt.Tx, b *bbolt.Bucket, op string, id K) *block {
	key := c.Keys.Bytes(id)
	return &block{tx: tx, bucket: b, blockKey: key, prefix: BlockPrefix(key), op: op, agg: c.Aggregate, id: id, names: c.names}
}

// block is one block's key range inside a transaction, for one operation
// of a repository.
//
// Its write methods (Put, PutRoot, PutMarker, Append, SetAt, BumpVersion,
// Clear, and reindexTable of its lookup entries) record the first
// error, like bufio.Writer, and do nothing after it; Err returns it, and
// collection.Update does not commit a transaction whose block has one.
type block struct {
	tx       *bbolt.Tx
	bucket   *bbolt.Bucket // nil in a read transaction before the collection exists
	blockKey []byte        // the encoded block key
	prefix   []byte        // major key and separator: the marker's key
	op       string
	agg      string
	id       any
	err      error
	lookups  map[string]*bbolt.Bucket // index buckets opened by this write
	names    map[string]string        // Collection.names
	// held, when set, reports whether the block whose key is holder, read
	// in this transaction, holds value of the unique lookup name: a claim
	// naming a block that does not (it is gone, or no longer holds the
	// value) is free to this block.
	held func(name string, value, holder []byte) bool

	keys, bytes, deletes int64 // what this transaction wrote
}

// Fail returns the *runtime.Error of the block's operation, of kind kind
// (runtime.ErrNotFound, runtime.ErrDuplicate, ...).
func (b *block) Fail(kind error) error {
	return runtime.Fail(b.op, b.agg, b.id, kind, nil)
}

func (b *block) failAt(detail string, kind error) error {
	return runtime.FailAt(b.op, b.agg, b.id, detail, kind, nil)
}

// Err returns the first error of the block's writes.
func (b *block) Err() error { return b.err }

// Changed reports whether the transaction has written to the block.
func (b *block) Changed() bool { return b.keys > 0 || b.deletes > 0 }

// Exists reports whether the block exists, that is, has its marker.
func (b *block) Exists() bool {
	_, ok := b.marker()
	return ok
}

// marker reads the block marker: empty for an ETF block, the root entry of
// an EAO block; ok is false when the block does not exist.
func (b *block) marker() (v []byte, ok bool) {
	if b.bucket == nil {
		return nil, false
	}
	k, v := b.bucket.Cursor().Seek(b.prefix)
	return v, bytes.Equal(k, b.prefix)
}

// key returns a new key: the block prefix, the entry key's first step and
// the element index, if any (i >= 0).
func (b *block) key(entry string, i int) []byte {
	k := make([]byte, 0, len(b.prefix)+len(entry)+12)
	k = append(k, b.prefix...)
	k = runtime.AppendString(k, entry)
	if i >= 0 {
		k = runtime.AppendInt(k, int64(i))
	}
	return k
}

// fits records a runtime.ErrTooLarge naming bbolt's limit when bbolt
// would refuse the pair k, v (bbolt.MaxKeySize, bbolt.MaxValueSize), so
// that the transaction changes nothing; what names the key in the error
// ("entry name", "lookup Hotel.name"). It reports whether the pair fits.
func (b *block) fits(what func() string, k, v []byte) bool {
	if b.err == nil {
		b.err = tooLarge(b.op, b.agg, b.id, what, k, v)
	}
	return b.err == nil
}

// The limits fits checks: bbolt's; tests lower the value limit with
// limit.Set("boltstore.value", n).
var (
	maxKey   = bbolt.MaxKeySize
	maxValue = bbolt.MaxValueSize
)

func init() { limit.Register("boltstore.value", &maxValue) }

// tooLarge is the error of fits, nil when the pair fits.
func tooLarge(op, agg string, id any, what func() string, k, v []byte) error {
	switch {
	case len(k) > maxKey:
		return runtime.TooLarge(op, agg, id, fmt.Sprintf("%s: a key of %d bytes", what(), len(k)), fmt.Sprintf("bbolt's %d-byte key limit", maxKey))
	case len(v) > maxValue:
		return runtime.TooLarge(op, agg, id, fmt.Sprintf("%s: a value of %d bytes", what(), len(v)), fmt.Sprintf("bbolt's %d-byte value limit", maxValue))
	}
	return nil
}

// put stores one key-value pair. bbolt keeps both slices until the
// transaction ends, so neither may be reused.
func (b *block) put(k, v []byte) {
	if b.err != nil || !b.fits(func() string { return entryName(b.prefix, k) }, k, v) {
		return
	}
	if b.err = b.bucket.Put(k, v); b.err == nil {
		b.keys++
		b.bytes += int64(len(k) + len(v))
	}
}

func (b *block) putValue(k []byte, v any) {
	if b.err != nil {
		return
	}
	data, err := Encode(v)
	if err != nil {
		b.err = fmt.Errorf("encoding %s: %w", entryName(b.prefix, k), err)
		return
	}
	b.put(k, data)
}

// PutMarker writes the block marker of an ETF block: its key is the block
// prefix and its value is empty.
func (b *block) PutMarker() { b.put(bytes.Clone(b.prefix), []byte{}) }

// PutRoot writes the root entry of an EAO block, which is also its marker.
func (b *block) PutRoot(v any) { b.putValue(bytes.Clone(b.prefix), v) }

// Put writes the entry named entry (a top-level field key) with value v.
func (b *block) Put(entry string, v any) { b.putValue(b.key(entry, -1), v) }

// Append writes v as the next element of the partitioned field and bumps
// the element count: two keys, whatever the number of elements. It
// returns the new element's index.
func (b *block) Append(field string, v any) int {
	return b.appendAt(field, b.key(field, -1), b.count(field), v)
}

// appendAt is Append of element n, the next, where countKey is the key of
// the element count (as read, n).
func (b *block) appendAt(field string, countKey []byte, n int, v any) int {
	b.putValue(b.key(field, n), v)
	b.put(countKey, encodeInt(int64(n+1)))
	return n
}

// SetAt replaces element i of the partitioned field, which must exist:
// otherwise it records a runtime.ErrNotFound naming the element.
func (b *block) SetAt(field string, i int, v any) {
	if n := b.count(field); b.err == nil && (i < 0 || i >= n) {
		b.err = b.failAt(runtime.ElemKey(field, i), runtime.ErrNotFound)
	}
	b.putValue(b.key(field, i), v)
}

// count reads the element count of a partitioned field.
func (b *block) count(field string) int {
	n := b.readInt(b.key(field, -1))
	if b.err == nil && (n < 0 || n > int64(^uint(0)>>1)) {
		b.err = fmt.Errorf("%s has a bad element count %d", field, n)
	}
	return int(n)
}

// readInt reads an integer value, 0 if the key is missing.
func (b *block) readInt(k []byte) int64 {
	if b.err != nil || b.bucket == nil {
		return 0
	}
	v := b.bucket.Get(k)
	if v == nil {
		return 0
	}
	n, err := decodeInt(v)
	if err != nil {
		b.err = fmt.Errorf("%s: %w", entryName(b.prefix, k), err)
	}
	return n
}

// version reads the version entry named key; it is 0 if there is none.
func (b *block) version(key string) (int64, error) {
	n := b.readInt(b.key(key, -1))
	return n, b.err
}

// CheckVersion checks that the stored version entry named key is want,
// where a block that does not exist has version 0, and so has a block
// without a version entry (written before the aggregate had a version):
// otherwise it returns a runtime.ErrConflict.
func (b *block) CheckVersion(key string, want int64) error {
	var stored int64
	if b.Exists() {
		var err error
		if stored, err = b.version(key); err != nil {
			return err
		}
	}
	return runtime.CheckVersion(b.op, b.agg, b.id, b.Exists(), stored, want)
}

// BumpVersion adds one to the version entry named key.
func (b *block) BumpVersion(key string) {
	k := b.key(key, -1)
	n := b.readInt(k)
	b.put(k, encodeInt(n+1))
}

// Clear deletes every entry of the block, marker included.
func (b *block) Clear() {
	if b.err != nil {
		return
	}
	// Collect first: deleting under a bbolt cursor moves it.
	var keys [][]byte
	c := b.bucket.Cursor()
	for k, _ := c.Seek(b.prefix); k != nil && bytes.HasPrefix(k, b.prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if b.err = b.bucket.Delete(k); b.err != nil {
			return
		}
		b.deletes++
	}
}

// blockEntry is one key-value pair of a block, as block.Scan reads it.
type blockEntry struct {
	// Key is the first step of the entry key: a top-level field key, or ""
	// for the block marker (the root entry of an EAO block).
	Key string
	// Elem is set for the element Key[Index] of a partitioned field; the
	// entry Key of a partitioned field (Elem unset) holds its element count.
	Elem  bool
	Index int
	// Value is the stored value, valid until the Scan callback returns.
	Value []byte
}

func (e blockEntry) String() string {
	switch {
	case e.Elem:
		return runtime.ElemKey(e.Key, e.Index)
	case e.Key == "":
		return "ε"
	}
	return e.Key
}

// Decode decodes the value of a field or root entry into v, a pointer.
func (e blockEntry) Decode(v any) error {
	if e.Elem {
		return fmt.Errorf("entry %s: an element where a value was expected", e)
	}
	if err := Decode(e.Value, v); err != nil {
		return fmt.Errorf("entry %s: %w", e, err)
	}
	return nil
}

// Scan calls fn with every entry of the block in key order, the marker
// first. It fails with runtime.ErrNotFound if the block does not exist.
func (b *block) Scan(fn func(blockEntry) error) error {
	if b.bucket == nil {
		return b.Fail(runtime.ErrNotFound)
	}
	c := b.bucket.Cursor()
	k, v := c.Seek(b.prefix)
	if !bytes.Equal(k, b.prefix) {
		return b.Fail(runtime.ErrNotFound)
	}
	// Consecutive entries mostly share their first step (rounds, rounds[0],
	// rounds[1], ...): decode it once.
	var step []byte
	var key string
	for ; k != nil && bytes.HasPrefix(k, b.prefix); k, v = c.Next() {
		e := blockEntry{Value: v}
		if minor := k[len(b.prefix):]; len(minor) > 0 {
			if step == nil || !bytes.HasPrefix(minor, step) {
				name, n, ok := b.name(minor)
				if !ok {
					r := runtime.NewKeyReader(minor)
					s, err := r.String()
					if err != nil {
						return fmt.Errorf("entry key %x: %w", minor, err)
					}
					name, n = s, len(minor)-len(r.Rest())
				}
				key, step = name, minor[:n]
			}
			e.Key = key
			if rest := minor[len(step):]; len(rest) > 0 {
				r := runtime.NewKeyReader(rest)
				i, err := r.Int()
				if err != nil || !r.Done() || i < 0 || i > int64(^uint(0)>>1) {
					return fmt.Errorf("entry key %x: not a field or element key", minor)
				}
				e.Elem, e.Index = true, int(i)
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// name reads the first step of a minor key when it is one of the interned
// entry keys: the key and the length of its encoding.
func (b *block) name(minor []byte) (string, int, bool) {
	if len(b.names) == 0 || len(minor) < 2 || minor[0] != 0x02 {
		return "", 0, false
	}
	end := bytes.IndexByte(minor, 0)
	if end < 0 || (end+1 < len(minor) && minor[end+1] == 0xFF) {
		return "", 0, false // unterminated, or an escaped 0 byte
	}
	name, ok := b.names[string(minor[1:end])]
	return name, end + 1, ok
}

// ScanFields calls fn with the entries of the given top-level fields only,
// in the order given (each field once): a field's entry, or a partitioned
// field's element count and then its elements in index order; the field
// "" stands for the block marker, the root entry of an EAO block. Entries
// that do not exist are skipped, and so is every entry of a block that
// does not exist. Writes use it to read the old values of the fields their
// lookups index, without reading the rest of the block.
func (b *block) ScanFields(fn func(blockEntry) error, fields ...string) error {
	if b.bucket == nil {
		return nil
	}
	c := b.bucket.Cursor()
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f] {
			continue
		}
		seen[f] = true
		if f == "" {
			if v := b.bucket.Get(b.prefix); v != nil {
				if err := fn(blockEntry{Value: v}); err != nil {
					return err
				}
			}
			continue
		}
		start := b.key(f, -1)
		end := runtime.TupleEnd(start)
		for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
			e := blockEntry{Key: f, Value: v}
			if rest := k[len(start):]; len(rest) > 0 {
				r := runtime.NewKeyReader(rest)
				i, err := r.Int()
				if err != nil || !r.Done() || i < 0 || i > int64(^uint(0)>>1) {
					return fmt.Errorf("entry key %x: not a field or element key", k[len(b.prefix):])
				}
				e.Elem, e.Index = true, int(i)
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryName names the entry of key k in block prefix for messages.
func entryName(prefix, k []byte) string {
	minor := k[len(prefix):]
	if len(minor) == 0 {
		return "the root entry"
	}
	r := runtime.NewKeyReader(minor)
	name, err := r.String()
	if err != nil {
		return fmt.Sprintf("entry %x", minor)
	}
	if i, err := r.Int(); err == nil {
		return "entry " + runtime.ElemKey(name, int(i))
	}
	return "entry " + name
}

// readBlocks reads up to n blocks of bucket b from key from on (nil: the
// first), returning them, the block key of the last one, and whether more
// blocks follow. With desc it reads the blocks before key from (nil: from
// the last), in descending key order, with a reverse cursor.
func readBlocks[K, T any](c collection[K], b *bbolt.Bucket, op string, from []byte, n int, desc bool, read func(*block, K) (T, error)) (items []T, last K, more bool, err error) {
	if b == nil {
		return nil, last, false, nil
	}
	cur := b.Cursor()
	var k []byte
	switch {
	case desc:
		k, _ = lastBefore(cur, from)
	case from == nil:
		k, _ = cur.First()
	default:
		k, _ = cur.Seek(from)
	}
	items = make([]T, 0, min(n, 64))
	for k != nil {
		if len(items) == n {
			return items, last, true, nil
		}
		// The first key of a block is its marker: the block key and the
		// separator (in descending order, k is the block's last key).
		r := runtime.NewKeyReader(k)
		id, err := c.Keys.Read(r)
		if rest := r.Rest(); err != nil || len(rest) == 0 || rest[0] != Separator || !desc && len(rest) != 1 {
			return items, last, false, fmt.Errorf("key %x of bucket %s is no block marker: the collection is corrupt", k, c.Name)
		}
		item, err := read(c.block(b.Tx(), b, op, id), id)
		if err != nil {
			if errors.Is(err, runtime.ErrUnreadable) {
				// The listing reports it and resumes after it.
				return items, id, true, c.fail(op, id, err)
			}
			return items, last, false, c.fail(op, id, err)
		}
		items = append(items, item)
		last = id
		if desc {
			k, _ = lastBefore(cur, BlockPrefix(c.Keys.Bytes(last)))
		} else {
			k, _ = cur.Seek(runtime.PrefixEnd(BlockPrefix(c.Keys.Bytes(last))))
		}
	}
	return items, last, false, nil
}

// lastBefore moves cur to the last key before key from (nil: the last key
// of the bucket) and returns it with its value, nil when there is none.
func lastBefore(cur *bbolt.Cursor, from []byte) ([]byte, []byte) {
	if from != nil {
		if k, _ := cur.Seek(from); k != nil {
			return cur.Prev()
		}
	}
	return cur.Last()
}
