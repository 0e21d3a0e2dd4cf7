package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Global secondary indexes (package doc). A non-unique lookup with one
// value per block (no path through a slice) and without the table option
// is kept by DynamoDB itself: the block's own item carries the lookup's
// index key in the attribute _gk_<lookup> (B: the value followed by the
// block key, the index table's sort key) and the collection's name in _gp
// (S), and the GSI gsi_<lookup> has _gp as its partition key and
// _gk_<lookup> as its sort key, projecting ALL attributes. Every write of
// the block writes the attributes in the same request (one item: atomic),
// and a lookup read is one Query of the GSI in (value, block key) order.

// Attributes of the GSI lookups.
const (
	// GSIPartAttr is the partition key of every GSI of a collection: the
	// collection's name, on every block of a collection with GSI lookups.
	GSIPartAttr = layout.GSIPart
	// GSIKeyPrefix, followed by the lookup's name, is the attribute
	// holding a block's index key of the lookup, the GSI's sort key; a
	// block the lookup does not index has none (a sparse index).
	GSIKeyPrefix = layout.GSIKeyPrefix
)

// GSIName names the global secondary index of lookup name.
func GSIName(lookup string) string { return layout.GSIName(lookup) }

// GSILookup reports whether dynamostore keeps lookup l in a global
// secondary index: a non-unique lookup (unique values are claimed in the
// index table) without the table option (noam:"lookup,table" keeps the
// strongly consistent index table) whose paths go through no slice, so
// that a block holds one value of it at most.
func GSILookup[T any](l *runtime.Lookup[T]) bool {
	if l.Unique || l.Table || len(l.Paths) == 0 {
		return false
	}
	for _, p := range l.Paths {
		if p.Multi {
			return false
		}
	}
	return true
}

// gsiOf returns l if it is a GSI lookup of the store, else nil.
func (s *Store[T, K]) gsiOf(l *runtime.Lookup[T]) *runtime.Lookup[T] {
	for _, x := range s.gsis {
		if x == l || x.Name == l.Name {
			return x
		}
	}
	return nil
}

// gsiKey is the index key of block blk holding t for lookup l (nil: the
// lookup does not index t): its one value, then the block key.
func gsiKey[T any](l *runtime.Lookup[T], blk []byte, t *T) []byte {
	vals := l.Keys(t)
	if len(vals) == 0 {
		return nil
	}
	return append(append(make([]byte, 0, len(vals[0])+len(blk)), vals[0]...), blk...)
}

// gsiAttrs adds the GSI attributes of block t to its item.
func (s *Store[T, K]) gsiAttrs(item map[string]types.AttributeValue, t *T) {
	if len(s.gsis) == 0 {
		return
	}
	blk := s.d.Keys.Bytes(*s.d.ID(t))
	if s.one == nil {
		item[GSIPartAttr] = &types.AttributeValueMemberS{Value: s.d.Collection}
	}
	for _, l := range s.gsis {
		if k := gsiKey(l, blk, t); k != nil {
			item[s.gsiSort(l)] = &types.AttributeValueMemberB{Value: k}
			if s.one != nil {
				// Each overloaded GSI its partition key (sparse too).
				pa, pv := s.gsiPart(l)
				item[pa] = pv
			}
		}
	}
}

// gsisOf returns the GSI lookups that read any of the entry keys.
func (s *Store[T, K]) gsisOf(keys []string) []*runtime.Lookup[T] {
	var out []*runtime.Lookup[T]
	for _, l := range s.gsis {
		if slices.ContainsFunc(keys, l.Reads) {
			out = append(out, l)
		}
	}
	return out
}

// tableLookupsOf reports whether an index-table lookup reads any of the
// entry keys (a write of them runs the lookup protocol).
func (s *Store[T, K]) tableLookupsOf(keys []string) bool {
	for _, l := range s.d.LookupsOf(keys...) {
		if s.gsiOf(l) == nil {
			return true
		}
	}
	return false
}

// gsiReads reports whether update u changes some but not all fields of a
// GSI lookup: its new index key then needs the stored values of the
// others (gsiUpdate).
func (s *Store[T, K]) gsiReads(u runtime.Update[T]) bool {
	keys := u.Keys()
	for _, l := range s.gsisOf(keys) {
		for _, f := range l.Fields {
			if !slices.Contains(keys, f) {
				return true
			}
		}
	}
	return false
}

// setGSI adds to w the SET of lookup l's index key (REMOVE when key is
// nil) and, once per request, of the partition key attribute.
func (s *Store[T, K]) setGSI(w *update, l *runtime.Lookup[T], key []byte, part *bool) {
	a := w.e.name(s.gsiSort(l))
	if s.one != nil {
		// The overloaded GSI's partition key goes with its sort key.
		pa, pv := s.gsiPart(l)
		if key == nil {
			w.remove = append(w.remove, a, w.e.name(pa))
			return
		}
		w.set = append(w.set, a+" = "+w.e.value(&types.AttributeValueMemberB{Value: key}), w.e.name(pa)+" = "+w.e.value(pv))
		return
	}
	if key == nil {
		w.remove = append(w.remove, a)
		return
	}
	w.set = append(w.set, a+" = "+w.e.value(&types.AttributeValueMemberB{Value: key}))
	if !*part {
		*part = true
		w.set = append(w.set, w.e.name(GSIPartAttr)+" = "+w.e.value(&types.AttributeValueMemberS{Value: s.d.Collection}))
	}
}

// gsiSets adds to UpdateItem w the GSI attributes of the lookups whose
// fields update u sets, all of them (gsiReads is false): their new index
// keys follow from u alone, so the update stays one request.
func (s *Store[T, K]) gsiSets(w *update, id K, u runtime.Update[T]) error {
	ls := s.gsisOf(u.Keys())
	if len(ls) == 0 {
		return nil
	}
	t := s.d.New(id)
	for _, c := range u.Changes {
		if c.Elem {
			continue // an element of a partition: no GSI lookup reads it
		}
		if err := c.Apply(t); err != nil {
			return err
		}
	}
	blk := s.d.Keys.Bytes(id)
	part := false
	for _, l := range ls {
		s.setGSI(w, l, gsiKey(l, blk, t), &part)
	}
	return nil
}

// gsiGuarded adds to UpdateItem w the GSI attributes of the lookups that
// read any of keys, computed from t (the block as read, item, with the
// write's changes applied), on condition that the stored index keys are
// still the ones read: a write of another field of the lookup meanwhile
// changed its key, and fails the condition. A block that holds no key
// (written before the GSI lookup existed) is also checked to hold the
// lookup's fields as read.
func (s *Store[T, K]) gsiGuarded(w *update, id K, item map[string]types.AttributeValue, t *T, keys []string) {
	blk := s.d.Keys.Bytes(id)
	part := false
	for _, l := range s.gsisOf(keys) {
		s.gsiCond(w, l, item, keys)
		s.setGSI(w, l, gsiKey(l, blk, t), &part)
	}
}

// gsiCond adds the condition that lookup l's index key attribute is as
// item holds it and, if it holds none, that the values at the lookup's
// paths (but in the fields of skip) are too.
func (s *Store[T, K]) gsiCond(w *update, l *runtime.Lookup[T], item map[string]types.AttributeValue, skip []string) {
	a := w.e.name(s.gsiSort(l))
	if old, ok := item[s.gsiSort(l)]; ok {
		w.cond = append(w.cond, a+" = "+w.e.value(old))
		return
	}
	w.cond = append(w.cond, "attribute_not_exists("+a+")")
	// The values at the lookup's paths (scalars: conditions on whole
	// documents are not portable), in the item or its root entry.
	for _, p := range l.Paths {
		steps := strings.Split(p.Path, ".")
		if slices.Contains(skip, steps[0]) {
			continue
		}
		pathCond(w, item, steps)
		if _, ok := item[RootAttr]; ok {
			pathCond(w, item, append([]string{RootAttr}, steps...))
		}
	}
}

// pathCond adds the condition that the item holds at document path steps
// what it holds now (or nothing).
func pathCond(w *update, item map[string]types.AttributeValue, steps []string) {
	names := make([]string, len(steps))
	var av types.AttributeValue = &types.AttributeValueMemberM{Value: item}
	for i, st := range steps {
		names[i] = w.e.name(st)
		if m, ok := av.(*types.AttributeValueMemberM); ok {
			av = m.Value[st]
		} else {
			av = nil
		}
	}
	path := strings.Join(names, ".")
	if av == nil {
		w.cond = append(w.cond, "attribute_not_exists("+path+")")
		return
	}
	w.cond = append(w.cond, path+" = "+w.e.value(av))
}

// gsiUpdate writes update u, which sets some fields of a GSI lookup and
// leaves others, after a read of the block: one UpdateItem of the changes
// and the lookup's new index key, on condition that the stored key (or,
// without one, the lookup's fields) is still the one read; retried when
// another write came first.
func (s *Store[T, K]) gsiUpdate(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	var tok string
	if s.d.Version != nil {
		tok = token.New()
	}
	keys := u.Keys()
	for attempt := range runtime.MaxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		item, err := s.getItem(ctx, id, "", nil)
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		if err := s.check(op, id, item, u); err != nil {
			return err
		}
		t, err := s.decode(item)
		if err != nil {
			return runtime.Unreadable(op, s.d.Aggregate, id, err)
		}
		for _, c := range u.Changes {
			if err := c.Apply(t); err != nil {
				return runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
		}
		if err := s.checkValues(op, id, t); err != nil {
			return err
		}
		_, counts := item[LenAttr]
		w, err := s.changes(u, !counts && setsPartition(u))
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		s.gsiGuarded(w, id, item, t, keys)
		if tok != "" {
			w.stamp(tok)
			wn, tv := w.e.name(WriteAttr), w.e.value(&types.AttributeValueMemberS{Value: tok})
			w.cond = append(w.cond, fmt.Sprintf("(attribute_not_exists(%s) OR %s <> %s)", wn, wn, tv))
		}
		var sent sends
		_, err = s.c.UpdateItem(ctx, w.input(s.table, s.key(id)), sent.count)
		if err == nil {
			return nil
		}
		if !condFailed(err) {
			return wrap(op, s.d.Aggregate, id, err)
		}
		if tok != "" && sent.resent() && s.wrote(ctx, id, tok) {
			return nil
		}
	}
	return s.contended(op, id)
}

// gsiRange reads up to n blocks of GSI lookup l in key range rng after
// position after: Query pages of the GSI (IndexName) with the sort key
// between the range's start and end, n+1 items at a time, each item the
// whole block (projection ALL), so that no block is read again. A GSI is
// eventually consistent: the items are the blocks as the GSI has them, a
// write just made may be missing from it or not yet seen; every item is
// checked to hold the index key it is listed under (an item whose stored
// key is stale, written before the lookup changed, is skipped).
func (s *Store[T, K]) gsiRange(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	r := *rng
	r.After = after
	start, end := r.Start(), r.To
	// Descending, the condition stays and the Query pages backwards from
	// its end (ScanIndexForward false, ExclusiveStartKey).
	var from map[string]types.AttributeValue
	if desc {
		start = r.From
		if after != nil {
			end = after
		}
	}
	attr := s.gsiSort(l)
	pa, pv := s.gsiPart(l)
	out := make([]*T, 0, min(n+1, 64))
	keys := make([][]byte, 0, cap(out))
	for len(out) <= n && bytes.Compare(start, end) < 0 {
		e := newExpr()
		cond := e.name(pa) + " = " + e.value(pv) + " AND " + e.name(attr)
		if len(start) == 0 {
			// DynamoDB takes no empty binary value: from the first key.
			cond += " < " + e.value(&types.AttributeValueMemberB{Value: end})
		} else {
			cond += " BETWEEN " + e.value(&types.AttributeValueMemberB{Value: start}) + " AND " + e.value(&types.AttributeValueMemberB{Value: end})
		}
		page, err := s.c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(s.gsiIndex(l)),
			KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
			Limit: aws.Int32(int32(min(n+1-len(out), 1000))), ScanIndexForward: aws.Bool(!desc), ExclusiveStartKey: from,
		})
		if err != nil {
			return nil, nil, false, wrap(op, s.d.Aggregate, nil, err)
		}
		for _, item := range page.Items {
			k, _ := item[attr].(*types.AttributeValueMemberB)
			if k == nil || bytes.Equal(k.Value, end) {
				continue // the range's end is not in it
			}
			if !desc {
				start = append(append(start[:0:0], k.Value...), 0)
			}
			t, err := s.decode(item)
			if err != nil {
				id, _ := s.keyOf(s.idAttr(item))
				if len(out) > n {
					break
				}
				return out, k.Value, true, runtime.Unreadable(op, s.d.Aggregate, id, err)
			}
			if !bytes.Equal(gsiKey(l, s.d.Keys.Bytes(*s.d.ID(t)), t), k.Value) {
				continue // the block no longer holds the key (see above)
			}
			out, keys = append(out, t), append(keys, k.Value)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		if desc {
			from = page.LastEvaluatedKey
		}
	}
	more := len(out) > n
	out = out[:min(len(out), n)]
	var last []byte
	if len(out) > 0 {
		last = keys[len(out)-1]
	}
	return out, last, more, nil
}

// builds reports whether a Repair with RepairOptions.Lookups names (nil:
// all) builds any of lookups (named as the model names them, or as
// "<collection>.<lookup>").
func (s *Store[T, K]) builds(names []string, lookups []*runtime.Lookup[T]) bool {
	if names == nil {
		return len(lookups) > 0
	}
	return slices.ContainsFunc(lookups, func(l *runtime.Lookup[T]) bool {
		return slices.Contains(names, l.Name) || slices.Contains(names, s.d.Collection+"."+l.Name)
	})
}

// gsiRepairPage is how many blocks one Scan of gsiRepair reads.
const gsiRepairPage = 256

// gsiRepair writes the GSI attributes of the blocks that lack them or
// hold stale ones (blocks written before the lookup was a GSI lookup,
// or by older code): Scan pages of the table from RepairOptions.After,
// and for each block whose stored index keys differ from its values one
// UpdateItem of them on condition that the stored keys and the lookups'
// fields are still as read (a write meanwhile wrote the keys itself).
// Safe while the application writes. counted is set when the engine's
// Repair already counted the blocks (and reported the unreadable ones).
func (s *Store[T, K]) gsiRepair(ctx context.Context, rep *runtime.RepairReport, counted bool) error {
	const op = "Repair"
	o := runtime.RepairOptionsOf(ctx)
	var ls []*runtime.Lookup[T]
	for _, l := range s.gsis {
		if s.builds(o.Lookups, []*runtime.Lookup[T]{l}) {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return nil
	}
	var start map[string]types.AttributeValue
	if o.After != nil {
		k, err := s.position(o.After)
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, nil, nil, err)
		}
		start = s.key(k)
	}
	for {
		page, err := s.c.Scan(ctx, s.scan(&dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start, Limit: aws.Int32(gsiRepairPage), ConsistentRead: aws.Bool(true)}))
		if err != nil {
			return wrap(op, s.d.Aggregate, nil, err)
		}
		var last []byte
		for _, item := range page.Items {
			id, err := s.keyOf(s.idAttr(item))
			if err != nil {
				if !counted {
					rep.AddUnreadable(s.d.Aggregate, nil, err)
				}
				continue
			}
			last = s.d.Keys.Bytes(id)
			if !counted {
				rep.Aggregates++
			}
			t, err := s.decode(item)
			if err != nil {
				if !counted {
					rep.AddUnreadable(s.d.Aggregate, id, err)
				}
				continue
			}
			if err := s.gsiFix(ctx, op, id, item, t, ls, rep); err != nil {
				return err
			}
		}
		if o.OnPage != nil && last != nil {
			if err := o.OnPage(last, len(page.Items)); err != nil {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		start = page.LastEvaluatedKey
	}
}

// gsiFix writes the index keys of lookups ls that block id (item, t)
// lacks or holds stale, in one conditional UpdateItem (none when all are
// right). A failed condition means a write came meanwhile, which wrote
// the keys itself.
func (s *Store[T, K]) gsiFix(ctx context.Context, op string, id K, item map[string]types.AttributeValue, t *T, ls []*runtime.Lookup[T], rep *runtime.RepairReport) error {
	w := &update{e: newExpr()}
	w.cond = append(w.cond, "attribute_exists("+w.e.name(s.keyName())+")")
	blk := s.d.Keys.Bytes(id)
	part := false
	if _, ok := item[GSIPartAttr]; !ok && s.one == nil {
		part = true
		w.set = append(w.set, w.e.name(GSIPartAttr)+" = "+w.e.value(&types.AttributeValueMemberS{Value: s.d.Collection}))
	}
	added, removed := 0, 0
	for _, l := range ls {
		want := gsiKey(l, blk, t)
		have, _ := item[s.gsiSort(l)].(*types.AttributeValueMemberB)
		switch {
		case have == nil && want == nil, have != nil && bytes.Equal(have.Value, want):
			continue
		case want == nil:
			removed++
		default:
			added++
			if have != nil {
				removed++
			}
		}
		s.gsiCond(w, l, item, nil)
		s.setGSI(w, l, want, &part)
	}
	if added+removed == 0 && len(w.set) == 0 {
		return nil
	}
	_, err := s.c.UpdateItem(ctx, w.input(s.table, s.key(id)))
	if condFailed(err) {
		return nil
	}
	if err != nil {
		return wrap(op, s.d.Aggregate, id, err)
	}
	rep.Added += added
	rep.Removed += removed
	return nil
}

// ensureBlockTable creates the block table with the GSIs of the GSI
// lookups and waits until it is active; on a table that exists, it adds
// the GSIs it lacks, one UpdateTable each (DynamoDB creates one GSI per
// request), and waits until every GSI is ACTIVE (DynamoDB fills a new GSI
// from the items that carry its attributes; gsiRepair, the lookup build,
// writes them on blocks written before).
func (s *Store[T, K]) ensureBlockTable(ctx context.Context) error {
	defs, keys := s.keyDefs()
	gdefs, gsis := s.gsiDefs()
	if len(gsis) == 0 {
		return createTable(ctx, s.c, s.table, defs...)
	}
	defs = append(defs, gdefs...)
	_, err := s.c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(s.table), BillingMode: types.BillingModePayPerRequest, AttributeDefinitions: defs,
		KeySchema: keys, GlobalSecondaryIndexes: gsis,
	})
	if err != nil && !tableExists(err) {
		return err
	}
	created := map[string]bool{}
	delay := 20 * time.Millisecond
	for {
		out, err := s.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
		if err != nil {
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) {
				return err
			}
		} else if ready, missing, err := gsiState(out.Table, gsis, created); err != nil {
			return s.cannotAddGSI(gsiIgnored(out.Table, gsis, created), err)
		} else if ready {
			return nil
		} else if missing != nil {
			_, err := s.c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(s.table), AttributeDefinitions: defs,
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: missing.IndexName, KeySchema: missing.KeySchema, Projection: missing.Projection,
					ProvisionedThroughput: gsiThroughput(out.Table),
				}}}})
			var lim *types.LimitExceededException
			var busy *types.ResourceInUseException
			var ae smithy.APIError
			switch {
			case err == nil:
				created[*missing.IndexName] = true
				continue
			case errors.As(err, &ae) && ae.ErrorCode() == "ValidationException":
				return s.cannotAddGSI(*missing.IndexName, err)
			case !errors.As(err, &lim) && !errors.As(err, &busy):
				return err
			}
			// Another index or table update in progress: wait for it.
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// ErrCannotAddGSI is the kind of the error EnsureIndexes fails with when
// the endpoint cannot add a global secondary index to a table that exists
// (dynalite refuses UpdateTable's GlobalSecondaryIndexUpdates, or accepts
// and ignores them): a lookup that is a GSI by default, added to a model
// whose table holds data. Set Options.IndexTables (every lookup is then
// kept in the index table, built from the blocks by EnsureIndexes), or
// run against an endpoint that adds GSIs (DynamoDB). Nothing was changed
// but the table's description.
var ErrCannotAddGSI = errors.New("the endpoint cannot add a global secondary index to a table that exists: set dynamostore.Options.IndexTables to keep the lookups in the index table, or use an endpoint that adds GSIs")

// cannotAddGSI is the ErrCannotAddGSI error of GSI name of the block
// table, the server's refusal err.
func (s *Store[T, K]) cannotAddGSI(name string, err error) error {
	return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(table %s, global secondary index %s)", s.table, name), ErrCannotAddGSI, err)
}

// gsiThroughput is the ProvisionedThroughput a GSI added to table t
// needs: the table's capacity when its billing mode is PROVISIONED (a
// table without a billing mode summary is), none for on-demand billing
// (PAY_PER_REQUEST), where DynamoDB refuses one.
func gsiThroughput(t *types.TableDescription) *types.ProvisionedThroughput {
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode == types.BillingModePayPerRequest {
		return nil
	}
	r, w := int64(1), int64(1)
	if p := t.ProvisionedThroughput; p != nil {
		r, w = max(r, aws.ToInt64(p.ReadCapacityUnits)), max(w, aws.ToInt64(p.WriteCapacityUnits))
	}
	return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(r), WriteCapacityUnits: aws.Int64(w)}
}

// gsiIgnored names the GSI of want that an UpdateTable was accepted for
// (created) and table t does not list.
func gsiIgnored(t *types.TableDescription, want []types.GlobalSecondaryIndex, created map[string]bool) string {
	have := map[string]bool{}
	for _, g := range t.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = true
	}
	for _, g := range want {
		if created[*g.IndexName] && !have[*g.IndexName] {
			return *g.IndexName
		}
	}
	return ""
}

// gsiState reads a table's description: ready when it is ACTIVE with
// every GSI of want ACTIVE; else the first GSI it lacks once nothing is
// being made (nil: none to add now). A GSI that an UpdateTable was
// accepted for (created) and the table does not list is an endpoint's
// that ignored the request.
func gsiState(t *types.TableDescription, want []types.GlobalSecondaryIndex, created map[string]bool) (bool, *types.GlobalSecondaryIndex, error) {
	have := map[string]types.IndexStatus{}
	for _, g := range t.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = g.IndexStatus
	}
	// An empty status is an endpoint's that does not report one.
	ready := t.TableStatus == types.TableStatusActive || t.TableStatus == ""
	busy := !ready
	var missing *types.GlobalSecondaryIndex
	for i, g := range want {
		st, ok := have[*g.IndexName]
		switch {
		case !ok && created[*g.IndexName]:
			return false, nil, fmt.Errorf("table %s: UpdateTable creating global secondary index %s was accepted, but the table does not list it (dynalite ignores GlobalSecondaryIndexUpdates: create the table anew, or use another endpoint)", aws.ToString(t.TableName), *g.IndexName)
		case !ok:
			ready = false
			if missing == nil {
				missing = &want[i]
			}
		case st != types.IndexStatusActive && st != "":
			ready, busy = false, true
		}
	}
	if busy {
		missing = nil
	}
	return ready, missing, nil
}
