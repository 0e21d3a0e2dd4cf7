package mongostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// Store is the MongoDB adapter of the store contract (runtime.Store) for
// aggregate class T with block keys K (paper Fig. 10): one document per
// block, _id the block key, one top-level field per entry field, arrays for
// partitioned fields with their lengths in _len. Writes that change no
// looked-up field are single commands; the others go through the lookup
// protocol of runtime/index (see the package documentation).
type Store[T any, K comparable] struct {
	d        *runtime.Desc[T, K]
	coll     *mongo.Collection
	counters *mongo.Collection
	// lm places the lookups (mapping.go): set by Open from the options,
	// replaced once by the mapping the collection's schema record holds or
	// the first EnsureIndexes decides.
	lm  atomic.Pointer[lookupMap[T, K]]
	cfg config
	// mapped is set once the mapping is the collection's (recorded, or
	// decided by this Store's EnsureIndexes); settled once the schema
	// record was read for it.
	mapped, settled atomic.Bool
	// recorded: the mapping is known to be in the schema record document.
	recorded atomic.Bool
	mapMu    sync.Mutex
	// noPartial: unique native indexes are made without partial filters.
	noPartial bool
	// ready is set once the native unique indexes are known to exist
	// (see checkReady).
	ready atomic.Bool
	// idAddr and addrs (one per d.Fields) say which values the document
	// encoder reads through their addresses (see byAddr).
	idAddr bool
	addrs  []bool
	// sliceKeys are the keys of the fields written whole that are
	// slices: a write of one removes the count a partitioned layout kept
	// of it (see unsetLens).
	sliceKeys []string
	// now is the repository's clock (runtime.WithClock), for ReadElems of
	// an expired block.
	now func() time.Time
}

var _ runtime.Store[struct{}, string] = (*Store[struct{}, string])(nil)

// Round trips: every command the adapter sends through the driver is
// counted where it is sent (runtime.RoundTrip; a made client takes no
// command monitor). A cursor's further batches (getMore) are not counted:
// the adapter sizes a listing's batch to read its page in one.

// Option changes how Open maps an aggregate's lookups. It is a
// runtime.Option, so that a generated constructor takes it in the one
// list of options it passes to Open and to runtime.NewRepo.
type Option func(*config)

// RepoOption makes Option a runtime.Option.
func (Option) RepoOption() {}

type config struct {
	tables, uniqueTables, noPartial bool
}

// IndexTables keeps every lookup in an index table, as noam:"lookup,table"
// does for one: for a deployment that shards the collection, and for tests
// of the index-table protocol.
func IndexTables() Option { return func(c *config) { c.tables = true } }

// UniqueTables keeps every unique lookup in an index table: for servers
// without partial indexes or without per-element unique multikey indexes
// (FerretDB v1), where a native unique index cannot follow the zero-value
// rule or the uniqueness of slice elements.
func UniqueTables() Option { return func(c *config) { c.uniqueTables = true } }

// NoPartialIndexes makes unique native indexes without the partial filter
// that leaves zero values out, for servers without partial indexes
// (FerretDB v1): a zero value then counts like any other, so that a second
// aggregate holding it is refused with runtime.ErrDuplicate (GetBy of a zero
// value still finds nothing).
func NoPartialIndexes() Option { return func(c *config) { c.noPartial = true } }

// Open returns the adapter of aggregate class d over db's collection
// d.Collection (and the index tables of the lookups that keep them).
// Of opts it keeps its own (Option) and, of the runtime's, the clock
// (runtime.WithClock).
func Open[T any, K comparable](db *mongo.Database, d *runtime.Desc[T, K], opts ...runtime.Option) *Store[T, K] {
	var c config
	for _, o := range opts {
		if o, ok := o.(Option); ok {
			o(&c)
		}
	}
	s := &Store[T, K]{d: d, coll: Collection(db, d.Collection), cfg: c, noPartial: c.noPartial, now: runtime.NowFunc(opts)}
	s.initAddrs()
	if d.Counter != nil {
		s.counters = Counters(db)
	}
	name := c.explicit()
	if name == "" {
		name = MappingNative // until the record or EnsureIndexes decides
	}
	s.lm.Store(s.mapLookups(name))
	return s
}

// mapLookups places the lookups under mapping name (MappingNative,
// MappingUniqueTables, MappingIndexTables).
func (s *Store[T, K]) mapLookups(name string) *lookupMap[T, K] {
	m := &lookupMap[T, K]{name: name, tables: map[string]bool{}}
	c := config{tables: name == MappingIndexTables, uniqueTables: name == MappingUniqueTables}
	var fields []string
	var ls []*runtime.Lookup[T]
	for _, l := range s.d.Lookups {
		if !tableLookup(l, c) {
			m.native = append(m.native, nativeLookup[T]{l: l, index: IndexName(l.Name)})
			continue
		}
		m.tables[l.Name] = true
		ls = append(ls, l)
		for _, f := range l.Fields {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	if len(ls) > 0 {
		m.x = newIndexed(s, ls, fields)
	}
	return m
}

// tableLookup reports whether lookup l keeps an index table under c.
func tableLookup[T any](l *runtime.Lookup[T], c config) bool {
	multi := false
	for _, p := range l.Paths {
		multi = multi || p.Multi
	}
	return l.Table || c.tables || (c.uniqueTables && l.Unique) || len(l.Paths) == 0 || (multi && len(l.Paths) > 1)
}

// Native reports whether lookup name is served by a native index.
func (s *Store[T, K]) Native(name string) bool {
	for _, n := range s.m().native {
		if n.l.Name == name {
			return true
		}
	}
	return false
}

// tableReads reports whether a write of the given entry keys can change an
// index-table lookup.
func (s *Store[T, K]) tableReads(keys ...string) bool {
	if s.m().x == nil {
		return false
	}
	for _, l := range s.d.LookupsOf(keys...) {
		if s.m().tables[l.Name] {
			return true
		}
	}
	return false
}

// nativeReads reports whether a write of the given entry keys can change a
// native lookup.
func (s *Store[T, K]) nativeReads(keys ...string) bool {
	for _, n := range s.m().native {
		for _, k := range keys {
			if n.l.Reads(k) {
				return true
			}
		}
	}
	return false
}

// Collection returns the aggregate collection.
func (s *Store[T, K]) Collection() *mongo.Collection { return s.coll }

// Caps declares what MongoDB promises to this adapter.
func (s *Store[T, K]) Caps() runtime.Caps {
	// A nil store (explain asks one) answers for the index-table mapping.
	return runtime.Caps{Name: "mongo", System: "mongodb", OrderedScan: true, AtomicLookups: s != nil && s.m().x == nil, MaxValueBytes: 16 << 20, MaxDepth: MaxDepth}
}

// MaxDepth is the deepest nesting of documents and arrays of an entry's
// value (runtime.Caps.MaxDepth): MongoDB stores documents nested at most
// 100 levels, the document itself included, and an element of a
// partition lies in the document's array (100 - 2). Deeper writes fail
// with runtime.ErrTooLarge before anything is sent, also on FerretDB.
const MaxDepth = 98

// rawDecoder decodes one document field; one is reused per document.
type rawDecoder struct{ v bson.RawValue }

// Decode decodes the field into v with bsonval.DecodeValue (its direct
// reads of strings, int64s and booleans, its fast decoder, or the
// driver's, which allocates a reader per call).
func (d *rawDecoder) Decode(v any) error {
	return bsonval.DecodeValue(d.v.Type, d.v.Value, v)
}

// decode turns a document into an aggregate through the descriptor's
// accessors; hidden fields and fields of removed entries are skipped.
func (s *Store[T, K]) decode(raw bson.Raw) (*T, error) {
	t := new(T)
	elems, err := raw.Elements()
	if err != nil {
		return nil, err
	}
	var dec rawDecoder
	for _, e := range elems {
		key := e.Key()
		dec.v = e.Value()
		switch key {
		case "_id":
			if err := dec.Decode(s.d.ID(t)); err != nil {
				return nil, fmt.Errorf("_id: %w", err)
			}
			continue
		case LenKey, SeqKey, IncKey:
			continue
		}
		f := s.d.Field(key)
		if f == nil {
			continue
		}
		if err := f.Decode(t, &dec); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// doc is the document of block t with the given version and stamp.
func (s *Store[T, K]) doc(t *T, version int64, stamp Stamp) bson.D {
	d := make(bson.D, 0, len(s.d.Fields)+5)
	d = append(d, bson.E{Key: "_id", Value: *s.d.ID(t)})
	var lens bson.D
	for _, f := range s.d.Fields {
		d = append(d, bson.E{Key: f.Key, Value: f.Value(t)})
		if f.Kind == runtime.KindPartition {
			lens = append(lens, bson.E{Key: f.Key, Value: f.Len(t)})
		}
	}
	if s.d.Version != nil {
		d = append(d, bson.E{Key: s.d.Version.Key, Value: version})
	}
	if lens != nil {
		d = append(d, bson.E{Key: LenKey, Value: lens})
	}
	if stamp.Seq != 0 {
		d = append(d, bson.E{Key: SeqKey, Value: stamp.Seq})
	}
	if stamp.Inc != 0 {
		d = append(d, bson.E{Key: IncKey, Value: stamp.Inc})
	}
	return d
}

// initAddrs sets idAddr and addrs from the descriptor.
func (s *Store[T, K]) initAddrs() {
	s.idAddr = byAddr(reflect.TypeFor[K]())
	s.addrs = make([]bool, len(s.d.Fields))
	for i, f := range s.d.Fields {
		if p := f.Addr(new(T)); p != nil {
			t := reflect.TypeOf(p).Elem()
			s.addrs[i] = byAddr(t)
			if f.Slice() {
				s.sliceKeys = append(s.sliceKeys, f.Key)
			}
		}
	}
}

// appendDoc appends the document of block t with the given version (no
// stamp) to w: the bytes the driver makes of doc(t, version, Stamp{}).
func (s *Store[T, K]) appendDoc(w *docBuf, t *T, version int64) error {
	i := w.start()
	var err error
	if s.idAddr {
		err = w.addr("_id", s.d.ID(t))
	} else {
		err = w.value(pathOf("_id"), *s.d.ID(t))
	}
	if err != nil {
		return err
	}
	parts := false
	for j, f := range s.d.Fields {
		if s.addrs[j] {
			err = w.addr(f.Key, f.Addr(t))
		} else {
			err = w.value(pathOf(f.Key), f.Value(t))
		}
		if err != nil {
			return err
		}
		parts = parts || f.Kind == runtime.KindPartition
	}
	if s.d.Version != nil {
		w.int64(pathOf(s.d.Version.Key), version)
	}
	if parts {
		l := w.startDoc(pathOf(LenKey))
		for _, f := range s.d.Fields {
			if f.Kind == runtime.KindPartition {
				w.int(pathOf(f.Key), f.Len(t))
			}
		}
		w.end(l)
	}
	w.end(i)
	return nil
}

// encodeDoc builds the document of block t with the given version in a
// buffer from the pool, which the caller releases once the driver call it
// gives the document to has returned. A document over MaxDocumentBytes
// fails with runtime.ErrTooLarge.
func (s *Store[T, K]) encodeDoc(op string, id K, t *T, version int64) (*docBuf, bson.Raw, error) {
	w := getDocBuf()
	if err := s.appendDoc(w, t, version); err != nil {
		w.release()
		return nil, nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	if n := len(w.b); n > MaxDocumentBytes {
		w.release()
		return nil, nil, tooLarge(op, s.d.Aggregate, id, n, nil)
	}
	return w, bson.Raw(w.b), nil
}

// appendID appends element k with block key id.
func appendID[K any](w *docBuf, k string, id K) error {
	// The usual key types are appended without boxing id.
	switch x := any(id).(type) {
	case string:
		w.string(pathOf(k), x)
		return nil
	case int64:
		w.int64(pathOf(k), x)
		return nil
	}
	return w.value(pathOf(k), id)
}

func (s *Store[T, K]) fail(op string, id any, err error) error {
	return Err(op, s.d.Aggregate, id, err)
}

// Get reads block id with one find.
func (s *Store[T, K]) Get(ctx context.Context, id K) (*T, error) {
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOne(ctx, ByID(id)).Raw()
	if err != nil {
		return nil, s.fail("Get", id, err)
	}
	t, err := s.decode(raw)
	if err != nil {
		return nil, runtime.Unreadable("Get", s.d.Aggregate, id, err)
	}
	return t, nil
}

// idOf reads the block key of a document (the zero key if it has none
// that decodes).
func (s *Store[T, K]) idOf(raw bson.Raw) K {
	var id K
	if rv, err := raw.LookupErr("_id"); err == nil {
		_ = bsonval.DecodeValue(rv.Type, rv.Value, &id)
	}
	return id
}

// GetMany reads the blocks with the given keys with one find.
func (s *Store[T, K]) GetMany(ctx context.Context, ids []K) (map[K]*T, error) {
	out := make(map[K]*T, len(ids))
	in := distinctIDs(ids)
	if len(in) == 0 {
		return out, nil
	}
	// Decoded here, not by getMany, so that a document that does not
	// decode is an error rather than a partial aggregate.
	items, err := s.find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, options.Find().SetBatchSize(oneBatch(len(in))))
	if err != nil {
		return nil, runtime.Fail("GetMany", s.d.Aggregate, nil, nil, err)
	}
	for _, t := range items {
		out[*s.d.ID(t)] = t
	}
	return out, nil
}

// convert decodes a document for getMany; a document that does not decode
// yields what did decode (the protocol reads only lookup values from it).
func (s *Store[T, K]) convert(raw *bson.Raw) *T {
	t, err := s.decode(*raw)
	if err != nil || t == nil {
		t = new(T)
	}
	return t
}

// find runs a find and decodes every document.
func (s *Store[T, K]) find(ctx context.Context, filter any, opts ...options.Lister[options.FindOptions]) ([]*T, error) {
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, filter, opts...)
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var out []*T
	for cur.Next(ctx) {
		t, err := s.decode(cur.Current)
		if err != nil {
			return nil, runtime.Unreadable("find", s.d.Aggregate, s.idOf(cur.Current), err)
		}
		out = append(out, t)
	}
	return out, cur.Err()
}

// counterID names the counter of t's scope.
func (s *Store[T, K]) counterID(id K) (string, int64) {
	scope, n := s.d.Counter.Split(id)
	return CounterID(s.coll.Name(), scope), n
}

// withCounter runs write for a counter-keyed aggregate: with a zero
// counted number, on numbers allocated from the scope's counter until one
// is free; with an explicit number, after raising the counter to it.
func (s *Store[T, K]) withCounter(ctx context.Context, op string, t *T, alloc bool, write func(*T) error) error {
	id := *s.d.ID(t)
	counter, n := s.counterID(id)
	if err := s.fitsBeforeCounter(op, t); err != nil {
		return err
	}
	if n != 0 {
		if err := Raise(ctx, s.counters, op, s.d.Aggregate, id, counter, n); err != nil {
			return err
		}
		return write(t)
	}
	if !alloc {
		return write(t)
	}
	_, err := runtime.AllocateKey(ctx, runtime.Allocation[K]{
		Op: op, Agg: s.d.Aggregate, Counter: counter,
		Next: func(ctx context.Context) (int64, error) { return NextID(ctx, s.counters, counter) },
		Overflowed: func(ctx context.Context) bool {
			// The server refuses to increment past math.MaxInt64.
			ctx, cancel := runtime.Detach(ctx)
			defer cancel()
			last, err := counterValue(ctx, s.counters, counter)
			return err == nil && last == math.MaxInt64
		},
		With:   func(n int64) K { return s.d.Counter.With(id, n) },
		Number: func(id K) int64 { _, n := s.d.Counter.Split(id); return n },
		Try: func(ctx context.Context, id K) (bool, error) {
			c := *t
			*s.d.ID(&c) = id
			if err := write(&c); err != nil {
				return errors.Is(err, errKeyInUse), err
			}
			*t = c
			return false, nil
		},
	})
	return err
}

// Create inserts the document of a new block (through the lookup protocol
// when there are lookups).
func (s *Store[T, K]) Create(ctx context.Context, t *T) error {
	if err := bsonval.CheckBlock("Create", s.d, t, MaxDepth); err != nil {
		return err
	}
	if err := s.checkReady(ctx, "Create"); err != nil {
		return err
	}
	return refused(s.create(ctx, t))
}

func (s *Store[T, K]) create(ctx context.Context, t *T) error {
	create := func(t *T) error { return s.insertDoc(ctx, "Create", t, 1) }
	var err error
	if s.d.Counter != nil {
		err = s.withCounter(ctx, "Create", t, true, create)
	} else {
		err = create(t)
	}
	if err != nil {
		return err
	}
	s.d.SetVersion(t, 1)
	return nil
}

// Put replaces block t whole, on condition of its version when it has one.
func (s *Store[T, K]) Put(ctx context.Context, t *T) error {
	if err := bsonval.CheckBlock("Put", s.d, t, MaxDepth); err != nil {
		return err
	}
	if err := s.checkReady(ctx, "Put"); err != nil {
		return err
	}
	return refused(s.putAll(ctx, t))
}

func (s *Store[T, K]) putAll(ctx context.Context, t *T) error {
	want := s.d.VersionOf(t)
	put := func(t *T) error { return s.put(ctx, t, want) }
	if s.d.Counter != nil {
		id := *s.d.ID(t)
		if err := s.newExpected("Put", t); err != nil {
			return err
		}
		if _, n := s.counterID(id); n == 0 {
			// A zero counted number: a new block with an allocated key.
			put = func(t *T) error { return s.insertDoc(ctx, "Put", t, want+1) }
		}
		if err := s.withCounter(ctx, "Put", t, true, put); err != nil {
			return err
		}
	} else if err := put(t); err != nil {
		return err
	}
	s.d.SetVersion(t, want+1)
	return nil
}

// newExpected refuses a Put (op) of t with a zero counted number, a new
// block whose key the counter allocates, that expects a version: there is
// no block of that version (runtime.ErrConflict, as over a missing block).
func (s *Store[T, K]) newExpected(op string, t *T) error {
	if s.d.Counter == nil || s.d.Version == nil {
		return nil
	}
	id := *s.d.ID(t)
	if _, n := s.counterID(id); n != 0 {
		return nil
	}
	if want := s.d.VersionOf(t); want != 0 {
		return runtime.VersionConflict(op, s.d.Aggregate, id, false, 0, want)
	}
	return nil
}

// insertDoc inserts the document of new block t with the given version
// (through the lookup protocol when there are index tables).
func (s *Store[T, K]) insertDoc(ctx context.Context, op string, t *T, version int64) error {
	id := *s.d.ID(t)
	if err := s.checkNative(op, id, t); err != nil {
		return err
	}
	if s.m().x != nil {
		doc := s.doc(t, version, Stamp{})
		if err := s.checkDoc(op, id, doc); err != nil {
			return err
		}
		return s.m().x.Create(ctx, op, id, t, func(st Stamp) any { return s.doc(t, version, st) })
	}
	w, doc, err := s.encodeDoc(op, id, t, version)
	if err != nil {
		return err
	}
	defer w.release()
	return s.insert(ctx, op, id, t, doc)
}

func (s *Store[T, K]) put(ctx context.Context, t *T, want int64) error {
	id := *s.d.ID(t)
	versioned := s.d.Version != nil
	if err := s.checkNative("Put", id, t); err != nil {
		return err
	}
	if s.m().x != nil {
		doc := s.doc(t, want+1, Stamp{})
		if err := s.checkDoc("Put", id, doc); err != nil {
			return err
		}
		return s.m().x.Put(ctx, "Put", id, t, versioned, want, func(st Stamp) any { return s.doc(t, want+1, st) })
	}
	for range runtime.MaxAttempts {
		// The created timestamp of a block that exists stays: read
		// here, and the replacement is on condition that it is still
		// the one read.
		var created *bson.RawValue
		if s.d.Created != nil {
			raw, err := s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: s.d.Created.Key, Value: 1}})).Raw()
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				return s.fail("Put", id, err)
			}
			if err := s.d.KeepCreated("Put", id, t, s.created(raw)); err != nil {
				return err
			}
			v := raw.Lookup(s.d.Created.Key) // zero when there is none
			created = &v
		}
		again, err := s.replace(ctx, t, id, want, created)
		if !again {
			return err
		}
	}
	return runtime.Contended("Put", s.d.Aggregate, id, "block")
}

// created decodes the created entry of raw, the stored document of a
// block (nil: none), for runtime.Desc.KeepCreated.
func (s *Store[T, K]) created(raw bson.Raw) runtime.Decoder {
	if s.d.Created == nil || raw == nil {
		return nil
	}
	v, err := raw.LookupErr(s.d.Created.Key)
	if err != nil {
		return nil // written before the model had it: Put gives it one
	}
	return &rawDecoder{v}
}

// replace writes the document of t over block id (checking version want
// when the aggregate has one) and, when created is set, on condition that
// the block's created field is still *created (a zero value: none). again
// reports that this condition failed: the caller reads created again.
func (s *Store[T, K]) replace(ctx context.Context, t *T, id K, want int64, created *bson.RawValue) (again bool, err error) {
	versioned := s.d.Version != nil
	w, doc, err := s.encodeDoc("Put", id, t, want+1)
	if err != nil {
		return false, err
	}
	defer w.release()
	filter, err := s.appendFilter(w, id, want, created)
	if err != nil {
		return false, runtime.Fail("Put", s.d.Aggregate, id, nil, err)
	}
	createdCond := s.createdCond(created)
	// changed reports whether the created field changed since it was read
	// (a write matching nothing, or an upsert whose insert found the key
	// taken, by a block created meanwhile).
	changed := func() bool { return s.createdChanged(ctx, id, created) }
	switch {
	case !versioned:
		runtime.RoundTrip(ctx)
		if _, err := s.coll.ReplaceOne(ctx, filter, doc, options.Replace().SetUpsert(true)); err != nil {
			if mongo.IsDuplicateKeyError(err) && changed() {
				return true, nil
			}
			return false, s.writeErr(ctx, "Put", id, t, false, err)
		}
	case want == 0:
		// A new block: inserting fails if one exists already.
		runtime.RoundTrip(ctx)
		_, err := s.coll.InsertOne(ctx, doc)
		if err == nil {
			return false, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, s.fail("Put", id, err)
		}
		if derr := s.duplicate(ctx, "Put", id, t, true, err); derr != nil {
			return false, derr
		}
		// A block written before the model had a version is at version
		// 0 as long as it has none: it is replaced.
		runtime.RoundTrip(ctx)
		cond := bson.D{{Key: "_id", Value: id}, {Key: s.d.Version.Key, Value: bson.D{{Key: "$exists", Value: false}}}}
		if created != nil {
			cond = append(cond, createdCond)
		}
		res, rerr := s.coll.ReplaceOne(ctx, cond, doc)
		if rerr != nil {
			return false, s.writeErr(ctx, "Put", id, t, false, rerr)
		}
		if res.MatchedCount == 0 {
			if changed() {
				return true, nil
			}
			return false, runtime.Fail("Put", s.d.Aggregate, id, runtime.ErrConflict, err)
		}
	default:
		// Replace only the version the caller read.
		runtime.RoundTrip(ctx)
		res, err := s.coll.ReplaceOne(ctx, filter, doc)
		if err != nil {
			return false, s.writeErr(ctx, "Put", id, t, false, err)
		}
		if res.MatchedCount == 0 {
			if changed() {
				return true, nil
			}
			return false, runtime.Fail("Put", s.d.Aggregate, id, runtime.ErrConflict, nil)
		}
	}
	return false, nil
}

// createdCond is the condition of a Put on the created field as read
// (a zero value: none); the zero bson.E when created is nil.
func (s *Store[T, K]) createdCond(created *bson.RawValue) bson.E {
	if created == nil {
		return bson.E{}
	}
	c := bson.E{Key: s.d.Created.Key, Value: *created}
	if created.Type == 0 {
		c.Value = bson.D{{Key: "$exists", Value: false}}
	}
	return c
}

// appendFilter appends to w the filter of a replacement of block id by a
// Put and returns it: _id, the version want (when the aggregate has one
// and want is not 0) and, when created is set, the created field as read.
func (s *Store[T, K]) appendFilter(w *docBuf, id K, want int64, created *bson.RawValue) (bson.Raw, error) {
	n := len(w.b)
	f := w.start()
	if err := appendID(w, "_id", id); err != nil {
		return nil, err
	}
	if s.d.Version != nil && want != 0 {
		w.int64(pathOf(s.d.Version.Key), want)
	}
	if created != nil {
		c := s.createdCond(created)
		if err := w.value(pathOf(c.Key), c.Value); err != nil {
			return nil, err
		}
	}
	w.end(f)
	return bson.Raw(w.b[n:]), nil
}

// createdChanged reports whether the created field of block id is no
// longer *created (nil: no condition), as read again.
func (s *Store[T, K]) createdChanged(ctx context.Context, id K, created *bson.RawValue) bool {
	if created == nil {
		return false
	}
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: s.d.Created.Key, Value: 1}})).Raw()
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false
	}
	now := raw.Lookup(s.d.Created.Key)
	return now.Type != created.Type || !bytes.Equal(now.Value, created.Value)
}

// Delete removes block id (and, with lookups, its index entries).
func (s *Store[T, K]) Delete(ctx context.Context, id K) error {
	return s.delete(ctx, "Delete", ByID(id), id)
}

// delete removes the block filter matches (block id, perhaps with a
// condition), and with index-table lookups its index entries. It fails
// with runtime.ErrNotFound if none does.
func (s *Store[T, K]) delete(ctx context.Context, op string, filter bson.D, id K) error {
	if err := s.settle(ctx, op); err != nil {
		return err
	}
	if x := s.m().x; x != nil {
		return x.Delete(ctx, op, filter, id)
	}
	runtime.RoundTrip(ctx)
	res, err := s.coll.DeleteOne(ctx, filter)
	if err != nil {
		return s.fail(op, id, err)
	}
	if res.DeletedCount == 0 {
		return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	return nil
}

// versionInc is the $inc that bumps the version entry, nil without one.
func (s *Store[T, K]) versionInc() bson.D {
	if s.d.Version == nil {
		return nil
	}
	return bson.D{{Key: s.d.Version.Key, Value: 1}}
}
