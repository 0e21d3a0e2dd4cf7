package mongostore

import (
	"context"
	"errors"
	"slices"

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
// setting errs: write writes the blocks whose keys are set, the items of
// alloc with numbers allocated by the batch, and one is the single
// call of an item the batch leaves to it.
func (s *Store[T, K]) countedMany(ctx context.Context, op string, ts []*T, errs []error,
	write func(ctx context.Context, ts []*T, alloc []bool, errs []error), one func(context.Context, *T) error) {
	refused := make([]bool, len(ts))
	ids := make([]K, len(ts))
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
		refused[i] = errs[i] != nil
		if !refused[i] {
			ids[i] = *s.d.ID(t)
		}
	}
	// keys are the items' block keys, allocated or given; single the
	// items left to the single Create.
	keys := make([]*K, len(ts))
	var single []int
	scopes := runtime.CounterScopes(s.d.Counter, ids, refused)
	var raises []mongo.WriteModel
	var raised [][]int // per raise, its scope's items with explicit numbers
	for _, cs := range scopes {
		counter, _ := s.counterID(cs.Key)
		if len(cs.Alloc) > 0 {
			last, err := s.allocateMany(ctx, counter, len(cs.Alloc))
			if err != nil {
				single = append(single, cs.Alloc...)
			} else {
				single = append(single, cs.Place(s.d.Counter, ids, last, keys)...)
			}
		}
		if cs.Raise > 0 {
			raises = append(raises, mongo.NewUpdateOneModel().SetFilter(ByID(counter)).
				SetUpdate(bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: cs.Raise}}}}).SetUpsert(true))
			raised = append(raised, cs.Given)
		}
	}
	if len(raises) > 0 {
		runtime.RoundTrip(ctx)
		_, err := s.counters.BulkWrite(ctx, raises, options.BulkWrite().SetOrdered(false))
		failed := map[int]bool{}
		var bwe mongo.BulkWriteException
		switch {
		case errors.As(err, &bwe) && len(bwe.WriteErrors) > 0 && bwe.WriteConcernError == nil:
			for _, we := range bwe.WriteErrors {
				failed[we.Index] = true
			}
		case err != nil:
			for r := range raises {
				failed[r] = true
			}
		}
		for r, given := range raised {
			for _, i := range given {
				if failed[r] {
					single = append(single, i) // raised by its single call
				} else {
					keys[i] = &ids[i]
				}
			}
		}
	}
	// The blocks, on copies with their keys: a failed item keeps its key
	// as given.
	at, cs := s.d.Keyed(ts, keys)
	cerrs := make([]error, len(cs))
	alloc := make([]bool, len(cs))
	for j, i := range at {
		_, n := s.d.Counter.Split(ids[i])
		alloc[j] = n == 0
	}
	if len(cs) > 0 {
		write(ctx, cs, alloc, cerrs)
	}
	for j, i := range at {
		err := cerrs[j]
		if alloc[j] && errors.Is(err, errKeyInUse) {
			single = append(single, i) // a number given explicitly: the next one
			continue
		}
		if errs[i] = err; err == nil {
			*ts[i] = *cs[j]
		}
	}
	// In slice order, as the single calls would take their numbers.
	slices.Sort(single)
	for _, i := range single {
		errs[i] = one(ctx, ts[i])
	}
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

// allocateMany increments counter id by n and returns its new value, the
// last of the n numbers allocated, in one findAndModify.
func (s *Store[T, K]) allocateMany(ctx context.Context, id string, n int) (int64, error) {
	var c counterDoc
	runtime.RoundTrip(ctx)
	err := s.counters.FindOneAndUpdate(ctx, ByID(id), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(n)}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&c)
	return c.N, err
}
