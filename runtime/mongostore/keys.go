package mongostore

import (
	"context"
	"errors"
	"fmt"

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

func getMany[K comparable, D, T any](ctx context.Context, coll *mongo.Collection, ids []K, convert func(*D) T, keyOf func(T) K) (map[K]T, error) {
	out := make(map[K]T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in := distinctIDs(ids)
	opts := options.Find().SetBatchSize(oneBatch(len(in)))
	runtime.RoundTrip(ctx)
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
		runtime.RoundTrip(ctx)
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
	runtime.RoundTrip(ctx)
	err := counters.FindOneAndUpdate(ctx, ByID(id), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&c)
	return c.N, err
}

// RaiseCounter makes counter id at least n, so that numbers given
// explicitly are not allocated again and scope listings reach them.
func RaiseCounter(ctx context.Context, counters *mongo.Collection, id string, n int64) error {
	runtime.RoundTrip(ctx)
	_, err := counters.UpdateOne(ctx, ByID(id), bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: n}}}}, options.UpdateOne().SetUpsert(true))
	return err
}

// counterValue reads counter id (0 if it does not exist).
func counterValue(ctx context.Context, counters *mongo.Collection, id string) (int64, error) {
	var c counterDoc
	runtime.RoundTrip(ctx)
	err := counters.FindOne(ctx, ByID(id)).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return c.N, err
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
	runtime.RoundTrip(ctx)
	_, err := coll.InsertOne(ctx, doc)
	switch {
	case err == nil:
		return nil
	case mongo.IsDuplicateKeyError(err):
		return keyInUse(op, agg, id, err)
	}
	return runtime.Fail(op, agg, id, nil, err)
}

// distinctIDs lists ids once each, in first-seen order, for an $in.
func distinctIDs[K comparable](ids []K) bson.A {
	seen := make(map[K]bool, len(ids))
	in := make(bson.A, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			in = append(in, id)
		}
	}
	return in
}
