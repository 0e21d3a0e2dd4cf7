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
// eventually consistent: its item count may lag the blocks.
//
// For an aggregate with an expires field, Count's Scan has a
// FilterExpression that leaves out the items expired at the repository's
// clock (liveFilter): DynamoDB still reads every item, and counts those
// the filter keeps. The expires entry is a string in RFC 3339 with
// milliseconds (UTC, value.go), whose order is the times' order, so the
// filter is exact where runtime.Desc.Expired decides; TTLAttr, rounded up
// to the second, would not be.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore for the blocks of the collection.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if l != nil {
		return 0, false, nil
	}
	in := dynamodb.ScanInput{TableName: aws.String(s.table), Select: types.SelectCount, ConsistentRead: aws.Bool(true)}
	if s.d.Expires != nil {
		e := newExpr()
		filter, ok := s.liveFilter(e, now)
		if !ok {
			return 0, false, nil
		}
		in.FilterExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = aws.String(filter), e.names, e.values
	}
	s.scan(&in)
	var n int64
	var start map[string]types.AttributeValue
	for {
		in.ExclusiveStartKey = start
		out, err := s.c.Scan(ctx, &in)
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

// liveFilter is the FilterExpression, with its names and values in e, of
// the items not expired at now (runtime.Desc.Expired): the expires entry
// is missing, the zero time, not a time the decoder reads (a block the
// listing counts as unreadable), or after now. The entry is where decode
// reads it: under ETF its attribute, else its member of an EAO root entry
// (a block an EAO layout wrote); under EAO the root's member, else the
// attribute (a block an ETF layout wrote). ok is false when now has no
// time string of the stored width (a year outside 0 to 9999).
func (s *Store[T, K]) liveFilter(e *expr, now time.Time) (filter string, ok bool) {
	at := time.UnixMilli(now.UnixMilli()).UTC().Format(timeLayout) // stored times are whole milliseconds
	zero := time.Time{}.Format(timeLayout)
	if len(at) != len(zero) {
		return "", false
	}
	str, width, zeroV, nowV := e.value(&types.AttributeValueMemberS{Value: "S"}), e.value(num(int64(len(zero)))),
		e.value(&types.AttributeValueMemberS{Value: zero}), e.value(&types.AttributeValueMemberS{Value: at})
	expired := func(p string) string {
		return "(attribute_type(" + p + ", " + str + ") AND size(" + p + ") = " + width + " AND " + p + " <> " + zeroV + " AND " + p + " <= " + nowV + ")"
	}
	attr := e.name(s.d.Expires.Key)
	member := e.name(RootAttr) + "." + attr
	first, second := attr, member
	if s.d.EAO {
		first, second = member, attr
	}
	return "NOT (" + expired(first) + " OR (attribute_not_exists(" + first + ") AND " + expired(second) + "))", true
}
