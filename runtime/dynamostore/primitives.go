package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// prims are the index.Primitives of a Store, which the lookup engine
// (runtime/index) runs the protocol, the verified reads and Repair over:
// every method is one request (or one batch) of the block table or the
// index table, without transactions.
//
// An index item is keyed by p (the lookup's name, S) and k (the index
// key, B) and holds id (the block key, as the block's _id attribute), inc,
// s and w (index.Item's Inc, Seq and W, N). A block's stamp is its _seq
// and _inc attributes; a block without them has the zero stamp.
type prims[T any, K comparable] struct{ s *Store[T, K] }

var _ index.Primitives[*struct{}] = prims[struct{}, string]{}

// MaxBatch is the most keys one BatchGetItem reads.
const MaxBatch = 100

// blockAttr is the _id attribute of the block with encoded key b.
func (p prims[T, K]) blockAttr(b []byte) (types.AttributeValue, error) {
	if p.s.kind == keyBytes {
		return &types.AttributeValueMemberB{Value: b}, nil
	}
	k, err := p.s.readKey(b)
	if err != nil {
		return nil, fmt.Errorf("block key %x: %w", b, err)
	}
	return p.s.KeyAttr(k), nil
}

// blockKey is the encoded key of the block with _id attribute av.
func (p prims[T, K]) blockKey(av types.AttributeValue) ([]byte, error) {
	if b, ok := av.(*types.AttributeValueMemberB); ok && (p.s.kind == keyBytes || p.s.one != nil) {
		return b.Value, nil
	}
	k, err := p.s.keyOf(av)
	if err != nil {
		return nil, err
	}
	return p.s.d.Keys.Bytes(k), nil
}

// itemKey is the primary key of index item k of lookup l.
func (p prims[T, K]) itemKey(l int, k []byte) map[string]types.AttributeValue {
	return p.s.indexKey(p.s.lookups[l].Name, k)
}

// encode is the index item of it in lookup l.
func (p prims[T, K]) encode(l int, it index.Item) (map[string]types.AttributeValue, error) {
	id, err := p.blockAttr(it.Block)
	if err != nil {
		return nil, err
	}
	item := p.itemKey(l, it.Key)
	item["id"], item["inc"], item["s"], item["w"] = id, num(it.Inc), num(it.Seq), num(it.W)
	return item, nil
}

// decode reads an index item.
func (p prims[T, K]) decode(item map[string]types.AttributeValue) (index.Item, error) {
	var it index.Item
	if b, ok := item[p.s.indexSort()].(*types.AttributeValueMemberB); ok {
		it.Key = b.Value
	}
	blk, err := p.blockKey(item["id"])
	if err != nil {
		return it, fmt.Errorf("index item %s: %w", runtime.FormatKey(it.Key), err)
	}
	it.Block = blk
	it.Inc, _ = intOf(item["inc"])
	it.Seq, _ = intOf(item["s"])
	it.W, _ = intOf(item["w"])
	return it, nil
}

// marked is the condition that an index item exists with mark w (an item
// written without one has mark 0).
func marked(e *expr, sort string, w int64) string {
	if w == 0 {
		return fmt.Sprintf("attribute_exists(%s) AND (attribute_not_exists(%s) OR %s = %s)", e.name(sort), e.name("w"), e.name("w"), e.value(num(0)))
	}
	return e.name("w") + " = " + e.value(num(w))
}

// cond is the condition expression of c on an index item.
func (p prims[T, K]) cond(c index.Cond, e *expr) (string, error) {
	switch c.Kind {
	case index.Absent:
		return "attribute_not_exists(" + e.name(p.s.indexSort()) + ")", nil
	case index.Same:
		id, err := p.blockAttr(c.Item.Block)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s = %s AND %s = %s AND %s", e.name("id"), e.value(id), e.name("s"), e.value(num(c.Item.Seq)), marked(e, p.s.indexSort(), c.Item.W)), nil
	case index.Marked:
		return marked(e, p.s.indexSort(), c.W), nil
	case index.Held:
		id, err := p.blockAttr(c.Block)
		if err != nil {
			return "", err
		}
		s := fmt.Sprintf("%s = %s AND %s = %s", e.name("id"), e.value(id), e.name("inc"), e.value(num(c.Inc)))
		if c.Before != 0 {
			s += fmt.Sprintf(" AND %s < %s", e.name("s"), e.value(num(c.Before)))
		}
		return s, nil
	}
	return "", fmt.Errorf("dynamostore: no index item condition of kind %d", c.Kind)
}

// PutItem implements index.Primitives: one conditional PutItem. Always
// keeps the larger Seq: a PutItem on condition that the stored Seq is not
// larger, else an UpdateItem of the other attributes on condition that it
// is (DynamoDB has no max).
func (p prims[T, K]) PutItem(ctx context.Context, l int, it index.Item, c index.Cond) (bool, *index.Item, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	item, err := p.encode(l, it)
	if err != nil {
		return false, nil, err
	}
	e := newExpr()
	var cond string
	if c.Kind == index.Always {
		cond = fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", e.name(p.s.indexSort()), e.name("s"), e.value(num(it.Seq)))
	} else if cond, err = p.cond(c, e); err != nil {
		return false, nil, err
	}
	for range runtime.MaxAttempts {
		in := &dynamodb.PutItemInput{TableName: aws.String(p.s.index), Item: item,
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.valuesOrNil()}
		if c.Kind == index.Always {
			in.ReturnValues = types.ReturnValueAllOld
		}
		out, err := p.s.c.PutItem(ctx, in)
		if c.Kind != index.Always || !condFailed(err) {
			if condFailed(err) {
				return false, nil, nil
			}
			if err != nil {
				return false, nil, err
			}
			return true, p.prev(out.Attributes), nil
		}
		// A newer Seq is stored: write the rest, on condition that it
		// still is.
		u := &update{e: newExpr(), indexItem: true}
		u.set = append(u.set, u.e.name("id")+" = "+u.e.value(item["id"]), u.e.name("inc")+" = "+u.e.value(item["inc"]), u.e.name("w")+" = "+u.e.value(item["w"]))
		u.cond = append(u.cond, u.e.name("s")+" > "+u.e.value(item["s"]))
		up := u.input(p.s.index, p.itemKey(l, it.Key))
		up.ReturnValues = types.ReturnValueAllOld
		uout, err := p.s.c.UpdateItem(ctx, up)
		if condFailed(err) {
			continue // changed meanwhile
		}
		if err != nil {
			return false, nil, err
		}
		return true, p.prev(uout.Attributes), nil
	}
	return false, nil, fmt.Errorf("index item %s changed concurrently %d times in a row", runtime.FormatKey(it.Key), runtime.MaxAttempts)
}

// prev is the item a write replaced (nil: none, or one that does not
// decode, which an undo could not put back anyway).
func (p prims[T, K]) prev(old map[string]types.AttributeValue) *index.Item {
	if len(old) == 0 {
		return nil
	}
	it, err := p.decode(old)
	if err != nil {
		return nil
	}
	return &it
}

// GetItems implements index.Primitives: a GetItem for one key, a
// BatchGetItem for more (strongly consistent).
func (p prims[T, K]) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ks := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		ks[i] = p.itemKey(l, k)
	}
	raw, err := p.s.getItems(ctx, p.s.index, ks)
	if err != nil {
		return nil, err
	}
	out := make([]index.Item, 0, len(raw))
	for _, item := range raw {
		it, err := p.decode(item)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// DeleteItems implements index.Primitives: one conditional DeleteItem per
// key (BatchWriteItem takes no conditions).
func (p prims[T, K]) DeleteItems(ctx context.Context, l int, keys [][]byte, c index.Cond) (int, error) {
	e := newExpr()
	cond, err := p.cond(c, e)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		_, err := p.s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(p.s.index), Key: p.itemKey(l, k),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.valuesOrNil(),
		})
		switch {
		case err == nil:
			n++
		case !condFailed(err):
			return n, err
		}
	}
	return n, nil
}

// ScanItems implements index.Primitives: a Query of the lookup's
// partition of the index table, in sort key order (desc: backwards,
// ScanIndexForward false).
func (p prims[T, K]) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	if len(from) > MaxIndexKeyBytes {
		// Just after a key of the limit's length: the next key that can
		// be stored, so that the condition stays within the sort key limit.
		from = (&runtime.KeyRange{From: from, To: to}).Within(MaxIndexKeyBytes).From
	}
	e := newExpr()
	pa, pv := p.s.indexPart(p.s.lookups[l].Name)
	cond := e.name(pa) + " = " + e.value(pv)
	// Binary values cannot be empty; BETWEEN is inclusive, so an item at
	// to itself is left out below.
	switch {
	case len(from) > 0 && to != nil:
		if bytes.Compare(from, to) >= 0 {
			return nil, nil
		}
		cond += fmt.Sprintf(" AND %s BETWEEN %s AND %s", e.name(p.s.indexSort()), e.value(&types.AttributeValueMemberB{Value: from}), e.value(&types.AttributeValueMemberB{Value: to}))
	case len(from) > 0:
		cond += fmt.Sprintf(" AND %s >= %s", e.name(p.s.indexSort()), e.value(&types.AttributeValueMemberB{Value: from}))
	case to != nil:
		if len(to) == 0 {
			return nil, nil
		}
		cond += fmt.Sprintf(" AND %s < %s", e.name(p.s.indexSort()), e.value(&types.AttributeValueMemberB{Value: to}))
	}
	var out []index.Item
	var start map[string]types.AttributeValue
	for len(out) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := p.s.c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(p.s.index), ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(limit - len(out))),
			ExclusiveStartKey: start, KeyConditionExpression: aws.String(cond), ScanIndexForward: aws.Bool(!desc),
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		})
		if err != nil {
			return nil, err
		}
		for _, item := range res.Items {
			it, err := p.decode(item)
			if err != nil {
				return nil, err
			}
			if to != nil && bytes.Compare(it.Key, to) >= 0 {
				if desc {
					continue // BETWEEN's inclusive end, met first
				}
				return out, nil
			}
			out = append(out, it)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	return out, nil
}

// block is the engine's view of a block's item.
func (p prims[T, K]) block(item map[string]types.AttributeValue) (index.Block[*T], error) {
	key, err := p.blockKey(p.s.idAttr(item))
	if err != nil {
		return index.Block[*T]{}, err
	}
	b := index.Block[*T]{Key: key, Stamp: stampOf(item)}
	b.Value, b.Err = p.s.decode(item)
	if b.Err != nil {
		b.Value = nil
	}
	return b, nil
}

// stampOf reads the stamp of a block's item (zero where it has none).
func stampOf(item map[string]types.AttributeValue) index.Stamp {
	var st index.Stamp
	st.Seq, _ = intOf(item[SeqAttr])
	st.Inc, _ = intOf(item[IncAttr])
	return st
}

// ReadBlocks implements index.Primitives: a GetItem for one key, a
// BatchGetItem for more (strongly consistent).
func (p prims[T, K]) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[*T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ks := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		id, err := p.blockAttr(k)
		if err != nil {
			return nil, err
		}
		ks[i] = p.s.keyAt(id)
	}
	raw, err := p.s.getItems(ctx, p.s.table, ks)
	if err != nil {
		return nil, err
	}
	out := make([]index.Block[*T], 0, len(raw))
	for _, item := range raw {
		b, err := p.block(item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// stampIs adds the condition that block's stamp is st (an attribute
// that is missing counts as 0).
func stampIs(w *update, st index.Stamp) {
	e := w.e
	for _, a := range []struct {
		name string
		v    int64
	}{{SeqAttr, st.Seq}, {IncAttr, st.Inc}} {
		if a.v == 0 {
			w.cond = append(w.cond, fmt.Sprintf("(attribute_not_exists(%s) OR %s = %s)", e.name(a.name), e.name(a.name), e.value(num(0))))
		} else {
			w.cond = append(w.cond, e.name(a.name)+" = "+e.value(num(a.v)))
		}
	}
}

// FenceBlock implements index.Primitives: an UpdateItem of _seq on
// condition that the block exists with stamp old.
func (p prims[T, K]) FenceBlock(ctx context.Context, key []byte, old index.Stamp, seq int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	id, err := p.blockAttr(key)
	if err != nil {
		return false, err
	}
	w := &update{e: newExpr()}
	w.set = append(w.set, w.e.name(SeqAttr)+" = "+w.e.value(num(seq)))
	w.cond = append(w.cond, "attribute_exists("+w.e.name(p.s.keyName())+")")
	stampIs(w, old)
	_, err = p.s.c.UpdateItem(ctx, w.input(p.s.table, p.s.keyAt(id)))
	if condFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// DeleteBlock implements index.Primitives: a DeleteItem on condition that
// the block exists with stamp st.
func (p prims[T, K]) DeleteBlock(ctx context.Context, key []byte, st index.Stamp) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	id, err := p.blockAttr(key)
	if err != nil {
		return false, err
	}
	w := &update{e: newExpr()}
	w.cond = append(w.cond, "attribute_exists("+w.e.name(p.s.keyName())+")")
	stampIs(w, st)
	_, err = p.s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(p.s.table), Key: p.s.keyAt(id),
		ConditionExpression: aws.String(strings.Join(w.cond, " AND ")), ExpressionAttributeNames: w.e.names, ExpressionAttributeValues: w.e.values,
	})
	if condFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// ScanBlocks implements index.Primitives: Scan pages of the block table,
// resumed after block after (ExclusiveStartKey). DynamoDB scans in its
// own (hash) order, not in key order (index.Primitives allows it).
func (p prims[T, K]) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[*T], []byte, error) {
	var start map[string]types.AttributeValue
	if after != nil {
		id, err := p.blockAttr(after)
		if err != nil {
			return nil, nil, err
		}
		start = p.s.keyAt(id)
	}
	var out []index.Block[*T]
	for len(out) < limit {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		res, err := p.s.c.Scan(ctx, p.s.scan(&dynamodb.ScanInput{TableName: aws.String(p.s.table), ExclusiveStartKey: start, Limit: aws.Int32(int32(limit - len(out))), ConsistentRead: aws.Bool(true)}))
		if err != nil {
			return nil, nil, err
		}
		for _, item := range res.Items {
			b, err := p.block(item)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, b)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	return out, index.NextAfter(out, limit), nil
}

// Ambiguous implements index.Primitives: an error that is no reply of
// the server (a network error, a timeout, a cancelled request) may leave
// a write applied. A *runtime.Error is a definite refusal.
func (p prims[T, K]) Ambiguous(err error) bool {
	var re *runtime.Error
	return !errors.As(err, &re) && ambiguous(err)
}

// getItems reads the items with the given keys (at most MaxBatch) of
// table, strongly consistent: a GetItem for one key, a BatchGetItem for
// more.
func (s *Store[T, K]) getItems(ctx context.Context, table string, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(keys) != 1 {
		return s.batchGet(ctx, table, keys)
	}
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: keys[0], ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil, err
	}
	return []map[string]types.AttributeValue{out.Item}, nil
}

// batchGet reads the items with the given keys (at most MaxBatch) of
// table with BatchGetItem, retrying unprocessed keys.
func (s *Store[T, K]) batchGet(ctx context.Context, table string, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for attempt := 0; len(keys) > 0; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
		res, err := s.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Responses[table]...)
		keys = res.UnprocessedKeys[table].Keys
	}
	return out, nil
}
