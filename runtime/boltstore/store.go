package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
)

// Store is the bbolt adapter of the store contract (runtime.Store) for
// aggregate class T with block keys K: every write is one bbolt write
// transaction that changes the block's entries, its index entries and its
// counter together, so a block and its lookups are always consistent.
type Store[T any, K comparable] struct {
	c       collection[K]
	d       *runtime.Desc[T, K]
	lookups []indexTable[T]
	// e runs Repair over the primitives; its lookups are s.lookups.
	e index.Engine[*T]
	// indexed are the entry keys the lookups read.
	indexed []string
	// wholeSlices are the non-partitioned fields holding slices, parts
	// the partitions: what another layout may store the other way
	// (layouts.go).
	wholeSlices map[string]bool
	parts       []*runtime.Field[T]
	// now is the repository's clock (runtime.WithClock), for ReadElems of
	// an expired block.
	now func() time.Time
}

var _ runtime.Store[struct{}, string] = (*Store[struct{}, string])(nil)

// Open returns the adapter of aggregate class d over db: bucket
// d.Collection, one index bucket per lookup ("Hotel.cityStars"). The
// adapter has no options of its own: of opts, which a generated
// constructor passes to every store's Open, it takes the clock
// (runtime.WithClock).
func Open[T any, K comparable](db *bbolt.DB, d *runtime.Desc[T, K], opts ...runtime.Option) *Store[T, K] {
	s := &Store[T, K]{d: d, c: collection[K]{DB: db, Name: d.Collection, Aggregate: d.Aggregate, Keys: d.Keys}, now: runtime.NowFunc(opts)}
	s.c.names = map[string]string{}
	for _, f := range d.Fields {
		s.c.names[f.Key] = f.Key
	}
	if d.Version != nil {
		s.c.names[d.Version.Key] = d.Version.Key
	}
	if d.Counter != nil {
		s.c.Counter = &counter[K]{Split: d.Counter.Split, With: d.Counter.With}
	}
	s.wholeSlices, s.parts = d.Slices(), d.Partitions()
	s.e = index.Engine[*T]{Agg: d.Aggregate, P: primitives[T, K]{s}, ID: func(b []byte) any {
		if id, err := s.id(b); err == nil {
			return id
		}
		return FormatKey(b)
	}}
	for _, l := range d.Lookups {
		s.lookups = append(s.lookups, indexTable[T]{Name: IndexBucket(d.Collection, l.Name), Unique: l.Unique, Parts: l.Parts, Keys: l.Keys})
		s.e.Lookups = append(s.e.Lookups, index.Lookup[*T]{Name: IndexBucket(d.Collection, l.Name), Unique: l.Unique, Values: l.Keys})
		for _, f := range l.Fields {
			if !slices.Contains(s.indexed, f) {
				s.indexed = append(s.indexed, f)
			}
		}
	}
	return s
}

// IndexBucket names the bucket of a lookup: "Hotel.cityStars".
func IndexBucket(collection, lookup string) string { return collection + "." + lookup }

// DB returns the database.
func (s *Store[T, K]) DB() *bbolt.DB { return s.c.DB }

// Caps declares what bbolt promises: its key and value limits, checked
// before every put (a write past them fails with runtime.ErrTooLarge and
// its transaction changes nothing).
func (s *Store[T, K]) Caps() runtime.Caps {
	return runtime.Caps{Name: "bolt", System: "bbolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: maxValue, MaxKeyBytes: maxKey, MaxIndexKeyBytes: maxKey, MaxDepth: bsonval.MaxDepth}
}

// valueDecoder decodes one stored value; one is reused for a whole block.
type valueDecoder struct{ b []byte }

func (d *valueDecoder) Decode(v any) error { return Decode(d.b, v) }

// readIndexed reads the entries the lookups read (nil if the block does
// not exist); fields narrows them, when given. A block of the other
// strategy (ETF under EAO, EAO under ETF) is read whole.
func (s *Store[T, K]) readIndexed(blk *block, fields ...string) (*T, error) {
	marker, ok := blk.marker()
	if !ok {
		return nil, nil
	}
	if (len(marker) > 0) != s.d.EAO {
		return s.read(blk, blk.id.(K))
	}
	if fields == nil {
		fields = s.indexed
	}
	scan := fields
	if s.d.EAO {
		// Under EAO the indexed fields live in the root entry.
		scan = make([]string, 0, len(fields)+1)
		for _, f := range fields {
			if g := s.d.Field(f); g != nil && g.Kind == runtime.KindPartition {
				scan = append(scan, f)
			} else if !slices.Contains(scan, "") {
				scan = append(scan, "")
			}
		}
	}
	r := s.reader(blk, blk.id.(K))
	defer r.release()
	if s.d.EAO {
		r.root = marker // where a partition without entries may be
	}
	if err := blk.ScanFields(r.entry, scan...); err != nil {
		return nil, err
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	return r.t, nil
}

// index moves the block's lookup entries from old's values to nw's.
func (s *Store[T, K]) index(blk *block, old, nw *T, only []*runtime.Lookup[T]) {
	s.checkHolders(blk)
	for i, l := range s.lookups {
		if only == nil || slices.Contains(only, s.d.Lookups[i]) {
			reindexTable(blk, l, old, nw)
		}
	}
}

// checkHolders makes the unique claims blk meets free when their holder
// does not hold the value (block.held).
func (s *Store[T, K]) checkHolders(blk *block) {
	blk.held = func(name string, value, holder []byte) bool { return s.holds(blk, name, value, holder) }
}

// holds reports whether block holder, read in the transaction of blk,
// holds value of the unique lookup whose bucket is name. A block that does
// not decode is taken to hold it (Repair reports it).
func (s *Store[T, K]) holds(blk *block, name string, value, holder []byte) bool {
	id, err := s.id(holder)
	if err != nil {
		return false // a claim naming no block of the collection
	}
	hb := s.c.block(blk.tx, blk.bucket, blk.op, id)
	if !hb.Exists() {
		return false
	}
	t, err := s.readIndexed(hb)
	if err != nil {
		return true
	}
	for _, l := range s.lookups {
		if l.Name == name {
			return holds(l.Keys(t), value)
		}
	}
	return true
}

func (s *Store[T, K]) putElems(blk *block, f *runtime.Field[T], t *T) {
	n := f.Len(t)
	for i := range n {
		blk.putValue(blk.key(f.Key, i), f.Elem(t, i))
	}
	blk.put(blk.key(f.Key, -1), encodeInt(int64(n)))
}

// Get reads block id in one read transaction.
func (s *Store[T, K]) Get(ctx context.Context, id K) (*T, error) {
	var out *T
	err := s.c.View(ctx, "Get", id, func(b *block) error {
		var err error
		out, err = s.read(b, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Create writes a new block in one transaction, allocating a zero counted
// id first.
func (s *Store[T, K]) Create(ctx context.Context, t *T) error {
	id, err := s.c.update(ctx, "Create", *s.d.ID(t), s.c.Counter != nil, func(blk *block) error { return s.create(blk, t, nil) })
	if err != nil {
		return err
	}
	*s.d.ID(t) = id
	s.d.SetVersion(t, 1)
	return nil
}

// create writes t into blk, which must not exist. check, when set, runs
// after the checks of the block's state and before the first write.
func (s *Store[T, K]) create(blk *block, t *T, check func(*block, *T)) error {
	if blk.Exists() {
		return blk.Fail(runtime.ErrDuplicate)
	}
	if check != nil {
		if check(blk, t); blk.err != nil {
			return blk.err
		}
	}
	s.writeNew(blk, t, 1)
	s.index(blk, nil, t, nil)
	return blk.Err()
}

// Put replaces block t whole (checking the version it holds) in one
// transaction: no entry of the old value survives.
func (s *Store[T, K]) Put(ctx context.Context, t *T) error {
	want := s.d.VersionOf(t)
	id, err := s.c.update(ctx, "Put", *s.d.ID(t), s.c.Counter != nil, func(blk *block) error { return s.put(blk, t, want, nil) })
	if err != nil {
		return err
	}
	*s.d.ID(t) = id
	s.d.SetVersion(t, want+1)
	return nil
}

// put makes blk hold t at version want+1, if it holds version want. check,
// when set, runs after the checks of the block's state and before the
// first write.
func (s *Store[T, K]) put(blk *block, t *T, want int64, check func(*block, *T)) error {
	if s.d.Version != nil {
		// Version 0 stands for a block that does not exist yet.
		if err := blk.CheckVersion(s.d.Version.Key, want); err != nil {
			return err
		}
	}
	var old *T
	if len(s.lookups) > 0 {
		var err error
		if old, err = s.readIndexed(blk); err != nil {
			return err
		}
	}
	if err := s.d.KeepCreated("Put", blk.id, t, s.created(blk)); err != nil {
		return err
	}
	if check != nil {
		if check(blk, t); blk.err != nil {
			return blk.err
		}
	}
	s.rewrite(blk, t, want+1)
	s.index(blk, old, t, nil)
	return blk.Err()
}

// created decodes the created entry block blk holds (nil: none, or no
// block), for runtime.Desc.KeepCreated.
func (s *Store[T, K]) created(blk *block) runtime.Decoder {
	if s.d.Created == nil || !blk.Exists() {
		return nil
	}
	if v := blk.bucket.Get(blk.key(s.d.Created.Key, -1)); v != nil {
		return &valueDecoder{b: v}
	}
	return nil
}

// Delete removes block id, its entries and its index entries.
func (s *Store[T, K]) Delete(ctx context.Context, id K) error {
	return s.delete(ctx, "Delete", id, nil)
}

// delete removes block id, its entries and its index entries in one
// transaction, as remove does.
func (s *Store[T, K]) delete(ctx context.Context, op string, id K, keep *deleteCond[T]) error {
	return s.c.Update(ctx, op, id, func(blk *block) error { return s.remove(blk, keep) })
}

// remove deletes blk, which must exist, and its index entries. With keep
// set, the block is read with the entries the lookups read and those keep
// names, and kept (the transaction rolled back) when keep(block) is true:
// remove then fails with errKept.
func (s *Store[T, K]) remove(blk *block, keep *deleteCond[T]) error {
	if !blk.Exists() {
		return blk.Fail(runtime.ErrNotFound)
	}
	if len(s.lookups) > 0 || keep != nil {
		fields := s.indexed
		if keep != nil {
			fields = append(slices.Clip(fields), keep.fields...)
		}
		old, err := s.readIndexed(blk, fields...)
		if err != nil {
			return err
		}
		if keep != nil && keep.keep(old) {
			return errKept
		}
		s.index(blk, old, nil, nil)
	}
	blk.Clear()
	return blk.Err()
}

// Update writes the changes of u in one transaction: the entries they
// name, the index entries of the lookups that read them, the version.
func (s *Store[T, K]) Update(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	return s.c.Update(ctx, op, id, func(blk *block) error {
		marker, ok := blk.marker()
		if !ok {
			return blk.Fail(runtime.ErrNotFound)
		}
		if u.IfVersion != 0 && s.d.Version != nil {
			if err := blk.CheckVersion(s.d.Version.Key, u.IfVersion); err != nil {
				return err
			}
		}
		// A block of another layout is first rewritten in this one. The
		// root entry of an old block may hold any field (a partition
		// it kept whole): a write of it checks them all.
		fields := u.Keys()
		if slices.ContainsFunc(u.Changes, func(c runtime.Change[T]) bool { return c.Field.Kind == runtime.KindRoot }) {
			fields = nil
		}
		if err := s.current(blk, marker, fields); err != nil {
			return err
		}
		if ls := s.d.LookupsOf(u.Keys()...); len(ls) > 0 {
			if err := s.reindex(blk, ls, func(nw *T, read []string) error {
				for _, c := range u.Changes {
					if !writesAny(c, read) {
						// Not read for the lookups (a partition no lookup
						// reads is not in nw): the loop below writes it.
						continue
					}
					if err := c.Apply(nw); err != nil {
						return s.changeErr(blk, c, err)
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		// A failed write (a missing element, a unique value held by another
		// block) rolls the whole transaction back: nothing of u is written.
		for _, c := range u.Changes {
			switch {
			case c.Add:
				s.add(blk, c)
			case c.Elem:
				blk.SetAt(c.Field.Key, c.Index, c.Value)
			case c.Field.Kind == runtime.KindRoot:
				blk.putValue(bytes.Clone(blk.prefix), c.Value)
			case c.Field.Kind == runtime.KindPartition:
				s.replaceElems(blk, c)
			default:
				blk.Put(c.Field.Key, c.Value)
			}
		}
		// An update that writes nothing only checks: the version stays.
		if blk.Changed() && s.d.Version != nil {
			blk.BumpVersion(s.d.Version.Key)
		}
		return blk.Err()
	})
}

// add applies add change c in the write transaction: it reads the stored
// value (none: 0), checks the sum against the field's range and writes it
// encoded as a Set of the field would be.
func (s *Store[T, K]) add(blk *block, c runtime.Change[T]) {
	if blk.err != nil {
		return
	}
	k := blk.key(c.Field.Key, -1)
	tmp := new(T)
	if v := blk.bucket.Get(k); v != nil {
		if err := Decode(v, c.Field.Addr(tmp)); err != nil {
			blk.err = runtime.FailAt(blk.op, blk.agg, blk.id, "entry "+c.Field.Key, runtime.ErrUnreadable, err)
			return
		}
	}
	sum, ok := c.Sum(c.Field.Int(tmp))
	if !ok {
		blk.err = runtime.OutOfRange(blk.op, blk.agg, blk.id, c)
		return
	}
	c.Field.SetInt(tmp, sum)
	blk.putValue(k, c.Field.Value(tmp))
	if c.Result != nil {
		*c.Result = sum
	}
}

func (s *Store[T, K]) changeErr(blk *block, c runtime.Change[T], err error) error {
	if err == runtime.ErrNotFound {
		return blk.failAt(c.Entry(), runtime.ErrNotFound)
	}
	return err
}

// replaceElems writes a whole partition: the old elements go.
func (s *Store[T, K]) replaceElems(blk *block, c runtime.Change[T]) {
	if blk.err != nil {
		return
	}
	start := blk.key(c.Field.Key, -1)
	end := runtime.TupleEnd(start)
	var keys [][]byte
	cur := blk.bucket.Cursor()
	for k, _ := cur.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, _ = cur.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if blk.err = blk.bucket.Delete(k); blk.err != nil {
			return
		}
		blk.deletes++
	}
	t := new(T)
	if err := c.Field.Assign(t, c.Value); err != nil {
		blk.err = err
		return
	}
	s.putElems(blk, c.Field, t)
}

// writesAny reports whether change c writes one of the top-level fields.
func writesAny[T any](c runtime.Change[T], fields []string) bool {
	if c.Field.Kind == runtime.KindRoot {
		return slices.ContainsFunc(c.Field.Fields, func(f string) bool { return slices.Contains(fields, f) })
	}
	return slices.Contains(fields, c.Field.Key)
}

// reindex reads the fields lookups ls read, applies change to a copy
// holding only those fields (it gets their keys) and moves the index
// entries of ls from the old values to the new ones.
func (s *Store[T, K]) reindex(blk *block, ls []*runtime.Lookup[T], change func(nw *T, read []string) error) error {
	var fields []string
	for _, l := range ls {
		for _, f := range l.Fields {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	old, err := s.readIndexed(blk, fields...)
	if err != nil {
		return err
	}
	nw := *old
	// Partitions are copied, so that changing an element of nw does not
	// change old.
	for _, f := range s.d.Partitions() {
		if slices.Contains(fields, f.Key) {
			n := f.Len(old)
			f.Reset(&nw, n+1)
			for i := range n {
				_ = f.AppendValue(&nw, f.Elem(old, i))
			}
		}
	}
	if err := change(&nw, fields); err != nil {
		return err
	}
	s.index(blk, old, &nw, ls)
	return nil
}

// Append writes elem as the next element of partition f and bumps the
// element count (and the version), and writes the fields of with (the
// updated timestamp): two or three keys and those, whatever the size.
func (s *Store[T, K]) Append(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with ...runtime.Change[T]) (int, error) {
	var i int
	err := s.c.Update(ctx, op, id, func(blk *block) error {
		marker, ok := blk.marker()
		if !ok {
			return blk.Fail(runtime.ErrNotFound)
		}
		// A block of another layout (its strategy, or the partition
		// stored whole) is first rewritten in this one.
		if err := s.current(blk, marker, []string{f.Key}); err != nil {
			return err
		}
		countKey := blk.key(f.Key, -1)
		n := s.elemCount(blk, countKey)
		if ls := s.d.LookupsOf(f.Key); len(ls) > 0 {
			if err := s.reindex(blk, ls, func(nw *T, _ []string) error { return f.AppendValue(nw, elem) }); err != nil {
				return err
			}
		}
		i = blk.appendAt(f.Key, countKey, n, elem)
		for _, c := range with {
			blk.Put(c.Field.Key, c.Value)
		}
		if s.d.Version != nil {
			blk.BumpVersion(s.d.Version.Key)
		}
		return blk.Err()
	})
	if err != nil {
		return 0, err
	}
	return i, nil
}

// elemCount reads the element count of a partition of block blk at
// countKey (0 when there is none).
func (s *Store[T, K]) elemCount(blk *block, countKey []byte) int {
	v := blk.bucket.Get(countKey)
	if v == nil {
		return 0
	}
	c, err := decodeInt(v)
	if err == nil && (c < 0 || c > int64(^uint(0)>>1)) {
		err = fmt.Errorf("bad element count %d", c)
	}
	if err != nil && blk.err == nil {
		blk.err = fmt.Errorf("%s: %w", entryName(blk.prefix, countKey), err)
	}
	return int(c)
}

// ReadElems reads elements of partition f of block id from index start
// on, seeking to the first one: the other entries are not read. With
// desc it reads the count, then down from index start with a reverse
// cursor.
func (s *Store[T, K]) ReadElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	var more bool
	err := s.c.View(ctx, op, id, func(b *block) error {
		marker, ok := b.marker()
		if !ok {
			return b.Fail(runtime.ErrNotFound)
		}
		if expired, err := s.expired(b); err != nil || expired {
			return cmp.Or(err, b.failAt("(expired)", runtime.ErrNotFound))
		}
		fieldKey := b.key(f.Key, -1)
		cur := b.bucket.Cursor()
		var dec valueDecoder
		read := 0
		// i is the index of the next element, step where the one after is.
		i, step := start, 1
		k, v := cur.Seek(b.key(f.Key, start))
		if desc {
			if c := b.bucket.Get(fieldKey); c == nil || !isCount(c) {
				k = nil // no count: the partition is stored whole, or absent
			} else if count := s.elemCount(b, fieldKey); count == 0 {
				return b.err
			} else {
				i, step = count-1, -1
				if start >= 0 && start < count {
					i = start
				}
				k, v = cur.Seek(b.key(f.Key, i))
			}
		}
		for ; k != nil && bytes.HasPrefix(k, fieldKey) && i >= 0; k, v = next(cur, step) {
			if read == n {
				more = true
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			r := runtime.NewKeyReader(k[len(fieldKey):])
			if x, err := r.Int(); err != nil || !r.Done() || x != int64(i) {
				return fmt.Errorf("element key %x: want %s: the block is corrupt", k, f.ElemKey(i))
			}
			dec.b = v
			if err := fn(i, &dec); err != nil {
				return err
			}
			read++
			i += step
		}
		if read == 0 {
			// None: the block may hold the partition whole, as a layout
			// without it wrote it.
			var err error
			more, err = s.readWhole(b, marker, f, start, n, desc, fn)
			return err
		}
		return nil
	})
	return more, err
}

// next moves cur one key forward (step 1) or back (-1).
func next(cur *bbolt.Cursor, step int) ([]byte, []byte) {
	if step < 0 {
		return cur.Prev()
	}
	return cur.Next()
}

// readWhole is ReadElems of a block that holds partition f whole (its
// entry, or under EAO a member of its root entry): the slice is decoded
// and its elements from start on (desc: down from start) are passed to fn
// one by one.
func (s *Store[T, K]) readWhole(b *block, marker []byte, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	t := new(T)
	var dec valueDecoder
	switch v := b.bucket.Get(b.key(f.Key, -1)); {
	case v != nil && !isCount(v):
		dec.b = v
		if err := f.Decode(t, &dec); err != nil {
			return false, runtime.Unreadable(b.op, s.d.Aggregate, b.id, err)
		}
	case v == nil && len(marker) > 0:
		if err := s.members(t, marker, f, &dec); err != nil {
			return false, runtime.Unreadable(b.op, s.d.Aggregate, b.id, err)
		}
	default:
		return false, nil
	}
	idx, more := runtime.ElemWindow(f.Len(t), start, n, desc)
	for _, i := range idx {
		v, err := Encode(f.Elem(t, i))
		if err != nil {
			return false, err
		}
		dec.b = v
		if err := fn(i, &dec); err != nil {
			return false, err
		}
	}
	return more, nil
}

// ReadBlocks reads up to n blocks in block-key order after the block whose
// encoded key is after (desc: before it, with a reverse cursor), in one
// read transaction.
func (s *Store[T, K]) ReadBlocks(ctx context.Context, op string, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	var from []byte
	if after != nil {
		r := runtime.NewKeyReader(after)
		if _, err := s.d.Keys.Read(r); err != nil || !r.Done() {
			return nil, nil, false, fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
		}
		from = runtime.PrefixEnd(BlockPrefix(after))
		if desc {
			from = BlockPrefix(after)
		}
	}
	var items []*T
	var last K
	var more bool
	err := s.c.view(ctx, op, nil, func(b *bbolt.Bucket) error {
		var err error
		items, last, more, err = readBlocks(s.c, b, op, from, n, desc, s.read)
		return err
	})
	if err != nil {
		if errors.Is(err, runtime.ErrUnreadable) {
			return items, s.d.Keys.Bytes(last), more, err
		}
		return nil, nil, false, err
	}
	return items, s.d.Keys.Bytes(last), more, nil
}

// ReadLookup reads aggregates through lookup l in key range rng after the
// index key after (desc: before it, with a reverse cursor), in one read
// transaction; stale entries are skipped.
func (s *Store[T, K]) ReadLookup(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	bl := s.boltLookup(l)
	var items []*T
	var last []byte
	var more bool
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		ib := tx.Bucket([]byte(bl.Name))
		if ib == nil || b == nil {
			return nil
		}
		cur := ib.Cursor()
		first, next := func() ([]byte, []byte) {
			if after != nil {
				return cur.Seek(append(bytes.Clone(after), 0))
			}
			return cur.Seek(rng.From)
		}, cur.Next
		in := func(k []byte) bool { return bytes.Compare(k, rng.To) < 0 }
		if desc {
			first = func() ([]byte, []byte) {
				end := rng.To
				if after != nil {
					end = after
				}
				return lastBefore(cur, end)
			}
			next, in = cur.Prev, func(k []byte) bool { return bytes.Compare(k, rng.From) >= 0 }
		}
		for k, v := first(); k != nil && in(k); k, v = next() {
			if len(items) == n {
				more = true
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			value, blockKey, err := entry(bl, k, v)
			if err != nil {
				return fmt.Errorf("index table %s: entry %x: %w", bl.Name, k, err)
			}
			a, ok, err := resolve(s.c, tx, b, op, bl, value, blockKey, s.read)
			if err != nil {
				if errors.Is(err, runtime.ErrUnreadable) {
					last, more = bytes.Clone(k), true // resume after it
				}
				return err
			}
			if ok {
				items = append(items, a)
				last = bytes.Clone(k)
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, runtime.ErrUnreadable) {
			return items, last, more, err
		}
		return nil, nil, false, err
	}
	return items, last, more, nil
}

func (s *Store[T, K]) boltLookup(l *runtime.Lookup[T]) indexTable[T] {
	for i, x := range s.d.Lookups {
		if x == l {
			return s.lookups[i]
		}
	}
	panic("boltstore: " + s.d.Aggregate + " has no lookup " + l.Name)
}

// ReadScope reads blocks of the counter scope of key scope, in number
// order after number after (desc: in descending order below number
// after, 0: from the highest, with a reverse cursor).
func (s *Store[T, K]) ReadScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) ([]*T, int64, bool, error) {
	prefix, _ := s.c.Counter.Split(scope)
	var items []*T
	var last int64
	var more bool
	err := s.c.viewTx(ctx, op, nil, func(tx *bbolt.Tx, b *bbolt.Bucket) error {
		if b == nil {
			return nil
		}
		// The blocks of one scope are one key range, in number order: seek
		// past the gaps instead of probing number by number.
		cur := b.Cursor()
		marker := func(num int64) []byte { return BlockPrefix(s.d.Keys.Bytes(s.c.Counter.With(scope, num))) }
		first := func() []byte { k, _ := cur.Seek(marker(after + 1)); return k }
		next := func() []byte { k, _ := cur.Seek(runtime.PrefixEnd(marker(last))); return k }
		if desc {
			// From the scope's last key down; k is then a block's last key.
			first = func() []byte {
				end := runtime.TupleEnd(prefix)
				if after > 0 {
					end = marker(after)
				}
				k, _ := lastBefore(cur, end)
				return k
			}
			next = func() []byte { k, _ := lastBefore(cur, marker(last)); return k }
		}
		for k := first(); k != nil; k = next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			r := runtime.NewKeyReader(k)
			id, err := s.d.Keys.Read(r)
			if rest := r.Rest(); err != nil || len(rest) == 0 || rest[0] != Separator || !desc && len(rest) != 1 {
				return fmt.Errorf("key %x of bucket %s is no block marker: the collection is corrupt", k, s.c.Name)
			}
			sc, num := s.c.Counter.Split(id)
			if !bytes.Equal(sc, prefix) || num < 1 {
				return nil
			}
			if len(items) == n {
				more = true
				return nil
			}
			item, err := s.read(s.c.block(tx, b, op, id), id)
			if err != nil {
				if errors.Is(err, runtime.ErrUnreadable) {
					last, more = num, true // resume after it
				}
				return s.c.fail(op, id, err)
			}
			items = append(items, item)
			last = num
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, runtime.ErrUnreadable) {
			return items, last, more, err
		}
		return nil, 0, false, err
	}
	return items, last, more, nil
}

// Repair rebuilds the lookups' index buckets from the blocks
// (index.Engine.Repair), a page of blocks or entries per transaction.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	return s.e.Repair(ctx)
}

// id decodes an encoded block key.
func (s *Store[T, K]) id(b []byte) (K, error) {
	r := runtime.NewKeyReader(b)
	id, err := s.d.Keys.Read(r)
	if err == nil && !r.Done() {
		err = fmt.Errorf("block key %x: trailing bytes", b)
	}
	return id, err
}

// Ensure creates the buckets: the collection's, the index buckets and the
// counters.
func (s *Store[T, K]) Ensure(ctx context.Context) error {
	names := make([]string, len(s.lookups))
	for i, l := range s.lookups {
		names[i] = l.Name
	}
	return s.c.Ensure(ctx, names...)
}

// Layout lists the entries of block id as the bucket holds them: the pairs
// under the block's prefix, by entry key ("" for the root entry at the
// prefix itself; the empty marker of an ETF block is no entry).
func (s *Store[T, K]) Layout(ctx context.Context, id K) ([]string, error) {
	var out []string
	err := s.c.View(ctx, "Layout", id, func(b *block) error {
		if !b.Exists() {
			return b.Fail(runtime.ErrNotFound)
		}
		return b.Scan(func(e blockEntry) error {
			switch {
			case e.Key == "" && len(e.Value) == 0:
			case e.Key == "":
				out = append(out, "")
			default:
				out = append(out, e.String())
			}
			return nil
		})
	})
	return out, err
}
