package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Schema and layout evolution (runtime/evolve.go, README "Changing a
// model"): the schema record of a collection is one item of table
// SchemaTable; blocks written in another layout (ETF or EAO, a field
// whole or partitioned) are read right (decode), entry-level writes
// guard their ConditionExpression against them (layoutGuards), and
// MigrateBlocks rewrites them.

// RecAttr is the attribute of a schema record item holding the record.
const RecAttr = "rec"

// LoadSchema implements runtime.Store: a GetItem of the collection's item
// of the schema table (ConsistentRead).
func (s *Store[T, K]) LoadSchema(ctx context.Context) ([]byte, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.schema), ConsistentRead: aws.Bool(true),
		Key: s.schemaKey(),
	})
	if err != nil {
		return nil, wrap("EnsureIndexes", s.d.Aggregate, nil, err)
	}
	b, ok := out.Item[RecAttr].(*types.AttributeValueMemberB)
	if !ok {
		return nil, nil
	}
	return b.Value, nil
}

// schemaItem is the collection's schema record item holding rec.
func (s *Store[T, K]) schemaItem(rec []byte) map[string]types.AttributeValue {
	item := s.schemaKey()
	item[RecAttr] = &types.AttributeValueMemberB{Value: rec}
	return item
}

// SaveSchema implements runtime.Store: one PutItem of the collection's
// schema record, on condition that the stored one is still old
// (attribute_not_exists(_id) when old is nil).
func (s *Store[T, K]) SaveSchema(ctx context.Context, old, rec []byte) error {
	const op = "EnsureIndexes"
	e := newExpr()
	var cond string
	if old == nil {
		cond = "attribute_not_exists(" + e.name(s.keyName()) + ")"
	} else {
		cond = e.name(RecAttr) + " = " + e.value(&types.AttributeValueMemberB{Value: old})
	}
	var sent sends
	_, err := s.c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.schema),
		Item:                s.schemaItem(rec),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.valuesOrNil(),
	}, sent.count)
	if condFailed(err) {
		if sent.resent() {
			// The first send may have been applied, its reply lost.
			if now, err := s.LoadSchema(ctx); err == nil && string(now) == string(rec) {
				return nil
			}
		}
		return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(the schema record of collection %s changed meanwhile)", s.d.Collection), runtime.ErrConflict, nil)
	}
	if err != nil {
		return wrap(op, s.d.Aggregate, nil, err)
	}
	return nil
}

// DropLookup implements runtime.Store: it deletes the index items of
// lookup l (partition p = l.Name of the collection's index table), a
// Query page and a DeleteItem per item at a time. An index table that
// does not exist holds nothing to drop.
func (s *Store[T, K]) DropLookup(ctx context.Context, l runtime.LookupLayout) error {
	const op = "EnsureIndexes"
	table := s.prefix + IndexTable(s.d.Collection)
	if s.one != nil {
		table = s.table
	}
	pa, pv := s.indexPart(l.Name)
	for {
		out, err := s.c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("#p = :p"),
			ProjectionExpression:      aws.String("#p, #k"),
			ExpressionAttributeNames:  map[string]string{"#p": pa, "#k": s.indexSort()},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": pv},
		})
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil
		}
		if err != nil {
			return wrap(op, s.d.Aggregate, nil, err)
		}
		for _, item := range out.Items {
			_, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{pa: item[pa], s.indexSort(): item[s.indexSort()]}})
			if err != nil {
				return wrap(op, s.d.Aggregate, nil, err)
			}
		}
		if len(out.Items) == 0 {
			return nil
		}
	}
}

// rootMember is member k of the item's root entry (nil: none).
func rootMember(item map[string]types.AttributeValue, k string) types.AttributeValue {
	if r, ok := item[RootAttr].(*types.AttributeValueMemberM); ok {
		return r.Value[k]
	}
	return nil
}

// hasLen reports whether the item counts the elements of field k (_len.k):
// it holds k partitioned.
func hasLen(item map[string]types.AttributeValue, k string) bool {
	m, ok := item[LenAttr].(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	_, ok = m.Value[k]
	return ok
}

// shape is what item shows of the block's layout
// (runtime.Desc.LayoutDiffs): the root entry is attribute _root, a field
// counted in _len is partitioned.
func (s *Store[T, K]) shape(item map[string]types.AttributeValue) runtime.StoredShape {
	_, root := item[RootAttr]
	return runtime.StoredShape{
		Root: root,
		Entry: func(k string) runtime.Stored {
			if hasLen(item, k) {
				return runtime.EntrySplit
			}
			if _, ok := item[k]; ok {
				return runtime.EntryWhole
			}
			return runtime.NoEntry
		},
		Member: func(k string) bool { return rootMember(item, k) != nil },
	}
}

// layoutCheck is one condition an entry-level write puts on the block's
// layout: cond in the write's ConditionExpression, diff the difference
// (runtime.Desc.LayoutDiffs) of a block it refuses.
type layoutCheck struct {
	cond string
	diff runtime.LayoutDiff
}

// layoutChecks are what makes an entry-level write of changes (or, app
// non-nil, an append to partition app) right on a block stored in
// another layout, in the write's own request: it leaves the block in the
// current layout, whole, or it writes nothing. The checks refuse what the
// write cannot convert (runtime.ErrLayout); remove lists what a
// conversion REMOVEs. On a block in the current layout the conditions
// hold and the REMOVEs find nothing.
//
//   - The strategy: under ETF, no root entry; under EAO, a root entry,
//     unless the write sets it: then it also REMOVEs the fields stored as
//     entries of their own (an ETF block), which converts it.
//   - Lists: under a descriptor without partitions, _len counts nothing
//     of its layout and goes (REMOVE _len: a partitioned list is then a
//     whole one); otherwise a list field is not partitioned (_len.f).
//   - A partition: not whole inside a root entry, and not whole on its
//     own (f without _len.f) unless the write sets it whole with its
//     count (which converts it), or appends (whose own condition on
//     _len.f refuses a whole f).
func (s *Store[T, K]) layoutChecks(e *expr, changes []runtime.Change[T], app *runtime.Field[T]) (checks []layoutCheck, remove []string) {
	setsRoot := false
	whole := map[string]bool{} // partitions written whole (or appended to)
	if app != nil {
		whole[app.Key] = true
	}
	for _, c := range changes {
		switch {
		case c.Field.Kind == runtime.KindRoot:
			setsRoot = true
		case c.Field.Kind == runtime.KindPartition && !c.Elem:
			whole[c.Field.Key] = true
		}
	}
	switch {
	case !s.d.EAO:
		checks = append(checks, layoutCheck{"attribute_not_exists(" + e.name(RootAttr) + ")", runtime.LayoutDiff{Change: runtime.StoredEAO}})
	case setsRoot:
		for _, k := range s.d.Root.Fields {
			remove = append(remove, e.name(k))
		}
	default:
		checks = append(checks, layoutCheck{"attribute_exists(" + e.name(RootAttr) + ")", runtime.LayoutDiff{Change: runtime.StoredETF}})
	}
	parts := s.d.Partitions()
	if len(parts) == 0 {
		remove = append(remove, e.name(LenAttr))
	} else {
		for _, f := range s.d.Fields {
			if f.Kind == runtime.KindField && s.listy[f.Key] {
				checks = append(checks, layoutCheck{fmt.Sprintf("attribute_not_exists(%s.%s)", e.name(LenAttr), e.name(f.Key)), runtime.LayoutDiff{Change: runtime.FieldSplit, Entry: f.Key}})
			}
		}
	}
	for _, f := range parts {
		k := f.Key
		if s.d.EAO {
			checks = append(checks, layoutCheck{fmt.Sprintf("attribute_not_exists(%s.%s)", e.name(RootAttr), e.name(k)), runtime.LayoutDiff{Change: runtime.PartitionInRoot, Entry: k}})
		}
		if !whole[k] {
			fn := e.name(k)
			checks = append(checks, layoutCheck{fmt.Sprintf("(attribute_exists(%s.%s) OR attribute_not_exists(%s))", e.name(LenAttr), fn, fn), runtime.LayoutDiff{Change: runtime.PartitionWhole, Entry: k}})
		}
	}
	return checks, remove
}

// layoutGuards adds the layout checks and conversions of an entry-level
// write of changes (layoutChecks) to w.
func (s *Store[T, K]) layoutGuards(w *update, changes []runtime.Change[T], app *runtime.Field[T]) {
	checks, remove := s.layoutChecks(w.e, changes, app)
	for _, c := range checks {
		w.cond = append(w.cond, c.cond)
	}
	w.remove = append(w.remove, remove...)
}

// writeMismatch returns the ErrLayout of an entry-level write of changes
// (or of an append to partition app) to block id stored as item: the
// first difference of the block's layout that a check of the write (or
// the append's own condition) refuses (nil: none).
func (s *Store[T, K]) writeMismatch(op string, id K, item map[string]types.AttributeValue, changes []runtime.Change[T], app *runtime.Field[T]) error {
	if item == nil {
		return nil
	}
	ds := s.d.LayoutDiffs(s.shape(item))
	if len(ds) == 0 {
		return nil
	}
	checks, _ := s.layoutChecks(newExpr(), changes, app)
	if app != nil {
		checks = append(checks, layoutCheck{diff: runtime.LayoutDiff{Change: runtime.PartitionWhole, Entry: app.Key}})
	}
	for _, c := range checks {
		if slices.Contains(ds, c.diff) {
			return c.diff.Err(op, s.d.Aggregate, id, nil)
		}
	}
	return nil
}

// MigrateBlocks is runtime.MigrateBlocks over DynamoDB's requests
// (migrator): a Scan of up to n blocks after the position; each block
// stored in another layout is decoded (reads take every layout) and put
// back in the current one by one PutItem on condition that the item is
// still the one read, its version, lookup stamp and write token kept (a
// rewrite changes no value). Every write of a block records a fresh write
// token (WriteAttr), so that the condition holds the token read, whatever
// the block's size (a block written before write tokens gets one first);
// it also compares the other attributes as far as the expression's length
// allows. A block changed meanwhile is read again (GetItem), after a
// backoff.
func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	return runtime.MigrateBlocks(ctx, s.d.Aggregate, s.d.Keys, migrator[T, K]{s}, after, n, dryRun)
}

// migrator is runtime.BlockMigrator on DynamoDB: a block is its item.
type migrator[T any, K comparable] struct{ s *Store[T, K] }

const migrateOp = "Migrate"

func (m migrator[T, K]) ScanBlocks(ctx context.Context, after *K, n int) ([]runtime.ScannedBlock[K, map[string]types.AttributeValue], bool, error) {
	s := m.s
	var start map[string]types.AttributeValue
	if after != nil {
		start = s.key(*after)
	}
	var blocks []runtime.ScannedBlock[K, map[string]types.AttributeValue]
	more := true
	for len(blocks) < n && more {
		out, err := s.c.Scan(ctx, s.scan(&dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start, Limit: aws.Int32(int32(n - len(blocks))), ConsistentRead: aws.Bool(true)}))
		if err != nil {
			return nil, false, wrap(migrateOp, s.d.Aggregate, nil, err)
		}
		for _, item := range out.Items {
			id, err := s.keyOf(s.idAttr(item))
			if err != nil {
				return nil, false, runtime.Fail(migrateOp, s.d.Aggregate, nil, nil, err)
			}
			blocks = append(blocks, runtime.ScannedBlock[K, map[string]types.AttributeValue]{ID: id, Raw: item, Read: true})
		}
		start, more = out.LastEvaluatedKey, len(out.LastEvaluatedKey) > 0
	}
	return blocks, more, nil
}

func (m migrator[T, K]) ReadBlock(ctx context.Context, id K, attempt int) (map[string]types.AttributeValue, bool, error) {
	if err := backoff(ctx, attempt); err != nil {
		return nil, false, runtime.Fail(migrateOp, m.s.d.Aggregate, id, nil, err)
	}
	item, err := m.s.getItem(ctx, id, "", nil)
	if err != nil {
		return nil, false, wrap(migrateOp, m.s.d.Aggregate, id, err)
	}
	return item, item != nil, nil
}

func (m migrator[T, K]) StoredLayout(id K, item map[string]types.AttributeValue) (string, error) {
	from := runtime.DescribeDiffs(m.s.d.LayoutDiffs(m.s.shape(item)))
	if from == "" {
		return "", nil
	}
	if _, err := m.s.decode(item); err != nil {
		return from, runtime.Unreadable(migrateOp, m.s.d.Aggregate, id, err)
	}
	return from, nil
}

func (m migrator[T, K]) RewriteBlock(ctx context.Context, id K, item map[string]types.AttributeValue) error {
	s := m.s
	const op = migrateOp
	t, err := s.decode(item)
	if err != nil {
		return runtime.Unreadable(op, s.d.Aggregate, id, err)
	}
	if _, ok := item[WriteAttr]; !ok {
		// A block written before write tokens: record one first (an
		// UpdateItem that changes nothing else, on condition that the
		// block has none yet), so that the rewrite compares it,
		// whatever the block's size.
		tok := token.New()
		w := &update{e: newExpr()}
		w.stamp(tok)
		w.cond = append(w.cond, "attribute_exists("+w.e.name(s.keyName())+")", "attribute_not_exists("+w.e.name(WriteAttr)+")")
		var sent sends
		_, err := s.c.UpdateItem(ctx, w.input(s.table, s.key(id)), sent.count)
		if condFailed(err) {
			return runtime.ErrChangedSinceRead // written or deleted meanwhile
		}
		if err != nil {
			return s.writeErr(op, id, &sent, err)
		}
		item[WriteAttr] = &types.AttributeValueMemberS{Value: tok}
	}
	next, err := s.item(t, versionOf(item, s.d.VersionKey()), nil)
	if err != nil {
		return runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	if s.d.Version != nil {
		if _, ok := item[s.d.Version.Key]; !ok {
			delete(next, s.d.Version.Key) // still at version 0
		}
	}
	for _, k := range []string{SeqAttr, IncAttr, WriteAttr} {
		if v, ok := item[k]; ok {
			next[k] = v
		}
	}
	if err := s.checkSize(op, id, next); err != nil {
		return err
	}
	w := &update{e: newExpr()}
	s.unchanged(w, item, next)
	var sent sends
	_, err = s.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: next,
		ConditionExpression: aws.String(strings.Join(w.cond, " AND ")), ExpressionAttributeNames: w.e.namesOrNil(), ExpressionAttributeValues: w.e.valuesOrNil()}, sent.count)
	if condFailed(err) {
		return runtime.ErrChangedSinceRead
	}
	if err != nil {
		return s.writeErr(op, id, &sent, err)
	}
	return nil
}

// maxCompare bounds the length of the ConditionExpression of a
// migration (DynamoDB takes 4 KB).
const maxCompare = 3500

// unchanged adds the conditions that the item is still old: every
// attribute of old the same, and none that next or any layout's writer
// could add. Scalars compare with =, documents (DynamoDB compares no maps
// or lists with =) by their size and member by member down to their
// scalars, as far as the expression's length allows (past it, a document
// compares by its size).
func (s *Store[T, K]) unchanged(w *update, old, next map[string]types.AttributeValue) {
	e := w.e
	names := []string{IDAttr, RootAttr, LenAttr, SeqAttr, IncAttr, WriteAttr, TTLAttr}
	for _, f := range s.d.Fields {
		names = append(names, f.Key)
	}
	if s.d.Root != nil {
		names = append(names, s.d.Root.Fields...)
	}
	if s.d.Version != nil {
		names = append(names, s.d.Version.Key)
	}
	for k := range next {
		names = append(names, k)
	}
	for k := range old {
		names = append(names, k)
	}
	slices.Sort(names)
	var docs []string // the documents, compared last
	for _, k := range slices.Compact(names) {
		v, ok := old[k]
		switch {
		case !ok:
			w.cond = append(w.cond, "attribute_not_exists("+e.name(k)+")")
		case k == s.keyName():
			w.cond = append(w.cond, "attribute_exists("+e.name(k)+")")
		default:
			if !same(w, e.name(k), v, false) {
				docs = append(docs, k)
			}
		}
	}
	size := 0
	for _, c := range w.cond {
		size += len(c) + 5
	}
	for _, k := range docs {
		size = sameDoc(w, e.name(k), old[k], size)
	}
}

// same adds the condition that path holds scalar v and reports true, or
// false for a document (doc false) or a set; doc true compares those by
// their size.
func same(w *update, path string, v types.AttributeValue, doc bool) bool {
	e := w.e
	switch a := v.(type) {
	case *types.AttributeValueMemberNULL:
		w.cond = append(w.cond, "attribute_type("+path+", "+e.value(&types.AttributeValueMemberS{Value: "NULL"})+")")
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
		w.cond = append(w.cond, path+" = "+e.value(v))
	default:
		if !doc {
			return false
		}
		n := 0
		switch a := a.(type) {
		case *types.AttributeValueMemberM:
			n = len(a.Value)
		case *types.AttributeValueMemberL:
			n = len(a.Value)
		case *types.AttributeValueMemberSS:
			n = len(a.Value)
		case *types.AttributeValueMemberNS:
			n = len(a.Value)
		case *types.AttributeValueMemberBS:
			n = len(a.Value)
		}
		w.cond = append(w.cond, "size("+path+") = "+e.value(num(int64(n))))
	}
	return true
}

// sameDoc adds the conditions that path holds document v (its size, then
// its members, as long as the expression stays within maxCompare; size
// is its length so far) and returns the new length.
func sameDoc(w *update, path string, v types.AttributeValue, size int) int {
	add := func() bool {
		size += len(w.cond[len(w.cond)-1]) + 5
		return size < maxCompare
	}
	same(w, path, v, true)
	if !add() {
		return size
	}
	switch a := v.(type) {
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(a.Value))
		for k := range a.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if size = sameDoc(w, path+"."+w.e.name(k), a.Value[k], size); size >= maxCompare {
				return size
			}
		}
	case *types.AttributeValueMemberL:
		for i, x := range a.Value {
			if size = sameDoc(w, fmt.Sprintf("%s[%d]", path, i), x, size); size >= maxCompare {
				return size
			}
		}
	}
	return size
}
