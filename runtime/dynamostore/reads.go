package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
// so that the other elements are not read. With desc they project the
// elements down from index start; a first page (start < 0) reads the
// count with a GetItem of its own first.
func (s *Store[T, K]) ReadElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	if desc && start < 0 {
		e := newExpr()
		item, err := s.getItem(ctx, id, e.name(s.keyName())+", "+e.name(LenAttr)+"."+e.name(f.Key), e)
		if err != nil {
			return false, wrap(op, s.d.Aggregate, id, err)
		}
		if item != nil && hasLen(item, f.Key) {
			start = int(lenOf(item, f.Key)) - 1
			if start < 0 {
				return false, nil
			}
		}
	}
	read := 0
	for {
		// The next chunk of indexes, assuming the count allows them; the
		// count read with them trims them.
		want := min(n-read, elemChunk)
		idx, _ := runtime.ElemWindow(start+read+want, start+read, want, false)
		if desc {
			idx, _ = runtime.ElemWindow(start-read+1, start-read, want, true)
		}
		e := newExpr()
		fk := e.name(f.Key)
		proj := []string{e.name(s.keyName()), e.name(LenAttr) + "." + fk}
		if s.d.Expires != nil {
			proj = append(proj, s.expiresPath(e))
		}
		for _, i := range idx {
			proj = append(proj, fmt.Sprintf("%s[%d]", fk, i))
		}
		item, err := s.getItem(ctx, id, strings.Join(proj, ", "), e)
		if err != nil {
			return false, wrap(op, s.d.Aggregate, id, err)
		}
		if item == nil {
			return false, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		if s.d.Expires != nil {
			if err := s.notExpired(op, id, item); err != nil {
				return false, err
			}
		}
		if !hasLen(item, f.Key) {
			// No count: the block holds f whole (another layout), or
			// not at all.
			next := start + read
			if desc {
				next = start - read
				if start < 0 {
					next = -1
				}
			}
			return s.readWholeElems(ctx, op, id, f, next, n-read, desc, fn)
		}
		count := int(lenOf(item, f.Key))
		var elems []types.AttributeValue
		if l, ok := item[f.Key].(*types.AttributeValueMemberL); ok {
			elems = l.Value
		}
		// The projected list holds the elements that exist (below the
		// count), in index order: reversed, in the page's order.
		var mine []int
		for _, i := range idx {
			if i < count {
				mine = append(mine, i)
			}
		}
		if desc {
			elems = slices.Clone(elems)
			slices.Reverse(elems)
		}
		var dec decoder
		for j, av := range elems[:min(len(elems), len(mine))] {
			if read == n {
				break
			}
			dec.av = av
			if err := fn(mine[j], &dec); err != nil {
				return false, runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
			read++
		}
		if desc {
			if read == n || start-read < 0 || len(elems) < len(idx) {
				return read > 0 && start-read >= 0, nil
			}
			continue
		}
		if read == n || start+read >= count || len(elems) < want {
			return start+read < count, nil
		}
	}
}

// readWholeElems is ReadElems of a block that holds partition f whole (a
// list without a count, on its own or inside the root entry of an EAO
// block), or not at all: one GetItem of the list.
func (s *Store[T, K]) readWholeElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	e := newExpr()
	fk := e.name(f.Key)
	item, err := s.getItem(ctx, id, strings.Join([]string{e.name(s.keyName()), fk, e.name(RootAttr) + "." + fk}, ", "), e)
	if err != nil {
		return false, wrap(op, s.d.Aggregate, id, err)
	}
	if item == nil {
		return false, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	av := item[f.Key]
	if av == nil {
		av = rootMember(item, f.Key)
	}
	var elems []types.AttributeValue
	switch l := av.(type) {
	case nil, *types.AttributeValueMemberNULL:
	case *types.AttributeValueMemberL:
		elems = l.Value
	default:
		return false, runtime.Unreadable(op, s.d.Aggregate, id, fmt.Errorf("entry %s: want a list, have %T", f.Key, av))
	}
	idx, more := runtime.ElemWindow(len(elems), start, n, desc)
	var dec decoder
	for _, i := range idx {
		dec.av = elems[i]
		if err := fn(i, &dec); err != nil {
			return false, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
	}
	return more, nil
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
// key (DynamoDB's ExclusiveStartKey). A Scan has no key order to reverse
// (Caps.OrderedScan is false): desc fails with runtime.ErrUnsupported.
func (s *Store[T, K]) ReadBlocks(ctx context.Context, op string, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	if desc {
		return nil, nil, false, runtime.FailAt(op, s.d.Aggregate, nil, "in descending order (a Scan is in hash order)", runtime.ErrUnsupported, nil)
	}
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
		out, err := s.c.Scan(ctx, s.scan(&dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start, Limit: s.pageLimit(n + 1 - len(items)), ConsistentRead: aws.Bool(true)}))
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
				id, _ := s.keyOf(s.idAttr(item))
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

// ReadLookup reads aggregates through lookup l (the engine's verified
// Range): a Query of the lookup's partition of the index table in sort
// key order, (value, block key), from the start of rng (or after position
// after); the blocks in one BatchGetItem, each verified against its index
// item (stale items are skipped). With desc the Query reads backwards
// (ScanIndexForward false).
func (s *Store[T, K]) ReadLookup(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	if s.gsiOf(l) != nil {
		return s.gsiRange(ctx, op, s.gsiOf(l), rng, after, n, desc)
	}
	r := *rng
	r.After = after
	return s.eng.Range(ctx, op, s.lookupIndex(l), &r, n, desc)
}

// GetBy reads the aggregate holding value of unique lookup l (the
// engine's verified Get): one GetItem of the index item, one of the block.
func (s *Store[T, K]) GetBy(ctx context.Context, op string, l *runtime.Lookup[T], value []byte) (*T, error) {
	return s.eng.Get(ctx, op, s.lookupIndex(l), value)
}

// ReadScope reads the blocks of one counter scope in number order after
// number after (desc: backwards below number after, 0: from the highest):
// a Query of the scope index (ScopeLookup), whose sort keys
// are the block keys, from the scope's number after+1 to the scope's end,
// whatever the gaps; in the single table, a Query of the scope's own
// partition (readScope).
func (s *Store[T, K]) ReadScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) ([]*T, int64, bool, error) {
	if s.one != nil {
		return s.readScope(ctx, op, scope, after, n, desc)
	}
	prefix, _ := s.d.Counter.Split(scope)
	from := s.d.Keys.Bytes(s.d.Counter.With(scope, max(after+1, 1)))
	rng := &runtime.KeyRange{From: from, To: runtime.TupleEnd(prefix)}
	if desc {
		// Below number after (0: from the highest), backwards.
		rng.From = s.d.Keys.Bytes(s.d.Counter.With(scope, 1))
		if after > 0 {
			rng.To = s.d.Keys.Bytes(s.d.Counter.With(scope, after))
		}
	}
	items, _, more, err := s.ReadLookup(ctx, op, s.lookups[len(s.lookups)-1], rng, nil, n, desc)
	if err != nil {
		return nil, 0, false, err
	}
	var last int64
	if len(items) > 0 {
		_, last = s.d.Counter.Split(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// Repair rebuilds the index table from the blocks (the engine's paged
// Repair), then writes the GSI attributes of the blocks that lack them or
// hold stale ones (gsiRepair). Run it while nothing else writes the
// collection; the build of new lookups (runtime.RepairOptions.Lookups)
// is safe while the application writes.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	var rep runtime.RepairReport
	o := runtime.RepairOptionsOf(ctx)
	// Two passes: the index engine's over the index tables, then the GSI
	// attributes'. A position the GSI pass gives (OnPage) is marked as
	// its own, so that a build resumed from it does not run the engine's
	// pass again, and one resumed from the engine's pass runs the GSI pass
	// whole: without the mark, the GSI pass of a resumed build started
	// after a position of the engine's pass and never wrote the GSI
	// attributes of the blocks before it.
	after, inGSI := cutGSIPosition(o.After)
	engine := s.eng != nil && !inGSI && s.builds(o.Lookups, s.lookups)
	if engine {
		var err error
		if rep, err = s.eng.Repair(ctx); err != nil {
			return rep, err
		}
		after = nil
	}
	g := o
	g.After = after
	if o.OnPage != nil {
		g.OnPage = func(last []byte, blocks int) error {
			if engine {
				blocks = 0 // the engine's pass counted them
			}
			return o.OnPage(append([]byte{gsiPositionMark}, last...), blocks)
		}
	}
	return rep, s.gsiRepair(runtime.WithRepairOptions(ctx, g), &rep, engine)
}

// gsiPositionMark starts a position of Repair's GSI pass: the byte 0x01
// starts no encoded block key (runtime's key codec).
const gsiPositionMark = 0x01

// cutGSIPosition returns the block position of a position of Repair's
// GSI pass (and true), or after itself (and false).
func cutGSIPosition(after []byte) ([]byte, bool) {
	if len(after) > 0 && after[0] == gsiPositionMark {
		return after[1:], true
	}
	return after, false
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
		case IDAttr, SeqAttr, IncAttr, WriteAttr, TTLAttr, GSIPartAttr:
		case RootAttr:
			out = append(out, "")
		case LenAttr:
			if m, ok := av.(*types.AttributeValueMemberM); ok {
				for f := range m.Value {
					out = append(out, f)
				}
			}
		default:
			if strings.HasPrefix(k, GSIKeyPrefix) || s.ownAttr(k) {
				continue // a lookup's GSI sort key (gsi.go), a key of the single table
			}
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
