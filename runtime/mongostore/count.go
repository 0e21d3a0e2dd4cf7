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
// and runtime.Repo counts through the listing's verified reads. So does
// every count of an aggregate with an expires field.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore with one countDocuments.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if s.d.Expires != nil || (l != nil && s.tables[l.Name]) {
		return 0, false, nil
	}
	filter := bson.D{}
	if l != nil {
		f, _, empty, err := s.nativeQuery(l, rng, nil)
		if err != nil {
			return 0, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
		}
		if empty {
			return 0, true, nil
		}
		filter = f
	}
	runtime.RoundTrip(ctx)
	n, err := s.coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	return n, true, nil
}
