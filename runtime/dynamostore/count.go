package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
)

// Counts (runtime.CountStore). The aggregate table holds one item per
// block and nothing else (index items, counters and the schema record are
// in tables of their own), so Count is a Scan of it with Select COUNT,
// strongly consistent, one request per 1 MB page of items: DynamoDB reads
// the items (and bills them) but returns only their number. A lookup's
// index items are kept by the lookup protocol and may be stale (a write
// that crashed, one in flight), which only reading the blocks tells
// apart: CountBy declines, and runtime.Repo counts through the listing's
// verified reads. So it does for a lookup kept in a GSI (gsi.go), which is
// eventually consistent: its item count may lag the blocks. So does Count
// for an aggregate with an expires field.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore for the blocks of the collection.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if l != nil || s.d.Expires != nil {
		return 0, false, nil
	}
	var n int64
	var start map[string]types.AttributeValue
	for {
		out, err := s.c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), Select: types.SelectCount, ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, false, wrap(op, s.d.Aggregate, nil, err)
		}
		n += int64(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, true, nil
		}
		start = out.LastEvaluatedKey
	}
}
