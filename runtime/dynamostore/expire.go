package dynamostore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/noamgen/noamgen/runtime"
)

// Expiry. The item of a block whose expires entry is set holds TTLAttr,
// its expires time in Unix seconds rounded up, and the aggregate table
// has DynamoDB's TTL on that attribute (Ensure): DynamoDB deletes the
// item some time after it passes (within days), never before the
// repository's clock (at its own resolution, milliseconds) has it
// expired. Every write that sets the expires entry sets the attribute,
// and removes it when the entry becomes zero. DynamoDB deletes the item
// alone: its index items stay behind. Reads verify them, a unique claim
// of a block that is gone is taken over by the lookup protocol once it is
// older than StaleAfter, and Repair removes them. DeleteExpired removes a
// block the repository's clock says has expired before DynamoDB does.
// dynalite, the test server, has no TTL (UpdateTimeToLive): Ensure goes
// on without it there.

// TTLAttr is the attribute DynamoDB's TTL reads: the expires time in
// Unix seconds (rounded up), on items whose expires entry is set.
const TTLAttr = "_ttl"

// errKept is what delete returns when its condition keeps the block.
var errKept = errors.New("dynamostore: the block is kept")

// deleteCond is the condition of a conditional delete: the block (read
// whole) is kept when keep reports true; the delete is conditional on
// the block still holding the expires entry it was decided on.
type deleteCond[T any] struct {
	keep func(*T) bool
}

// ttl is the TTL attribute of expires time exp (nil for the zero time).
func ttl(exp time.Time) types.AttributeValue {
	if exp.IsZero() {
		return nil
	}
	sec := exp.Unix()
	if exp.Nanosecond() > 0 {
		sec++
	}
	return num(sec)
}

// setTTL adds to w the TTL attribute of expires time exp, or its removal.
func setTTL(w *update, exp time.Time) {
	if v := ttl(exp); v != nil {
		w.set = append(w.set, w.e.name(TTLAttr)+" = "+w.e.value(v))
		return
	}
	w.remove = append(w.remove, w.e.name(TTLAttr))
}

// expiresPath is the path of the expires entry in an item, with its
// names in e: its attribute, or its member of the root entry under EAO.
func (s *Store[T, K]) expiresPath(e *expr) string {
	if s.d.EAO {
		return e.name(RootAttr) + "." + e.name(s.d.Expires.Key)
	}
	return e.name(s.d.Expires.Key)
}

// expiresOf returns the stored expires entry of item (nil: none).
func (s *Store[T, K]) expiresOf(item map[string]types.AttributeValue) types.AttributeValue {
	if s.d.EAO {
		return rootMember(item, s.d.Expires.Key)
	}
	return item[s.d.Expires.Key]
}

// ensureTTL turns on DynamoDB's TTL on TTLAttr of the aggregate table,
// unless it is on; a server without TTL (dynalite) is no error.
func (s *Store[T, K]) ensureTTL(ctx context.Context) error {
	if s.d.Expires == nil {
		return nil
	}
	out, err := s.c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.table)})
	if err != nil {
		return err
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == TTLAttr &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = s.c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(s.table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttr), Enabled: aws.Bool(true)}})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "UnknownOperation") {
		return nil // no TTL on this server: Sweep removes expired blocks
	}
	return err
}

// DeleteExpired removes block id and its index items, as Delete does, if
// its expires entry is set and not after now: the DeleteItem is
// conditional on the block as read (its stamp, with lookups; its expires
// entry, without).
func (s *Store[T, K]) DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	if s.d.Expires == nil {
		return false, nil
	}
	err := s.delete(ctx, "DeleteExpired", id, &deleteCond[T]{keep: func(t *T) bool { return !s.d.Expired(t, now) }})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errKept), errors.Is(err, runtime.ErrNotFound):
		return false, nil
	}
	return false, err
}

// deleteRead is the delete of a block without index items on condition
// cond: the block is read, and the DeleteItem is conditional on its
// expires entry as read.
func (s *Store[T, K]) deleteRead(ctx context.Context, op string, id K, cond *deleteCond[T]) error {
	for attempt := range runtime.MaxAttempts {
		st, err := s.readFound(ctx, op, id, attempt)
		if err != nil {
			return err
		}
		if cond.keep(st.t) {
			return errKept
		}
		e := newExpr()
		c := s.expiresPath(e) + " = " + e.value(s.expiresOf(st.item))
		var sent sends
		_, err = s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: s.key(id),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		}, sent.count)
		if condFailed(err) {
			continue
		}
		if err != nil {
			return s.writeErr(op, id, &sent, err)
		}
		return nil
	}
	return s.contended(op, id)
}

// notExpired fails with runtime.ErrNotFound when item, read with the
// expires entry projected, holds one that has passed by the store's
// clock.
func (s *Store[T, K]) notExpired(op string, id K, item map[string]types.AttributeValue) error {
	av := s.expiresOf(item)
	if av == nil {
		return nil
	}
	return s.d.NotExpired(op, id, s.d.Expires, &decoder{av: av}, s.now())
}
