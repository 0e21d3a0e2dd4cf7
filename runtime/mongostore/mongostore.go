// Package mongostore is the MongoDB adapter of noamgen's runtime: the small
// helpers that generated MongoDB repositories call.
//
// Mapping (NoAM paper, section 7.3, Fig. 10): one collection per aggregate
// class, one document per block with the block key as _id, one top-level
// field per entry key. The elements of a partitioned field are an array,
// written element by element ($push, $set "f.i"), and the document keeps
// each partitioned array's length under _len.f so that an append learns its
// index from the same atomic write.
//
// # Lookups
//
// By default a lookup is a native secondary index of the aggregate
// collection (see native.go): the server keeps it in the same atomic write
// as the document, and nothing below applies. A lookup marked
// noam:"lookup,table" (or every lookup under the option IndexTables, every
// unique one under UniqueTables) is an index table instead, for sharded
// collections that need a globally unique value or a lookup that does not
// fan out to every shard (a unique index on a sharded collection must start
// with the shard key).
//
// # Index tables without transactions
//
// A lookup's index table is a collection named TableName(collection,
// lookup), e.g. "Hotel__cityStars", holding one entry per (value, block):
//
//	{_id: IndexKey(key), id: <block key>, inc: <incarnation>, s: <write sequence>, w: <attempt>}
//
// The key is the encoded lookup value followed by the encoded block key, or
// the value alone for a unique lookup, so that the server's _id uniqueness
// enforces it. The hex form orders like the bytes, so every lookup query is
// a range scan on _id. The aggregate's document carries a Stamp: its write
// sequence _seq and its incarnation _inc, drawn at random by the write
// that creates the block.
//
// MongoDB without transactions (and FerretDB) cannot change an aggregate
// and its entries atomically, so writes follow the lookup protocol of the
// index engine (package runtime/index, which states it and its
// invariants): entries are added before the aggregate write (unique ones
// claimed by inserting them, a stale claim taken over only after
// StaleAfter and after fencing its holder's stamp), the aggregate is
// written on condition that its stamp is the one read, the old entries are
// removed after it, a failed attempt is undone, an unknown outcome is
// decided by reading the block back, and reads verify every entry against
// its aggregate. This package supplies the engine's store primitives
// (lookups.go: conditional writes of entries, $in reads, _id range scans,
// the stamp filters) and the aggregate command of each write
// (protocol.go). Commands that name index keys are bounded (500 keys, 4
// MiB of hex keys) and Repair pages through aggregates and index tables
// 16 documents at a time, so that large values (e.g. 50 tags of 1 MiB)
// never exceed the server's message limit.
//
// Counters (enumerable keys) live in the collection CountersCollection,
// one document per collection or per scope of a composite key, and are
// incremented with findAndModify.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// LenKey is the document field that holds the lengths of partitioned arrays.
const LenKey = "_len"

// Collection opens a collection with the BSON options generated code relies
// on: nil slices are stored as empty arrays, so that $push always finds an array.
func Collection(db *mongo.Database, name string) *mongo.Collection {
	return db.Collection(name, options.Collection().SetBSONOptions(&options.BSONOptions{NilSliceAsEmpty: true}))
}

// Err turns a driver error into a runtime error for operation op on block id
// of aggregate agg: no document is runtime.ErrNotFound, a duplicate key is
// runtime.ErrDuplicate, anything else is wrapped as it is.
func Err(op, agg string, id any, err error) error {
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return runtime.Fail(op, agg, id, runtime.ErrNotFound, nil)
	case mongo.IsDuplicateKeyError(err):
		return keyInUse(op, agg, id, err)
	case badValue(err):
		return runtime.Fail(op, agg, id, runtime.ErrInvalid, err)
	case overLimit(err):
		return tooLarge(op, agg, id, 0, err)
	}
	return runtime.Fail(op, agg, id, nil, err)
}

// badValue reports a write the server refused for its value, before
// changing anything: a BadValue (code 2) or a field name it does not accept
// (FerretDB refuses dots in keys; code 22 is InvalidBSON).
func badValue(err error) bool {
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return false
	}
	return se.HasErrorCode(2) || se.HasErrorCode(22) || se.HasErrorMessage("invalid key")
}

// Servers that reject a projection the adapter uses (FerretDB v1 has no
// projection in findAndModify and no $slice projection) answer
// NotImplemented (code 238) while parsing the command, before applying
// anything. The adapter then remembers, per client, to use the plainer form.
const codeNotImplemented = 238

var (
	noFindAndModifyProjection sync.Map // *mongo.Client -> true
	noSliceProjection         sync.Map // *mongo.Client -> true
)

func notImplemented(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(codeNotImplemented)
}

// Append pushes elem onto the partitioned array field of block id and
// increments its length (and the version entry, when versionKey is not
// "", and sets the fields of set: the updated timestamp), in one atomic
// findAndModify that returns only the new length. The
// other elements are neither sent nor read back. It returns the index of
// the new element. A block whose array has no count (written while the
// field was whole) gets one first (countElems).
//
// Servers without projections in findAndModify (FerretDB v1) would send
// the whole document back: there Append reads the length alone and pushes
// on condition that it is unchanged (see appendAt), so that a reply is a
// few bytes whatever the size of the aggregate.
func Append(ctx context.Context, coll *mongo.Collection, op, agg string, id any, field string, elem any, versionKey string, set bson.D) (int, error) {
	inc := bson.D{{Key: LenKey + "." + field, Value: 1}}
	if versionKey != "" {
		inc = append(inc, bson.E{Key: versionKey, Value: 1})
	}
	upd := bson.D{{Key: "$push", Value: bson.D{{Key: field, Value: elem}}}, {Key: "$inc", Value: inc}}
	if len(set) > 0 {
		upd = append(upd, bson.E{Key: "$set", Value: set})
	}
	var update any = upd
	if !fits(update) {
		return 0, checkSize(op, agg, id, update)
	}
	client := coll.Database().Client()
	if _, no := noFindAndModifyProjection.Load(client); no {
		return appendAt(ctx, coll, op, agg, id, field, update)
	}
	// The filter: the block, with the array's count (a block written
	// while the field was whole has none: countElems counts them first).
	path := LenKey + "." + field
	filter := bson.D{{Key: "_id", Value: id}, {Key: path, Value: bson.D{{Key: "$exists", Value: true}}}}
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After).SetProjection(bson.D{{Key: path, Value: 1}})
	runtime.RoundTrip(ctx)
	raw, err := coll.FindOneAndUpdate(ctx, filter, update, opts).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		if err := countElems(ctx, coll, op, agg, id, field); err != nil {
			return 0, err
		}
		runtime.RoundTrip(ctx)
		raw, err = coll.FindOneAndUpdate(ctx, filter, update, opts).Raw()
	}
	if notImplemented(err) {
		noFindAndModifyProjection.Store(client, true)
		return appendAt(ctx, coll, op, agg, id, field, update)
	}
	if err != nil {
		return 0, Err(op, agg, id, err)
	}
	n, ok := raw.Lookup(LenKey, field).AsInt64OK()
	if !ok {
		return 0, runtime.Fail(op, agg, id, nil, fmt.Errorf("document has no %s.%s length", LenKey, field))
	}
	return int(n) - 1, nil
}

// appendAt is Append on servers without projections in findAndModify: it
// reads the array's length n (a projection of _len.<field> alone), then
// applies update on condition that the length is still n, so that the new
// element's index is n; a concurrent append makes it read again. Both
// replies are a few bytes.
func appendAt(ctx context.Context, coll *mongo.Collection, op, agg string, id any, field string, update any) (int, error) {
	path := LenKey + "." + field
	for range runtime.MaxAttempts {
		runtime.RoundTrip(ctx)
		raw, err := coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: path, Value: 1}, {Key: "_id", Value: 0}})).Raw()
		if err != nil {
			return 0, Err(op, agg, id, err)
		}
		n, ok := raw.Lookup(LenKey, field).AsInt64OK()
		if !ok {
			// Written while the field was whole (or before it existed).
			if err := countElems(ctx, coll, op, agg, id, field); err != nil {
				return 0, err
			}
			continue
		}
		runtime.RoundTrip(ctx)
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: path, Value: n}}, update)
		if err != nil {
			return 0, Err(op, agg, id, err)
		}
		if res.MatchedCount == 1 {
			return int(n), nil
		}
	}
	return 0, runtime.Contended(op, agg, id, field)
}

// ByID is the filter that selects block id.
func ByID(id any) bson.D { return bson.D{{Key: "_id", Value: id}} }

// oneBatch is the batch size that returns at most n documents in the first
// batch with the cursor closed: one round trip. One more than n, because
// some servers (FerretDB v1) keep a cursor open after an exactly full batch
// (costing an empty getMore), and a negative limit (single batch) is capped
// at their default batch size of 101 there.
func oneBatch(n int) int32 {
	return int32(min(n+1, math.MaxInt32))
}

// Elem names one element of a partitioned array.
type Elem struct {
	Field string
	Index int
}

// Path is the dotted path of the element, e.g. "rounds.3".
func (e Elem) Path() string { return e.Field + "." + strconv.Itoa(e.Index) }

func (e Elem) String() string { return fmt.Sprintf("%s[%d]", e.Field, e.Index) }

// NoMatch explains why a conditional write to block id matched no
// document, reading the block's version and array lengths once (only on
// this failure path): the block is missing (runtime.ErrNotFound), its
// version is not wantVersion (runtime.ErrConflict; versionKey "" or
// wantVersion 0 means no version condition), an element is out of range
// (runtime.ErrNotFound naming the element), or the block changed between
// the write and this read (runtime.ErrConflict).
func NoMatch(ctx context.Context, coll *mongo.Collection, op, agg string, id any, versionKey string, wantVersion int64, elems []Elem) error {
	proj := bson.D{{Key: LenKey, Value: 1}}
	if versionKey != "" {
		proj = append(proj, bson.E{Key: versionKey, Value: 1})
	}
	runtime.RoundTrip(ctx)
	raw, err := coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(proj)).Raw()
	if err != nil {
		return Err(op, agg, id, err)
	}
	if versionKey != "" && wantVersion != 0 {
		got, _ := raw.Lookup(versionKey).AsInt64OK()
		if err := runtime.CheckVersion(op, agg, id, true, got, wantVersion); err != nil {
			return err
		}
	}
	for _, e := range elems {
		n, _ := raw.Lookup(LenKey, e.Field).AsInt64OK()
		if e.Index < 0 || int64(e.Index) >= n {
			return runtime.FailAt(op, agg, id, e.String(), runtime.ErrNotFound, nil)
		}
	}
	return runtime.Fail(op, agg, id, runtime.ErrConflict, errors.New("block changed concurrently"))
}
