package dynamostore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
)

// elemChunk is how many elements one projection names (expressions are
// limited to 4 KB).
const elemChunk = 100

// ReadElems reads elements of partition f of block id from index start
// on: GetItem calls projecting f[start], f[start+1], ... (and the count),
// so that the other elements are not read.
func (s *Store[T, K]) ReadElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, fn func(runtime.Decoder) error) (bool, error) {
	read := 0
	for {
		want := min(n-read, elemChunk)
		e := newExpr()
		fk := e.name(f.Key)
		proj := []string{e.name(IDAttr), e.name(LenAttr) + "." + fk}
		for i := range want {
			proj = append(proj, fmt.Sprintf("%s[%d]", fk, start+read+i))
		}
		item, err := s.getItem(ctx, id, strings.Join(proj, ", "), e)
		if err != nil {
			return false, wrap(op, s.d.Aggregate, id, err)
		}
		if item == nil {
			return false, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		count := int(lenOf(item, f.Key))
		var elems []types.AttributeValue
		if l, ok := item[f.Key].(*types.AttributeValueMemberL); ok {
			elems = l.Value
		}
		var dec decoder
		for _, av := range elems {
			if start+read >= count || read == n {
				break
			}
			dec.av = av
			if err := fn(&dec); err != nil {
				return false, runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
			read++
		}
		if read == n || start+read >= count || len(elems) < want {
			return start+read < count, nil
		}
	}
}

// position decodes a listing position (an encoded block key).
func (s *Store[T, K]) position(after []byte) (K, error) {
	k, err := s.readKey(after)
	if err != nil {
		return k, fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
	}
	return k, nil
}

// ReadBlocks reads up to n blocks in the table's scan order after the
// block whose encoded key is after: Scan pages, resumed from the block's
// key (DynamoDB's ExclusiveStartKey).
func (s *Store[T, K]) ReadBlocks(ctx context.Context, op string, after []byte, n int) ([]*T, []byte, bool, error) {
	var start map[string]types.AttributeValue
	if after != nil {
		k, err := s.position(after)
		if err != nil {
			return nil, nil, false, err
		}
		start = s.key(k)
	}
	var items []*T
	for {
		out, err := s.c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start, Limit: aws.Int32(int32(n + 1 - len(items))), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, nil, false, wrap(op, s.d.Aggregate, nil, err)
		}
		for _, item := range out.Items {
			t, err := s.decode(item)
			if err != nil {
				if len(items) == n {
					return items, s.d.Keys.Bytes(*s.d.ID(items[n-1])), true, nil // the next page's
				}
				// The blocks before it, and its position to resume after.
				id, _ := s.keyOf(item[IDAttr])
				return items, s.d.Keys.Bytes(id), true, runtime.Unreadable(op, s.d.Aggregate, id, err)
			}
			items = append(items, t)
		}
		if len(items) > n || len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last []byte
	if len(items) > 0 {
		last = s.d.Keys.Bytes(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// lookupIndex finds a lookup's position.
func (s *Store[T, K]) lookupIndex(l *runtime.Lookup[T]) int {
	for i, x := range s.lookups {
		if x == l || x.Name == l.Name {
			return i
		}
	}
	panic("dynamostore: " + s.d.Aggregate + " has no lookup " + l.Name)
}

// drop removes a stale index item a read met, once it is older than
// StaleAfter and unless it changed since.
func (s *Store[T, K]) drop(ctx context.Context, i int, e entry) {
	if !stale(e.s) {
		return
	}
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	_, _ = s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.index), Key: s.indexKey(i, e.k),
		ConditionExpression:       aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "s"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": num(e.s)},
	})
}

// ReadLookup reads aggregates through lookup l: a Query of the lookup's
// partition of the index table in sort key order, (value, block key),
// from the start of rng (or after position after); the blocks in one
// BatchGetItem, each verified against its index item (stale items are
// skipped).
func (s *Store[T, K]) ReadLookup(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int) ([]*T, []byte, bool, error) {
	i := s.lookupIndex(l)
	r := *rng
	r.After = after
	start, end := r.Start(), r.To
	if len(start) > MaxIndexKeyBytes {
		// Just after a key of the limit's length: the next key that can
		// be stored, so that the condition stays within the sort key limit.
		start = (&runtime.KeyRange{From: start, To: end}).Within(MaxIndexKeyBytes).From
	}
	items := make([]*T, 0, min(n, 64))
	var keys []string
	fail := func(err error) ([]*T, []byte, bool, error) { return nil, nil, false, wrap(op, s.d.Aggregate, nil, err) }
	for len(items) <= n && bytes.Compare(start, end) < 0 {
		want := n + 1 - len(items)
		// One condition on the sort key: BETWEEN is inclusive, so an item
		// at end itself is left out below; binary values cannot be empty.
		keyCond := "#p = :p AND #k BETWEEN :a AND :b"
		vals := map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: l.Name},
			":a": &types.AttributeValueMemberB{Value: start},
			":b": &types.AttributeValueMemberB{Value: end},
		}
		if len(start) == 0 {
			keyCond = "#p = :p AND #k < :b"
			delete(vals, ":a")
		}
		out, err := s.c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.index), ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(want)),
			KeyConditionExpression:    aws.String(keyCond),
			ExpressionAttributeNames:  map[string]string{"#p": "p", "#k": "k"},
			ExpressionAttributeValues: vals,
		})
		if err != nil {
			return fail(err)
		}
		var entries []entry
		for _, it := range out.Items {
			if e := entryOf(it); e.k < string(end) {
				entries = append(entries, e)
			}
		}
		if len(entries) == 0 {
			break
		}
		ids := make([]K, 0, len(entries))
		for _, e := range entries {
			id, err := s.keyOf(e.id)
			if err != nil {
				return fail(fmt.Errorf("index item %s %s: %w", s.lookupName(i), describeKey([]byte(e.k)), err))
			}
			ids = append(ids, id)
		}
		blocks, err := s.getMany(ctx, op, ids)
		if err != nil {
			return fail(err)
		}
		for j, e := range entries {
			if t, ok := blocks[ids[j]]; ok {
				if _, held := slices.BinarySearch(s.indexKeys(i, ids[j], t), e.k); held {
					items, keys = append(items, t), append(keys, e.k)
					continue
				}
			}
			s.drop(ctx, i, e)
		}
		start = append([]byte(entries[len(entries)-1].k), 0)
		if len(out.Items) < want && len(out.LastEvaluatedKey) == 0 {
			break
		}
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last []byte
	if len(items) > 0 {
		last = []byte(keys[len(items)-1])
	}
	return items, last, more, nil
}

// GetBy reads the aggregate holding value of unique lookup l: one
// GetItem of the index item, one of the block, verified.
func (s *Store[T, K]) GetBy(ctx context.Context, op string, l *runtime.Lookup[T], value []byte) (*T, error) {
	i := s.lookupIndex(l)
	notFound := runtime.FailAt(op, s.d.Aggregate, nil, describeKey(value), runtime.ErrNotFound, nil)
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.index), Key: s.indexKey(i, string(value)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, wrap(op, s.d.Aggregate, nil, err)
	}
	if len(out.Item) == 0 {
		return nil, notFound
	}
	e := entryOf(out.Item)
	id, err := s.keyOf(e.id)
	if err != nil {
		return nil, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil {
		return nil, wrap(op, s.d.Aggregate, id, err)
	}
	if item != nil {
		t, err := s.decode(item)
		if err != nil {
			return nil, runtime.Unreadable(op, s.d.Aggregate, id, err)
		}
		if slices.Contains(s.indexKeys(i, id, t), e.k) {
			return t, nil
		}
	}
	s.drop(ctx, i, e)
	return nil, notFound
}

// ReadScope reads the blocks of one counter scope in number order after
// number after: a Query of the scope index (ScopeLookup), whose sort keys
// are the block keys, from the scope's number after+1 to the scope's end,
// whatever the gaps.
func (s *Store[T, K]) ReadScope(ctx context.Context, op string, scope K, after int64, n int) ([]*T, int64, bool, error) {
	prefix, _ := s.d.Counter.Split(scope)
	from := s.d.Keys.Bytes(s.d.Counter.With(scope, max(after+1, 1)))
	rng := &runtime.KeyRange{From: from, To: runtime.TupleEnd(prefix)}
	items, _, more, err := s.ReadLookup(ctx, op, s.lookups[len(s.lookups)-1], rng, nil, n)
	if err != nil {
		return nil, 0, false, err
	}
	var last int64
	if len(items) > 0 {
		_, last = s.d.Counter.Split(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// Repair rebuilds the index table from the blocks: it scans every block,
// then the index items of every lookup, removes the items no block holds
// and writes the missing ones. A unique value held by several blocks
// stays with the first in block-key order; the others are reported as
// conflicts. Run it while nothing else writes the collection.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	var rep runtime.RepairReport
	if s.index == "" {
		return rep, nil
	}
	fail := func(err error) (runtime.RepairReport, error) { return rep, wrap("Repair", s.d.Aggregate, nil, err) }
	type holder struct {
		id  K
		key []byte
		inc int64
	}
	want := make([]map[string]holder, len(s.lookups))
	for i := range want {
		want[i] = map[string]holder{}
	}
	var blocks []holder
	var values []*T
	unreadable := map[K]bool{} // blocks whose items are left alone
	var start map[string]types.AttributeValue
	for {
		out, err := s.c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fail(err)
		}
		for _, item := range out.Items {
			t, err := s.decode(item)
			if err != nil {
				id, _ := s.keyOf(item[IDAttr])
				rep.AddUnreadable(s.d.Aggregate, id, err)
				unreadable[id] = true
				continue
			}
			inc, _ := intOf(item[IncAttr])
			id := *s.d.ID(t)
			blocks = append(blocks, holder{id: id, key: s.d.Keys.Bytes(id), inc: inc})
			values = append(values, t)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	order := make([]int, len(blocks))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(blocks[a].key, blocks[b].key) })
	for _, j := range order {
		h := blocks[j]
		rep.Aggregates++
		for i, l := range s.lookups {
			for _, k := range s.indexKeys(i, h.id, values[j]) {
				if first, taken := want[i][k]; taken && l.Unique {
					rep.AddConflict(s.lookupName(i), []byte(k), first.key, h.key)
					continue
				}
				want[i][k] = h
			}
		}
	}
	now := time.Now().UnixNano()
	put := func(i int, k string, h holder, cond string, vals map[string]types.AttributeValue) (bool, error) {
		item := s.indexKey(i, k)
		item["id"], item["inc"], item["s"], item["w"] = s.KeyAttr(h.id), num(h.inc), num(now), num(0)
		in := &dynamodb.PutItemInput{TableName: aws.String(s.index), Item: item, ConditionExpression: aws.String(cond), ExpressionAttributeValues: vals,
			ExpressionAttributeNames: map[string]string{"#s": "s"}}
		if vals == nil {
			in.ExpressionAttributeNames = map[string]string{"#k": "k"}
		}
		_, err := s.c.PutItem(ctx, in)
		if condFailed(err) {
			return false, nil
		}
		return err == nil, err
	}
	for i, l := range s.lookups {
		seen := map[string]bool{}
		var qstart map[string]types.AttributeValue
		for {
			out, err := s.c.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(s.index), ConsistentRead: aws.Bool(true), ExclusiveStartKey: qstart,
				KeyConditionExpression:    aws.String("#p = :p"),
				ExpressionAttributeNames:  map[string]string{"#p": "p"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: l.Name}},
			})
			if err != nil {
				return fail(err)
			}
			for _, it := range out.Items {
				e := entryOf(it)
				owner, ok := want[i][e.k]
				id, kerr := s.keyOf(e.id)
				switch {
				case !ok && kerr == nil && unreadable[id]:
					// An unreadable block's: left as it is.
				case ok && kerr == nil && owner.id == id && owner.inc == e.inc:
					seen[e.k] = true
				case ok:
					// A unique value recorded for the wrong block, or an
					// item of an earlier incarnation of the block.
					done, err := put(i, e.k, owner, "#s = :s", map[string]types.AttributeValue{":s": num(e.s)})
					if err != nil {
						return fail(err)
					}
					if done {
						seen[e.k] = true
						rep.Removed++
						rep.Added++
					}
				default:
					_, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
						TableName: aws.String(s.index), Key: s.indexKey(i, e.k),
						ConditionExpression:       aws.String("#s = :s"),
						ExpressionAttributeNames:  map[string]string{"#s": "s"},
						ExpressionAttributeValues: map[string]types.AttributeValue{":s": num(e.s)},
					})
					if err == nil {
						rep.Removed++
					} else if !condFailed(err) {
						return fail(err)
					}
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			qstart = out.LastEvaluatedKey
		}
		var missing []string
		for k := range want[i] {
			if !seen[k] {
				missing = append(missing, k)
			}
		}
		slices.Sort(missing)
		for _, k := range missing {
			done, err := put(i, k, want[i][k], "attribute_not_exists(#k)", nil)
			if err != nil {
				return fail(err)
			}
			if done {
				rep.Added++
			}
		}
	}
	return rep, nil
}

// Layout lists the entries of block id as its item holds them: one per
// attribute ("" for _root), a partition's count (from _len) and one per
// element of its list.
func (s *Store[T, K]) Layout(ctx context.Context, id K) ([]string, error) {
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil {
		return nil, wrap("Layout", s.d.Aggregate, id, err)
	}
	if item == nil {
		return nil, runtime.Fail("Layout", s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	var out []string
	for k, av := range item {
		switch k {
		case IDAttr, SeqAttr, IncAttr, WriteAttr:
		case RootAttr:
			out = append(out, "")
		case LenAttr:
			if m, ok := av.(*types.AttributeValueMemberM); ok {
				for f := range m.Value {
					out = append(out, f)
				}
			}
		default:
			if l, ok := av.(*types.AttributeValueMemberL); ok {
				if f := s.d.Field(k); f != nil && f.Kind == runtime.KindPartition {
					for j := range l.Value {
						out = append(out, f.ElemKey(j))
					}
					continue
				}
			}
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}
