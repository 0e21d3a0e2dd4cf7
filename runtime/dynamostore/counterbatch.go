package dynamostore

import (
	"context"
	"errors"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// CreateMany and PutMany of an aggregate with a counter (createCounted,
// putCounted; counted): the items are checked as the single calls check
// them before their counters move (fitsBeforeCounter: a refused item
// takes no number), then each counter scope moves once for the batch:
// one UpdateItem ADD by the number of its items to allocate (a zero
// number: for a Put too, as the single Put allocates it), which take the
// numbers up to the result in slice order (runtime.CounterScopes), and
// one raise to the largest number its items give explicitly. The blocks
// are then written with their keys as the batch writes blocks without a
// counter: in transactions where the endpoint has them (txCreateMany,
// txPutMany), else the single conditional writes (BatchWriteItem takes
// no condition), concurrently where the order cannot matter, without
// moving a counter again. As with the single calls, a number whose write
// fails stays allocated (a gap), and an allocated number whose block
// exists (given explicitly before) and refuses the write as a duplicate
// makes its item the single call after the batch, which takes the next
// free one; so does an item whose counter could not move by the batch's
// count (past the largest number), whose single call says why.

// createCounted is CreateMany with a counter.
func (s *Store[T, K]) createCounted(ctx context.Context, ts []*T) []error {
	return s.counted(ctx, "Create", ts, func(cs []*T) []error {
		if on, err := s.Transactions(ctx); err == nil && on {
			return s.txCreateMany(ctx, cs)
		}
		return s.each(ctx, len(s.ordered(cs)) > 0, len(cs), func(j int) error {
			if err := s.create(ctx, cs[j]); err != nil {
				return err
			}
			s.d.SetVersion(cs[j], 1)
			return nil
		})
	}, func(t *T) error { return s.Create(ctx, t) })
}

// putCounted is PutMany with a counter: as createCounted, the blocks
// written as PutMany writes blocks without a counter (txPutMany, else the
// single conditional Puts), each expecting the version its item holds.
func (s *Store[T, K]) putCounted(ctx context.Context, ts []*T) []error {
	return s.counted(ctx, "Put", ts, func(cs []*T) []error {
		if on, err := s.Transactions(ctx); err == nil && on {
			return s.txPutMany(ctx, cs)
		}
		return s.each(ctx, len(s.ordered(cs)) > 0, len(cs), func(j int) error {
			want := s.d.VersionOf(cs[j])
			if err := s.put(ctx, cs[j], want); err != nil {
				return err
			}
			s.d.SetVersion(cs[j], want+1)
			return nil
		})
	}, func(t *T) error { return s.Put(ctx, t) })
}

// counted is a batch op (CreateMany, PutMany) of ts with a counter: the
// items are checked as the single calls check them before their counters
// move, then runtime.CountedMany moves the counters once per scope and
// write writes the blocks, copies of the items with their keys, without
// moving a counter; single is the item's single call, for the items the
// batch leaves to it.
func (s *Store[T, K]) counted(ctx context.Context, op string, ts []*T, write func([]*T) []error, single func(*T) error) []error {
	errs := make([]error, len(ts))
	for i, t := range ts {
		if errs[i] = bsonval.CheckBlock(op, s.d, t, MaxDepth); errs[i] == nil {
			errs[i] = s.fitsBeforeCounter(op, t)
		}
	}
	runtime.CountedMany(ctx, s.d, op, ts, errs, batchCounters[T, K]{s},
		func(_ context.Context, cs []*T, _ []bool) []error { return write(cs) },
		func(ctx context.Context, t *T, err error) bool {
			return errors.Is(err, runtime.ErrDuplicate) && s.exists(ctx, *s.d.ID(t))
		},
		func(_ context.Context, t *T) error { return single(t) })
	return errs
}

// batchCounters are the store's counters as runtime.CountedMany moves
// them: one UpdateItem ADD per scope to allocate, one conditional
// UpdateItem per scope to raise.
type batchCounters[T any, K comparable] struct{ s *Store[T, K] }

// AllocateMany is allocateMany.
func (b batchCounters[T, K]) AllocateMany(ctx context.Context, op string, key K, n int) (int64, error) {
	return b.s.allocateMany(ctx, op, key, n)
}

// RaiseMany raises each scope's counter with its own UpdateItem.
func (b batchCounters[T, K]) RaiseMany(ctx context.Context, op string, keys []K) []error {
	errs := make([]error, len(keys))
	for r, key := range keys {
		errs[r] = b.s.raise(ctx, op, key)
	}
	return errs
}

// allocateMany adds n to the counter of id's scope with an atomic ADD, on
// condition that it stays within the largest number, and returns its new
// value, the last of the n numbers allocated; past the largest number,
// runtime.ErrOverflow.
func (s *Store[T, K]) allocateMany(ctx context.Context, op string, id K, n int) (int64, error) {
	key, _ := s.counterKey(id)
	out, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.counters), Key: key,
		UpdateExpression:          aws.String("ADD #n :add"),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n <= :most"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":add": num(int64(n)), ":most": num(math.MaxInt64 - int64(n))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if condFailed(err) {
		return 0, runtime.Fail(op, s.d.Aggregate, nil, runtime.ErrOverflow, nil)
	}
	if err != nil {
		return 0, wrap(op, s.d.Aggregate, nil, err)
	}
	last, err := intOf(out.Attributes["n"])
	if err != nil {
		return 0, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	return last, nil
}
