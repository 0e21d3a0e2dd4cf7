package mongostore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// CreateMany and PutMany of an aggregate with a counter (countedMany):
// the items are checked as the single call checks them before its
// counter moves (a refused item takes no number), then each counter
// scope moves once for the batch: one findOneAndUpdate $inc by the number
// of its items to allocate, which take the numbers up to the result in
// slice order, and one bulkWrite of the $max raises to the largest number
// each scope's items give explicitly. The blocks are then written with
// their keys as a batch without a counter writes them: CreateMany's
// inserts; for PutMany the allocated items are inserts at the version
// after the one given (as the single Put's), the others Puts (putBatch:
// one bulkWrite of both in slice order; with index tables, createTables
// and putTables per run of items of one kind). As with the single call,
// a number whose write fails stays allocated (a gap), and an allocated
// number whose block exists (given explicitly before) makes its item the
// single call, which takes the next free one. A scope whose counter
// cannot move in one request (a number past the largest) leaves its
// items to the single call, which says why.

// countedMany is a batch write with a counter (op "Create" or "Put"),
// setting errs: the items are checked as the single call checks them
// before its counter moves, then runtime.CountedMany moves the counters
// and write writes the blocks whose keys are set (alloc: the numbers
// allocated by the batch); one is the single call of an item the batch
// leaves to it.
func (s *Store[T, K]) countedMany(ctx context.Context, op string, ts []*T, errs []error,
	write func(ctx context.Context, ts []*T, alloc []bool, errs []error), one func(context.Context, *T) error) {
	var ready error
	checked := false
	for i, t := range ts {
		if errs[i] = bsonval.CheckBlock(op, s.d, t, MaxDepth); errs[i] == nil {
			if !checked {
				ready, checked = s.checkReady(ctx, op), true
			}
			if errs[i] = ready; ready == nil {
				errs[i] = s.fitsBeforeCounter(op, t)
			}
			if errs[i] == nil && op == "Put" {
				errs[i] = s.newExpected(op, t)
			}
		}
	}
	runtime.CountedMany(ctx, s.d, op, ts, errs, s.batchCounters(), func(ctx context.Context, cs []*T, alloc []bool) []error {
		cerrs := make([]error, len(cs))
		write(ctx, cs, alloc, cerrs)
		return cerrs
	}, func(_ context.Context, _ *T, err error) bool { return errors.Is(err, errKeyInUse) }, one)
}

// batchCounters are the store's counters as runtime.CountedMany moves
// them: a findOneAndUpdate $inc per scope to allocate, one unordered
// bulkWrite of $max upserts to raise.
type batchCounters[T any, K comparable] struct{ s *Store[T, K] }

func (s *Store[T, K]) batchCounters() batchCounters[T, K] { return batchCounters[T, K]{s} }

// AllocateMany increments the counter of key's scope by n and returns its
// new value, the last of the n numbers allocated, in one findAndModify.
func (b batchCounters[T, K]) AllocateMany(ctx context.Context, _ string, key K, n int) (int64, error) {
	counter, _ := b.s.counterID(key)
	var c counterDoc
	runtime.RoundTrip(ctx)
	err := b.s.counters.FindOneAndUpdate(ctx, ByID(counter), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(n)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&c)
	return c.N, err
}

// RaiseMany raises the counters of keys' scopes to their numbers in one
// unordered bulkWrite of $max upserts.
func (b batchCounters[T, K]) RaiseMany(ctx context.Context, _ string, keys []K) []error {
	raises := make([]mongo.WriteModel, len(keys))
	for r, key := range keys {
		counter, n := b.s.counterID(key)
		raises[r] = mongo.NewUpdateOneModel().SetFilter(ByID(counter)).
			SetUpdate(bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: n}}}}).SetUpsert(true)
	}
	runtime.RoundTrip(ctx)
	_, err := b.s.counters.BulkWrite(ctx, raises, options.BulkWrite().SetOrdered(false))
	errs := make([]error, len(keys))
	var bwe mongo.BulkWriteException
	switch {
	case errors.As(err, &bwe) && len(bwe.WriteErrors) > 0 && bwe.WriteConcernError == nil:
		for _, we := range bwe.WriteErrors {
			errs[we.Index] = we
		}
	case err != nil:
		for r := range errs {
			errs[r] = err
		}
	}
	return errs
}

// fitsBeforeCounter refuses a document too large before its counter
// moves (numbers encode in a fixed width: 1 stands for the one to be
// allocated), so that it takes no number.
func (s *Store[T, K]) fitsBeforeCounter(op string, t *T) error {
	id := *s.d.ID(t)
	c := *t
	if _, n := s.d.Counter.Split(id); n == 0 {
		*s.d.ID(&c) = s.d.Counter.With(id, 1)
	}
	return s.checkDoc(op, id, s.doc(&c, 1, Stamp{}))
}
