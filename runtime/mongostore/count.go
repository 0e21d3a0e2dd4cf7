package mongostore

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Counts (runtime.CountStore). The collection holds one document per
// block and nothing else, so Count is one countDocuments({}). A native
// lookup's index is kept by the server in the write of its document:
// CountBy is one countDocuments with the filter ListBy's find has
// (nativeQuery), which the lookup's index serves; a multikey index
// matches a document once, as ListBy lists it once per value asked for.
// An index-table lookup may hold stale entries (a write that crashed, one
// in flight), which only reading the blocks tells apart: CountBy declines
// and runtime.Repo counts through the listing's verified reads.
//
// An aggregate with an expires field is counted the same way, the filter
// leaving out the documents expired at the repository's clock (liveFilter):
// the expires entry is a top-level date field, which the filter reads as
// runtime.Desc.Expired does (set, and not after now), whether or not the
// TTL monitor has removed them yet.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore with one countDocuments.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if err := s.settle(ctx, op); err != nil {
		return 0, false, err
	}
	if l != nil && s.m().tables[l.Name] {
		return 0, false, nil
	}
	filter := bson.D{}
	if l != nil {
		f, _, empty, err := s.nativeQuery(l, rng, nil, false)
		if err != nil {
			return 0, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
		}
		if empty {
			return 0, true, nil
		}
		filter = f
	}
	return s.countLive(ctx, op, filter, now)
}

// countLive counts the documents filter matches that are not expired at
// now, with one countDocuments.
func (s *Store[T, K]) countLive(ctx context.Context, op string, filter bson.D, now time.Time) (int64, bool, error) {
	if s.d.Expires != nil {
		filter = s.liveFilter(filter, now)
	}
	runtime.RoundTrip(ctx)
	n, err := s.coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	return n, true, nil
}

var _ runtime.ScopeCountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// CountScope implements runtime.ScopeCountStore with one countDocuments
// of the filter ListScope's find has.
func (s *Store[T, K]) CountScope(ctx context.Context, op string, scope K, now time.Time) (int64, bool, error) {
	filter, _, err := s.scopeFilter(op, scope, 0, false)
	if err != nil {
		return 0, false, err
	}
	return s.countLive(ctx, op, filter, now)
}

// liveFilter is filter narrowed to the documents not expired at now:
// those whose expires field is missing, not a date, the zero time (a
// date in year 1, which the driver writes for time.Time{}) or after now.
// A date is stored to the millisecond and now is sent truncated to it,
// so that "not after now" is exact: a stored time (whole milliseconds)
// is at most now exactly when it is at most now truncated.
func (s *Store[T, K]) liveFilter(filter bson.D, now time.Time) bson.D {
	key := s.d.Expires.Key
	live := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: key, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$lte", Value: now}}}}}},
		bson.D{{Key: key, Value: time.Time{}}},
	}}}
	if len(filter) == 0 {
		return live
	}
	return bson.D{{Key: "$and", Value: bson.A{filter, live}}}
}
