package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// errKeyInUse marks a failed insert whose block key exists, as opposed to
// a taken unique lookup value: Allocate then tries the next number.
var errKeyInUse = errors.New("block key in use")

func keyInUse(op, agg string, id any, err error) error {
	cause := errKeyInUse
	if err != nil {
		cause = fmt.Errorf("%w: %w", errKeyInUse, err)
	}
	return runtime.Fail(op, agg, id, runtime.ErrDuplicate, cause)
}

// GetMany reads the documents with the given block keys in one query and
// returns the converted aggregates by key; keys without a document are
// absent from the map.
func GetMany[K comparable, D, T any](ctx context.Context, coll *mongo.Collection, agg string, ids []K, convert func(*D) T, keyOf func(T) K) (map[K]T, error) {
	out, err := getMany(ctx, coll, ids, convert, keyOf)
	if err != nil {
		return nil, runtime.Fail("GetMany", agg, nil, nil, err)
	}
	return out, nil
}

func getMany[K comparable, D, T any](ctx context.Context, coll *mongo.Collection, ids []K, convert func(*D) T, keyOf func(T) K) (map[K]T, error) {
	out := make(map[K]T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	seen := make(map[K]bool, len(ids))
	in := make(bson.A, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			in = append(in, id)
		}
	}
	opts := options.Find().SetBatchSize(oneBatch(len(in)))
	cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, opts)
	if err != nil {
		return nil, err
	}
	var docs []D
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	for i := range docs {
		v := convert(&docs[i])
		out[keyOf(v)] = v
	}
	return out, nil
}

// EnsureCollections creates the named collections of db that do not exist
// yet (agg names the aggregate for errors).
func EnsureCollections(ctx context.Context, db *mongo.Database, agg string, names ...string) error {
	for _, name := range names {
		err := db.CreateCollection(ctx, name)
		var se mongo.ServerError
		if err != nil && !(errors.As(err, &se) && se.HasErrorCode(codeNamespaceExists)) {
			return runtime.Fail("EnsureIndexes", agg, nil, nil, fmt.Errorf("creating collection %s: %w", name, err))
		}
	}
	return nil
}

const codeNamespaceExists = 48

// CountersCollection holds the counters that allocate enumerable block
// keys: one document {_id: CounterID(...), n: last allocated number} per
// collection or counter scope.
const CountersCollection = "noam_counters"

// Counters opens db's counters collection.
func Counters(db *mongo.Database) *mongo.Collection { return db.Collection(CountersCollection) }

// CounterID names the counter of a collection, or of one scope of it (the
// encoded key parts before the counted one): "Comment:0380000000000023".
func CounterID(collection string, scope []byte) string {
	if len(scope) == 0 {
		return collection
	}
	return collection + ":" + IndexKey(scope)
}

type counterDoc struct {
	N int64 `bson:"n"`
}

// NextID increments counter id and returns its new value (1 for a new
// counter), in one atomic findAndModify.
func NextID(ctx context.Context, counters *mongo.Collection, id string) (int64, error) {
	var c counterDoc
	err := counters.FindOneAndUpdate(ctx, ByID(id), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&c)
	return c.N, err
}

// RaiseCounter makes counter id at least n, so that numbers given
// explicitly are not allocated again and scope listings reach them.
func RaiseCounter(ctx context.Context, counters *mongo.Collection, id string, n int64) error {
	_, err := counters.UpdateOne(ctx, ByID(id), bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: n}}}}, options.UpdateOne().SetUpsert(true))
	return err
}

// counterValue reads counter id (0 if it does not exist).
func counterValue(ctx context.Context, counters *mongo.Collection, id string) (int64, error) {
	var c counterDoc
	err := counters.FindOne(ctx, ByID(id)).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return c.N, err
}

// maxAllocations bounds the numbers Allocate tries for one block.
const maxAllocations = 1000

// Allocate calls create with the next numbers of counter id until it
// succeeds or fails otherwise than because the block key is in use (a
// number given explicitly earlier).
func Allocate(ctx context.Context, counters *mongo.Collection, op, agg, id string, create func(n int64) error) error {
	for range maxAllocations {
		n, err := NextID(ctx, counters, id)
		if err != nil {
			// The server refuses to increment past math.MaxInt64: say so
			// with a typed error, as every store does.
			if last, rerr := counterValue(context.WithoutCancel(ctx), counters, id); rerr == nil && last == math.MaxInt64 {
				return runtime.FailAt(op, agg, nil, "(counter "+id+" is at the largest number)", runtime.ErrOverflow, err)
			}
			return runtime.Fail(op, agg, nil, nil, fmt.Errorf("counter %s: %w", id, err))
		}
		if err := create(n); !errors.Is(err, errKeyInUse) {
			return err
		}
	}
	return runtime.Fail(op, agg, nil, runtime.ErrDuplicate, fmt.Errorf("counter %s: %d numbers in use in a row", id, maxAllocations))
}

// Raise makes counter id at least n before a write with the explicit
// number n (for op on block key, for errors).
func Raise(ctx context.Context, counters *mongo.Collection, op, agg string, key any, id string, n int64) error {
	if err := RaiseCounter(ctx, counters, id, n); err != nil {
		return runtime.Fail(op, agg, key, nil, fmt.Errorf("counter %s: %w", id, err))
	}
	return nil
}

// Insert inserts the document of a new block: a block key in use is
// runtime.ErrDuplicate.
func Insert(ctx context.Context, coll *mongo.Collection, op, agg string, id, doc any) error {
	_, err := coll.InsertOne(ctx, doc)
	switch {
	case err == nil:
		return nil
	case mongo.IsDuplicateKeyError(err):
		return keyInUse(op, agg, id, err)
	}
	return runtime.Fail(op, agg, id, nil, err)
}

// ListScope reads one page of the children of one counter scope (scope is
// the encoded key parts before the counted one) in number order, in two
// round trips whatever the numbers of deleted blocks: it reads the scope's
// counter, then the blocks whose keys lie in [key(after+1), key(counter)]
// in _id order, n+1 at most. Cursors are bound to the scope, and their
// numbers are validated with runtime.PositionAfter.
//
// The range query relies on the order of block keys in _id: a scalar
// number, or a document whose fields are the scope's parts followed by the
// counted number (as generated key structs are), which MongoDB (and
// FerretDB) compare field by field.
func ListScope[K comparable, D, T any](ctx context.Context, coll, counters *mongo.Collection, op, agg string, scope []byte, key func(n int64) K, req runtime.PageRequest, convert func(*D) T, numOf func(T) int64) (runtime.Page[T], error) {
	query := agg + "." + op + ":" + string(scope)
	var after int64
	if req.Cursor != "" {
		var err error
		if after, err = runtime.PositionAfter(query, req.Cursor, 0); err != nil {
			return runtime.Page[T]{}, runtime.Fail(op, agg, nil, nil, err)
		}
	}
	last, err := counterValue(ctx, counters, CounterID(coll.Name(), scope))
	if err != nil {
		return runtime.Page[T]{}, runtime.Fail(op, agg, nil, nil, err)
	}
	n := req.Size()
	items := []T{}
	if after < last {
		filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: key(after + 1)}, {Key: "$lte", Value: key(last)}}}}
		opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n) + 1).SetBatchSize(oneBatch(n + 1))
		cur, err := coll.Find(ctx, filter, opts)
		if err != nil {
			return runtime.Page[T]{}, runtime.Fail(op, agg, nil, nil, err)
		}
		var docs []D
		if err := cur.All(ctx, &docs); err != nil {
			return runtime.Page[T]{}, runtime.Fail(op, agg, nil, nil, err)
		}
		for i := range docs {
			items = append(items, convert(&docs[i]))
		}
		// The order of the server's comparison, made sure of.
		slices.SortFunc(items, func(a, b T) int { return cmp.Compare(numOf(a), numOf(b)) })
	}
	page := runtime.Page[T]{Items: items[:min(len(items), n)]}
	if len(items) > n {
		page.Next = runtime.PositionCursor(query, numOf(items[n-1]))
	}
	return page, nil
}
