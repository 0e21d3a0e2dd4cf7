package mongostore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
)

// StaleAfter is the grace period of the lookup protocol: an index entry
// that does not match its aggregate is only treated as stale (dropped by a
// read, taken over by a unique claim) once it is older than this, so that
// the entries of a write in flight, written before its aggregate, are left
// alone. Set it before using the repositories.
var StaleAfter = 30 * time.Second

// Hidden document fields of an aggregate with lookups (see Stamp).
const (
	SeqKey = "_seq"
	IncKey = "_inc"
)

// Stamp holds the hidden fields the lookup protocol (runtime/index) keeps
// in the document of an aggregate with index-table lookups.
type Stamp struct {
	// Seq is the write sequence: every write that can change lookup
	// values sets it to a value above the one it read, on condition that
	// it has not changed meanwhile.
	Seq int64 `bson:"_seq,omitempty"`
	// Inc identifies the incarnation of the block: it is drawn at random
	// when the block is created, kept by every later write, and copied
	// into the block's index entries, so that a Delete removes the entries
	// of the block it deleted and never those of a block created again
	// with the same key.
	Inc int64 `bson:"_inc,omitempty"`
}

// TableName names the collection holding an index table: "Hotel__cityStars".
func TableName(collection, lookup string) string { return collection + "__" + lookup }

// IndexKey is the _id of the index entry with the given key: its lower-case
// hex form, which orders like the bytes.
func IndexKey(key []byte) string { return hex.EncodeToString(key) }

// Limits of one command that names index keys ($in lists, as hex: twice
// the bytes), so that large keys never exceed the server's message limit;
// and repairBatch, the documents Repair reads per page: 16 of the largest
// document fit in one reply.
var limits = index.Limits{Keys: 500, Bytes: 2 << 20}

const repairBatch = 16

// ambiguous reports whether err leaves a write's outcome unknown: the
// command may have been applied though its reply did not arrive.
func ambiguous(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) {
		return true
	}
	var we mongo.WriteException
	if errors.As(err, &we) && we.WriteConcernError != nil {
		return true
	}
	var bwe mongo.BulkWriteException
	return errors.As(err, &bwe) && bwe.WriteConcernError != nil
}

// indexed is an aggregate collection with index tables: the store
// primitives of the index engine (runtime/index), which runs the lookup
// protocol, the verified reads and Repair over them, and the block
// commands of the protocol's writes. An index table is a collection
// (TableName) of entries {_id: IndexKey(key), id: block key, inc, s, w}.
type indexed[T any, K comparable] struct {
	s          *Store[T, K]
	e          *index.Engine[*T]
	tables     []*mongo.Collection
	fields     []string // document fields holding lookup parts
	versionKey string
}

func newIndexed[T any, K comparable](s *Store[T, K], ls []*runtime.Lookup[T], fields []string) *indexed[T, K] {
	x := &indexed[T, K]{s: s, fields: fields, versionKey: s.d.VersionKey()}
	e := &index.Engine[*T]{
		Agg: s.d.Aggregate, P: x, Batch: limits, RepairBatch: repairBatch,
		StaleAfter: func() time.Duration { return StaleAfter },
		ID: func(b []byte) any {
			if id, err := x.id(b); err == nil {
				return id
			}
			return runtime.FormatKey(b)
		},
	}
	for _, l := range ls {
		x.tables = append(x.tables, Collection(s.coll.Database(), TableName(s.coll.Name(), l.Name)))
		e.Lookups = append(e.Lookups, index.Lookup[*T]{Name: s.coll.Name() + "." + l.Name, Unique: l.Unique, Values: l.Keys})
	}
	x.e = e
	return x
}

// Primitives returns the store primitives the index engine runs the
// index-table lookups on (nil when every lookup is on a native index), in
// the order of the descriptor's index-table lookups: for the primitives'
// conformance suite (runtime/storetest/indextest).
func (s *Store[T, K]) Primitives() index.Primitives[*T] {
	if s.m().x == nil {
		return nil
	}
	return s.m().x
}

// lookup finds an index-table lookup by name.
func (x *indexed[T, K]) lookup(name string) int {
	for i, l := range x.e.Lookups {
		if l.Name == x.s.coll.Name()+"."+name {
			return i
		}
	}
	panic("mongostore: " + x.s.d.Aggregate + " has no index table " + name)
}

// id decodes an encoded block key.
func (x *indexed[T, K]) id(b []byte) (K, error) {
	r := runtime.NewKeyReader(b)
	id, err := x.s.d.Keys.Read(r)
	if err == nil && !r.Done() {
		err = fmt.Errorf("block key %x: trailing bytes", b)
	}
	return id, err
}

// entry is an index document.
type entry[K any] struct {
	Key string `bson:"_id"`
	ID  K      `bson:"id"`
	Inc int64  `bson:"inc"`
	S   int64  `bson:"s"`
	W   int64  `bson:"w,omitempty"`
}

func (x *indexed[T, K]) item(e *entry[K]) (index.Item, error) {
	k, err := hex.DecodeString(e.Key)
	if err != nil {
		return index.Item{}, fmt.Errorf("index entry %q: %w", e.Key, err)
	}
	return index.Item{Key: k, Block: x.s.d.Keys.Bytes(e.ID), Inc: e.Inc, Seq: e.S, W: e.W}, nil
}

// set is the update that makes an entry it (without a mark when W is 0).
func (x *indexed[T, K]) set(it index.Item, id K) bson.D {
	u := bson.D{{Key: "$set", Value: bson.D{{Key: "id", Value: id}, {Key: "inc", Value: it.Inc}, {Key: "s", Value: it.Seq}}}}
	if it.W == 0 {
		return append(u, bson.E{Key: "$unset", Value: bson.D{{Key: "w", Value: ""}}})
	}
	u[0].Value = append(u[0].Value.(bson.D), bson.E{Key: "w", Value: it.W})
	return u
}

// mark is the filter on an entry's mark w (none: absent, or 0 as Repair
// wrote it before).
func mark(w int64) bson.E {
	if w == 0 {
		return bson.E{Key: "$or", Value: bson.A{bson.D{{Key: "w", Value: bson.D{{Key: "$exists", Value: false}}}}, bson.D{{Key: "w", Value: int64(0)}}}}
	}
	return bson.E{Key: "w", Value: w}
}

// cond is the filter of condition c on the entries (without _id).
func (x *indexed[T, K]) cond(c index.Cond) (bson.D, error) {
	switch c.Kind {
	case index.Same:
		id, err := x.id(c.Item.Block)
		return bson.D{{Key: "id", Value: id}, {Key: "s", Value: c.Item.Seq}, mark(c.Item.W)}, err
	case index.Marked:
		return bson.D{{Key: "w", Value: c.W}}, nil
	case index.Held:
		id, err := x.id(c.Block)
		f := bson.D{{Key: "id", Value: id}, {Key: "inc", Value: c.Inc}}
		if c.Before != 0 {
			f = append(f, bson.E{Key: "s", Value: bson.D{{Key: "$lt", Value: c.Before}}})
		}
		return f, err
	}
	return bson.D{}, nil
}

// PutItem implements index.Primitives.
func (x *indexed[T, K]) PutItem(ctx context.Context, l int, it index.Item, c index.Cond) (bool, *index.Item, error) {
	id, err := x.id(it.Block)
	if err != nil {
		return false, nil, err
	}
	t, k := x.tables[l], IndexKey(it.Key)
	switch c.Kind {
	case index.Always:
		// Seq only moves up: an older write never makes a newer write's
		// entry look older.
		set := bson.D{{Key: "id", Value: id}, {Key: "inc", Value: it.Inc}}
		u := bson.D{{Key: "$max", Value: bson.D{{Key: "s", Value: it.Seq}}}}
		if it.W != 0 {
			u = append(u, bson.E{Key: "$set", Value: append(set, bson.E{Key: "w", Value: it.W})})
		} else {
			u = append(u, bson.E{Key: "$set", Value: set}, bson.E{Key: "$unset", Value: bson.D{{Key: "w", Value: ""}}})
		}
		var prev entry[K]
		runtime.RoundTrip(ctx)
		err := t.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: k}}, u,
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.Before)).Decode(&prev)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return true, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		p, err := x.item(&prev)
		return true, &p, err
	case index.Absent:
		doc := bson.D{{Key: "_id", Value: k}, {Key: "id", Value: id}, {Key: "inc", Value: it.Inc}, {Key: "s", Value: it.Seq}}
		if it.W != 0 {
			doc = append(doc, bson.E{Key: "w", Value: it.W})
		}
		runtime.RoundTrip(ctx)
		_, err := t.InsertOne(ctx, doc)
		if mongo.IsDuplicateKeyError(err) {
			return false, nil, nil
		}
		return err == nil, nil, err
	}
	f, err := x.cond(c)
	if err != nil {
		return false, nil, err
	}
	runtime.RoundTrip(ctx)
	res, err := t.UpdateOne(ctx, append(bson.D{{Key: "_id", Value: k}}, f...), x.set(it, id))
	if err != nil {
		return false, nil, err
	}
	return res.MatchedCount == 1, nil, nil
}

func hexKeys(keys [][]byte) bson.A {
	out := make(bson.A, len(keys))
	for i, k := range keys {
		out[i] = IndexKey(k)
	}
	return out
}

// GetItems implements index.Primitives.
func (x *indexed[T, K]) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	var f bson.D
	if len(keys) == 1 {
		f = bson.D{{Key: "_id", Value: IndexKey(keys[0])}}
	} else {
		f = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: hexKeys(keys)}}}}
	}
	return x.findItems(ctx, l, f, options.Find().SetBatchSize(oneBatch(len(keys))))
}

func (x *indexed[T, K]) findItems(ctx context.Context, l int, f bson.D, opts *options.FindOptionsBuilder) ([]index.Item, error) {
	runtime.RoundTrip(ctx)
	cur, err := x.tables[l].Find(ctx, f, opts)
	if err != nil {
		return nil, err
	}
	var es []entry[K]
	if err := cur.All(ctx, &es); err != nil {
		return nil, err
	}
	out := make([]index.Item, 0, len(es))
	for i := range es {
		it, err := x.item(&es[i])
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// DeleteItems implements index.Primitives.
func (x *indexed[T, K]) DeleteItems(ctx context.Context, l int, keys [][]byte, c index.Cond) (int, error) {
	f, err := x.cond(c)
	if err != nil {
		return 0, err
	}
	f = append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: hexKeys(keys)}}}}, f...)
	if len(keys) == 1 {
		f[0].Value = IndexKey(keys[0])
	}
	runtime.RoundTrip(ctx)
	res, err := x.tables[l].DeleteMany(ctx, f)
	if err != nil {
		return 0, err
	}
	return int(res.DeletedCount), nil
}

// ScanItems implements index.Primitives: one find on the index table's
// _id, sorted 1 (desc: -1).
func (x *indexed[T, K]) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	rng := bson.D{{Key: "$gte", Value: IndexKey(from)}}
	if to != nil {
		rng = append(rng, bson.E{Key: "$lt", Value: IndexKey(to)})
	}
	dir := 1
	if desc {
		dir = -1
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: dir}}).SetLimit(int64(limit)).SetBatchSize(oneBatch(limit))
	return x.findItems(ctx, l, bson.D{{Key: "_id", Value: rng}}, opts)
}

// block makes the engine's block of a document.
func (x *indexed[T, K]) block(raw bson.Raw) index.Block[*T] {
	var b index.Block[*T]
	var id K
	if rv, err := raw.LookupErr("_id"); err == nil {
		_ = bsonval.DecodeValue(rv.Type, rv.Value, &id)
	}
	b.Key = x.s.d.Keys.Bytes(id)
	b.Stamp.Seq, _ = raw.Lookup(SeqKey).AsInt64OK()
	b.Stamp.Inc, _ = raw.Lookup(IncKey).AsInt64OK()
	b.Value, b.Err = x.s.decode(raw)
	return b
}

func (x *indexed[T, K]) findBlocks(ctx context.Context, f bson.D, opts *options.FindOptionsBuilder) ([]index.Block[*T], error) {
	runtime.RoundTrip(ctx)
	cur, err := x.s.coll.Find(ctx, f, opts)
	if err != nil {
		return nil, err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]index.Block[*T], len(docs))
	for i, d := range docs {
		out[i] = x.block(d)
	}
	return out, nil
}

// ReadBlocks implements index.Primitives: the documents whole.
func (x *indexed[T, K]) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[*T], error) {
	return x.readBlocks(ctx, keys, nil)
}

// ReadFields implements index.FieldReader: the key, the stamp and the
// lookup fields of the documents (Repair reads no more).
func (x *indexed[T, K]) ReadFields(ctx context.Context, keys [][]byte) ([]index.Block[*T], error) {
	return x.readBlocks(ctx, keys, x.lookupFields())
}

// lookupFields is the projection of what the engine derives index keys
// from: the key, the stamp and the fields holding lookup parts.
func (x *indexed[T, K]) lookupFields() bson.D {
	proj := bson.D{{Key: "_id", Value: 1}, {Key: SeqKey, Value: 1}, {Key: IncKey, Value: 1}}
	for _, fl := range x.fields {
		proj = append(proj, bson.E{Key: fl, Value: 1})
	}
	return proj
}

// readBlocks reads the documents with the given keys, with projection
// proj (nil: whole).
func (x *indexed[T, K]) readBlocks(ctx context.Context, keys [][]byte, proj bson.D) ([]index.Block[*T], error) {
	ids := make(bson.A, len(keys))
	for i, b := range keys {
		id, err := x.id(b)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	f := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	if len(ids) == 1 {
		f[0].Value = ids[0]
	}
	opts := options.Find().SetBatchSize(oneBatch(len(ids)))
	if proj != nil {
		opts.SetProjection(proj)
	}
	return x.findBlocks(ctx, f, opts)
}

// stamped is the filter matching block id only while its stamp is st.
func stamped(id any, st index.Stamp) bson.D {
	missing := bson.D{{Key: "$exists", Value: false}}
	f := bson.D{{Key: "_id", Value: id}, {Key: SeqKey, Value: st.Seq}, {Key: IncKey, Value: st.Inc}}
	if st.Seq == 0 {
		f[1].Value = missing
	}
	if st.Inc == 0 {
		f[2].Value = missing
	}
	return f
}

// FenceBlock implements index.Primitives.
func (x *indexed[T, K]) FenceBlock(ctx context.Context, key []byte, old index.Stamp, seq int64) (bool, error) {
	id, err := x.id(key)
	if err != nil {
		return false, err
	}
	runtime.RoundTrip(ctx)
	res, err := x.s.coll.UpdateOne(ctx, stamped(id, old), bson.D{{Key: "$set", Value: bson.D{{Key: SeqKey, Value: seq}}}})
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// DeleteBlock implements index.Primitives.
func (x *indexed[T, K]) DeleteBlock(ctx context.Context, key []byte, st index.Stamp) (bool, error) {
	id, err := x.id(key)
	if err != nil {
		return false, err
	}
	runtime.RoundTrip(ctx)
	res, err := x.s.coll.DeleteOne(ctx, stamped(id, st))
	if err != nil {
		return false, err
	}
	return res.DeletedCount == 1, nil
}

// ScanBlocks implements index.Primitives: the lookup fields of the
// documents, in _id order (which is encoded key order).
func (x *indexed[T, K]) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[*T], []byte, error) {
	f := bson.D{}
	if after != nil {
		id, err := x.id(after)
		if err != nil {
			return nil, nil, err
		}
		f = bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: id}}}}
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetProjection(x.lookupFields()).SetLimit(int64(limit)).SetBatchSize(oneBatch(limit))
	page, err := x.findBlocks(ctx, f, opts)
	return page, index.NextAfter(page, limit), err
}

// Ambiguous implements index.Primitives.
func (x *indexed[T, K]) Ambiguous(err error) bool { return ambiguous(err) }

// EnsureIndexes creates the aggregate collection, the index tables, the
// index on their id field (which Delete uses) and the collections named in
// more (e.g. CountersCollection).
func (x *indexed[T, K]) EnsureIndexes(ctx context.Context, more ...string) error {
	names := append([]string{x.s.coll.Name()}, more...)
	for _, t := range x.tables {
		names = append(names, t.Name())
	}
	if err := EnsureCollections(ctx, x.s.coll.Database(), x.s.d.Aggregate, names...); err != nil {
		return err
	}
	for _, t := range x.tables {
		runtime.RoundTrip(ctx)
		if _, err := t.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "id", Value: 1}}}); err != nil {
			return runtime.Fail("EnsureIndexes", x.s.d.Aggregate, nil, nil, err)
		}
	}
	return nil
}
