package dynamostore

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

func (s *Store[T, K]) contended(op string, id K) error {
	return runtime.Contended(op, s.d.Aggregate, id, "block")
}

// Create writes a new block, allocating a zero counted id first.
func (s *Store[T, K]) Create(ctx context.Context, t *T) error {
	if err := bsonval.CheckBlock("Create", s.d, t, MaxDepth); err != nil {
		return err
	}
	create := func(c *T) error { return s.create(ctx, c) }
	var err error
	if s.d.Counter != nil {
		err = s.withCounter(ctx, "Create", t, create)
	} else {
		err = create(t)
	}
	if err != nil {
		return err
	}
	s.d.SetVersion(t, 1)
	return nil
}

func (s *Store[T, K]) create(ctx context.Context, t *T) error {
	const op = "Create"
	id := *s.d.ID(t)
	if s.index != "" {
		return s.protocolPut(ctx, op, t, true, 0)
	}
	if err := s.checkValues(op, id, t); err != nil {
		return err
	}
	item, err := s.item(t, 1, nil)
	if err != nil {
		return runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	if err := s.checkSize(op, id, item); err != nil {
		return err
	}
	var sent sends
	_, err = s.c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": s.keyName()},
	}, sent.count)
	if condFailed(err) {
		if sent.resent() && s.holds(ctx, id, item) {
			return nil
		}
		return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrDuplicate, nil)
	}
	if err != nil {
		return s.writeErr(op, id, &sent, err)
	}
	return nil
}

// sends counts the HTTP requests of one SDK call: more than one means
// that the SDK's retryer resent it.
type sends struct{ n atomic.Int32 }

// count is the call option that counts.
func (c *sends) count(o *dynamodb.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = countingClient{o.HTTPClient, c}
	}
}

func (c *sends) resent() bool { return c.n.Load() > 1 }

// writeErr is the error of a write of block id whose request failed with
// err: runtime.Unanswered when err is no answer of the server (the write
// may have been applied if sent counted a send), wrap's otherwise.
func (s *Store[T, K]) writeErr(op string, id K, sent *sends, err error) error {
	if ambiguous(err) {
		return runtime.Unanswered(op, s.d.Aggregate, id, sent.n.Load() > 0, err)
	}
	return wrap(op, s.d.Aggregate, id, err)
}

type countingClient struct {
	next dynamodb.HTTPClient
	c    *sends
}

func (d countingClient) Do(r *http.Request) (*http.Response, error) {
	d.c.n.Add(1)
	return d.next.Do(r)
}

// wrote reports whether block id holds write token tok.
func (s *Store[T, K]) wrote(ctx context.Context, id K, tok string) bool {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(WriteAttr), e)
	if err != nil || item == nil {
		return false
	}
	v, ok := item[WriteAttr].(*types.AttributeValueMemberS)
	return ok && v.Value == tok
}

// holds reports whether block id is item, attribute for attribute: after
// a conditional PutItem that the SDK resent failed its condition, the
// first send may have been applied (its reply lost); the write is then
// done, not refused. (A concurrent writer of the very same item in that
// window is indistinguishable, and harmless.)
func (s *Store[T, K]) holds(ctx context.Context, id K, item map[string]types.AttributeValue) bool {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	got, err := s.getItem(ctx, id, "", nil)
	return err == nil && got != nil && reflect.DeepEqual(got, item)
}

// Put replaces block t whole, checking the version it holds.
func (s *Store[T, K]) Put(ctx context.Context, t *T) error {
	if err := bsonval.CheckBlock("Put", s.d, t, MaxDepth); err != nil {
		return err
	}
	want := s.d.VersionOf(t)
	put := func(c *T) error { return s.put(ctx, c, want) }
	var err error
	if s.d.Counter != nil {
		err = s.withCounter(ctx, "Put", t, put)
	} else {
		err = put(t)
	}
	if err != nil {
		return err
	}
	s.d.SetVersion(t, want+1)
	return nil
}

func (s *Store[T, K]) put(ctx context.Context, t *T, want int64) error {
	const op = "Put"
	id := *s.d.ID(t)
	if s.index != "" {
		return s.protocolPut(ctx, op, t, false, want)
	}
	if err := s.checkValues(op, id, t); err != nil {
		return err
	}
	for attempt := range runtime.MaxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		// The created timestamp of a block that exists stays: read
		// here, and the write is on condition that it is still the one
		// read.
		created, err := s.keepCreated(ctx, op, id, t)
		if err != nil {
			return err
		}
		in, err := s.putInput(op, t, want, created)
		if err != nil {
			return err
		}
		item := in.Item
		var sent sends
		_, err = s.c.PutItem(ctx, in, sent.count)
		if condFailed(err) {
			if sent.resent() && s.holds(ctx, id, item) {
				return nil
			}
			if s.d.Version == nil || s.d.Created != nil && s.createdChanged(ctx, id, created) {
				continue // created or deleted meanwhile: read it again
			}
			return s.versionConflict(ctx, op, id, want)
		}
		if err != nil {
			return s.writeErr(op, id, &sent, err)
		}
		return nil
	}
	return s.contended(op, id)
}

// putInput is the PutItem of a Put of t (without an index table)
// checking version want (0: no block) and the created attribute read
// (nil: none).
func (s *Store[T, K]) putInput(op string, t *T, want int64, created types.AttributeValue) (*dynamodb.PutItemInput, error) {
	id := *s.d.ID(t)
	item, err := s.item(t, want+1, nil)
	if err != nil {
		return nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	if err := s.checkSize(op, id, item); err != nil {
		return nil, err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}
	e := newExpr()
	var cond []string
	if s.d.Version != nil {
		if want == 0 {
			// No block, or one written before the version existed
			// (version 0, which the Put replaces).
			cond = append(cond, "(attribute_not_exists("+e.name(s.keyName())+") OR attribute_not_exists("+e.name(s.d.Version.Key)+"))")
		} else {
			cond = append(cond, e.name(s.d.Version.Key)+" = "+e.value(num(want)))
		}
	}
	if s.d.Created != nil {
		if c := e.name(s.d.Created.Key); created == nil {
			cond = append(cond, "attribute_not_exists("+c+")")
		} else {
			cond = append(cond, c+" = "+e.value(created))
		}
	}
	if len(cond) > 0 {
		in.ConditionExpression = aws.String(strings.Join(cond, " AND "))
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.namesOrNil(), e.valuesOrNil()
	}
	return in, nil
}

// keepCreated reads the created entry block id holds, if the aggregate has
// one, and keeps it (runtime.Desc.KeepCreated): it returns the stored
// attribute, nil when there is none.
func (s *Store[T, K]) keepCreated(ctx context.Context, op string, id K, t *T) (types.AttributeValue, error) {
	if s.d.Created == nil {
		return nil, nil
	}
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(s.d.Created.Key), e)
	if err != nil {
		return nil, wrap(op, s.d.Aggregate, id, err)
	}
	av := item[s.d.Created.Key]
	if av == nil {
		return nil, nil
	}
	return av, s.d.KeepCreated(op, id, t, &decoder{av})
}

// createdChanged reports whether block id no longer holds created as its
// created attribute (nil: none): a Put's condition on it failed.
func (s *Store[T, K]) createdChanged(ctx context.Context, id K, created types.AttributeValue) bool {
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(s.d.Created.Key), e)
	return err == nil && !reflect.DeepEqual(item[s.d.Created.Key], created)
}

// versionConflict reads the version of block id to say why a write
// expecting version want (0: no block) was refused.
func (s *Store[T, K]) versionConflict(ctx context.Context, op string, id K, want int64) error {
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(s.keyName())+", "+e.name(s.d.Version.Key), e)
	if err != nil {
		return wrap(op, s.d.Aggregate, id, err)
	}
	return s.conflict(op, id, item != nil, versionOf(item, s.d.Version.Key), want)
}

func versionOf(item map[string]types.AttributeValue, key string) int64 {
	v, _ := intOf(item[key])
	return v
}

func (s *Store[T, K]) conflict(op string, id K, found bool, have, want int64) error {
	return runtime.VersionConflict(op, s.d.Aggregate, id, found, have, want)
}

// Delete removes block id (and its index items).
func (s *Store[T, K]) Delete(ctx context.Context, id K) error {
	return s.delete(ctx, "Delete", id, nil)
}

// delete removes block id (and its index items); with cond set, only if
// cond.keep reports false of the block as read (errKept otherwise), on
// condition that it is still as read.
func (s *Store[T, K]) delete(ctx context.Context, op string, id K, cond *deleteCond[T]) error {
	if s.index != "" {
		return s.protocolDelete(ctx, op, id, cond)
	}
	if cond != nil {
		return s.deleteRead(ctx, op, id, cond)
	}
	var sent sends
	_, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.key(id),
		ConditionExpression:      aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": s.keyName()},
	}, sent.count)
	if condFailed(err) {
		return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	if err != nil {
		return s.writeErr(op, id, &sent, err)
	}
	return nil
}

// update is one UpdateItem being built.
type update struct {
	e      *expr
	set    []string
	remove []string
	cond   []string
	// tok is the write token the update records in WriteAttr ("": input
	// draws one).
	tok string
	// indexItem says the update is of an index item, which records no
	// write token.
	indexItem bool
	// result: the update adds to a number, whose new value it returns
	// (ReturnValues UPDATED_NEW, or ALL_NEW when all is set).
	result, all bool
}

// stamp makes the update record write token tok in WriteAttr.
func (u *update) stamp(tok string) {
	u.tok = tok
	u.set = append(u.set, u.e.name(WriteAttr)+" = "+u.e.value(&types.AttributeValueMemberS{Value: tok}))
}

// input is the UpdateItem of the update on the item with key of table.
// An update of a block records a fresh write token (WriteAttr) unless it
// has one (stamp): every write of a block changes its token, which is
// what Migrate's conditional rewrite compares.
func (u *update) input(table string, key map[string]types.AttributeValue) *dynamodb.UpdateItemInput {
	if u.tok == "" && !u.indexItem {
		u.stamp(token.New())
	}
	in := &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key}
	var x []string
	if len(u.set) > 0 {
		x = append(x, "SET "+strings.Join(u.set, ", "))
	}
	if len(u.remove) > 0 {
		x = append(x, "REMOVE "+strings.Join(u.remove, ", "))
	}
	if len(x) > 0 {
		in.UpdateExpression = aws.String(strings.Join(x, " "))
	}
	if len(u.cond) > 0 {
		in.ConditionExpression = aws.String(strings.Join(u.cond, " AND "))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = u.e.namesOrNil(), u.e.valuesOrNil()
	switch {
	case u.all:
		in.ReturnValues = types.ReturnValueAllNew
	case u.result:
		in.ReturnValues = types.ReturnValueUpdatedNew
	}
	return in
}

// changes builds the SET clauses and conditions of u's changes: whole
// entries, elements (on condition that they exist), the version bump and
// check, and the layout guards. newLen is for a block without a _len map
// (written before its partitions, or with them whole): the counts of the
// partitions written whole are then a new _len, on condition that there
// is none.
func (s *Store[T, K]) changes(u runtime.Update[T], newLen bool) (*update, error) {
	w := &update{e: newExpr()}
	e := w.e
	w.cond = append(w.cond, "attribute_exists("+e.name(s.keyName())+")")
	var lens map[string]types.AttributeValue
	if newLen {
		lens = map[string]types.AttributeValue{}
		w.cond = append(w.cond, "attribute_not_exists("+e.name(LenAttr)+")")
	}
	for _, c := range u.Changes {
		if c.Add {
			s.add(w, c)
			continue
		}
		v, err := Encode(c.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Entry(), err)
		}
		switch {
		case c.Elem:
			f := e.name(c.Field.Key)
			w.set = append(w.set, fmt.Sprintf("%s[%d] = %s", f, c.Index, e.value(v)))
			w.cond = append(w.cond, fmt.Sprintf("%s.%s > %s", e.name(LenAttr), f, e.value(num(int64(c.Index)))))
		case c.Field.Kind == runtime.KindRoot:
			w.set = append(w.set, e.name(RootAttr)+" = "+e.value(v))
		case c.Field.Kind == runtime.KindPartition:
			l, ok := v.(*types.AttributeValueMemberL)
			if !ok {
				l = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
			}
			f := e.name(c.Field.Key)
			if lens != nil {
				w.set = append(w.set, f+" = "+e.value(l))
				lens[c.Field.Key] = num(int64(len(l.Value)))
				continue
			}
			w.set = append(w.set, f+" = "+e.value(l), fmt.Sprintf("%s.%s = %s", e.name(LenAttr), f, e.value(num(int64(len(l.Value))))))
		default:
			w.set = append(w.set, e.name(c.Field.Key)+" = "+e.value(v))
			if c.Field == s.d.Expires {
				exp, _ := c.Value.(time.Time)
				setTTL(w, exp)
			}
		}
	}
	if len(lens) > 0 {
		w.set = append(w.set, e.name(LenAttr)+" = "+e.value(&types.AttributeValueMemberM{Value: lens}))
	}
	s.layoutGuards(w, u.Changes, nil)
	s.version(w, u.IfVersion, len(u.Changes) > 0)
	return w, nil
}

// add compiles add change c into w: SET f = if_not_exists(f, 0) + delta,
// on condition that the stored value (none: 0) lies in the change's
// bounds (runtime.Change.AddBounds), so that a sum out of range writes
// nothing.
func (s *Store[T, K]) add(w *update, c runtime.Change[T]) {
	e := w.e
	f := e.name(c.Field.Key)
	w.set = append(w.set, fmt.Sprintf("%s = if_not_exists(%s, %s) + %s", f, f, e.value(num(0)), e.value(num(c.Delta))))
	lo, hi, _ := c.AddBounds()
	in := fmt.Sprintf("%s BETWEEN %s AND %s", f, e.value(num(lo)), e.value(num(hi)))
	if lo <= 0 && hi >= 0 {
		in = fmt.Sprintf("(attribute_not_exists(%s) OR %s)", f, in)
	}
	w.cond = append(w.cond, in)
	w.result = true
	// An attribute set to the value it had may be left out of
	// UPDATED_NEW (minidyn does): an addition of 0 gets ALL_NEW.
	w.all = w.all || c.Delta == 0
}

// addResult sets the Result of the add change of u from the attributes
// an UpdateItem returned (UPDATED_NEW).
func addResult[T any](u runtime.Update[T], attrs map[string]types.AttributeValue) error {
	for _, c := range u.Changes {
		if c.Add && c.Result != nil {
			n, err := intOf(attrs[c.Field.Key])
			if err != nil {
				return fmt.Errorf("the new value of %s: %w", c.Field.Key, err)
			}
			*c.Result = n
		}
	}
	return nil
}

// setsPartition reports whether u writes a partition whole.
func setsPartition[T any](u runtime.Update[T]) bool {
	return slices.ContainsFunc(u.Changes, func(c runtime.Change[T]) bool { return !c.Elem && c.Field.Kind == runtime.KindPartition })
}

// version adds the version check (want != 0) and bump to w.
func (s *Store[T, K]) version(w *update, want int64, bump bool) {
	if s.d.Version == nil {
		return
	}
	v := w.e.name(s.d.Version.Key)
	if want != 0 {
		w.cond = append(w.cond, v+" = "+w.e.value(num(want)))
	}
	if bump {
		w.set = append(w.set, fmt.Sprintf("%s = if_not_exists(%s, %s) + %s", v, v, w.e.value(num(0)), w.e.value(num(1))))
	}
}

// Update writes the changes of u in one UpdateItem: the entries they
// name, the version, on condition that the block (and every element
// named) exists and has version u.IfVersion.
func (s *Store[T, K]) Update(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	if err := bsonval.CheckUpdate(op, s.d, id, u, MaxDepth); err != nil {
		return err
	}
	for _, c := range u.Changes {
		if c.Elem && c.Index < 0 {
			return runtime.FailAt(op, s.d.Aggregate, id, c.Entry(), runtime.ErrNotFound, nil)
		}
	}
	if s.index != "" && s.tableLookupsOf(u.Keys()) {
		return s.protocolUpdate(ctx, op, id, u)
	}
	if s.gsiReads(u) {
		// A GSI lookup whose other fields the update leaves: their
		// values are read first (gsi.go).
		return s.gsiUpdate(ctx, op, id, u)
	}
	if len(u.Changes) == 0 {
		// Nothing to write: only the checks.
		return s.diagnose(ctx, op, id, u)
	}
	// The block records the update's token: a resend of an update
	// already applied fails on it (instead of moving the version twice,
	// failing its version check or applying it twice), and is then
	// recognized.
	tok := token.New()
	build := func(newLen bool) (*update, error) {
		w, err := s.changes(u, newLen)
		if err == nil {
			err = s.gsiSets(w, id, u) // in the same request
		}
		if err != nil {
			return nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		w.stamp(tok)
		wn, tv := w.e.name(WriteAttr), w.e.value(&types.AttributeValueMemberS{Value: tok})
		w.cond = append(w.cond, fmt.Sprintf("(attribute_not_exists(%s) OR %s <> %s)", wn, wn, tv))
		return w, nil
	}
	w, err := build(false)
	if err != nil {
		return err
	}
	newLen := false
	for attempt := range runtime.MaxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		var sent sends
		out, err := s.c.UpdateItem(ctx, w.input(s.table, s.key(id)), sent.count)
		if err == nil {
			if err := addResult(u, out.Attributes); err != nil {
				return runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
			return nil
		}
		if invalidPath(err) && setsPartition(u) {
			// No _len map to count the partition in: write a new one
			// (or, if one came meanwhile, the counts in it).
			newLen = !newLen
			if w, err = build(newLen); err != nil {
				return err
			}
			continue
		}
		if !condFailed(err) {
			return s.writeErr(op, id, &sent, err)
		}
		if sent.resent() && s.wrote(ctx, id, tok) {
			if w.result {
				// Applied, but the new value went with the lost reply.
				return runtime.FailAt(op, s.d.Aggregate, id, "(the addition was applied, but its reply, with the new value, was lost)", runtime.ErrUnknownOutcome, nil)
			}
			return nil
		}
		if err := s.diagnose(ctx, op, id, u); err != nil {
			return err
		}
		// The block now passes the checks: it changed meanwhile.
		if newLen {
			newLen = false // a _len map came meanwhile
			if w, err = build(newLen); err != nil {
				return err
			}
		}
	}
	return s.contended(op, id)
}

// diagnose reads block id and returns the error a write of u fails
// with: the block or an element missing, a version conflict, a block in
// another layout (nil: none). It reads the whole item: only a refused
// write comes here.
func (s *Store[T, K]) diagnose(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil {
		return wrap(op, s.d.Aggregate, id, err)
	}
	return s.check(op, id, item, u)
}

// check returns the error a write of u to item (nil: none) fails with.
func (s *Store[T, K]) check(op string, id K, item map[string]types.AttributeValue, u runtime.Update[T]) error {
	if item == nil {
		return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	if len(u.Changes) > 0 {
		if err := s.writeMismatch(op, id, item, u.Changes, nil); err != nil {
			return err
		}
	}
	if s.d.Version != nil && u.IfVersion != 0 {
		if v := versionOf(item, s.d.Version.Key); v != u.IfVersion {
			return s.conflict(op, id, true, v, u.IfVersion)
		}
	}
	for _, c := range u.Changes {
		if c.Elem && int64(c.Index) >= lenOf(item, c.Field.Key) {
			return runtime.FailAt(op, s.d.Aggregate, id, c.Entry(), runtime.ErrNotFound, nil)
		}
		if c.Add {
			old, err := intOf(item[c.Field.Key])
			if err != nil {
				return runtime.FailAt(op, s.d.Aggregate, id, "entry "+c.Field.Key, runtime.ErrUnreadable, err)
			}
			if _, ok := c.Sum(old); !ok {
				return runtime.OutOfRange(op, s.d.Aggregate, id, c)
			}
		}
	}
	return nil
}

// lenOf is the element count of partition f in item.
func lenOf(item map[string]types.AttributeValue, f string) int64 {
	m, ok := item[LenAttr].(*types.AttributeValueMemberM)
	if !ok {
		return 0
	}
	n, _ := intOf(m.Value[f])
	return n
}

// appendOf builds the UpdateItem that appends elem (already encoded) as
// element n of partition f: list_append sends only the new element; the
// condition on the count makes n its index.
//
// newLen is for a block without a _len map (written before its
// partitions): the count is then a new _len, on condition that there is
// none.
func (s *Store[T, K]) appendOf(p *runtime.Field[T], v types.AttributeValue, n int64, newLen bool, with []types.AttributeValue, fields []*runtime.Field[T]) *update {
	w := &update{e: newExpr()}
	e := w.e
	f := p.Key
	fn, ln := e.name(f), e.name(LenAttr)
	// if_not_exists and the condition on a missing count let a block
	// written before the partition existed (an older schema) take its
	// first element.
	w.set = append(w.set,
		fmt.Sprintf("%s = list_append(if_not_exists(%s, %s), %s)", fn, fn, e.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}}), e.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{v}})))
	if newLen {
		w.set = append(w.set, fmt.Sprintf("%s = %s", ln, e.value(&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{f: num(n + 1)}})))
	} else {
		w.set = append(w.set, fmt.Sprintf("%s.%s = %s", ln, fn, e.value(num(n+1))))
	}
	w.cond = append(w.cond, "attribute_exists("+e.name(s.keyName())+")")
	// Not a list stored whole, which the new element would join.
	notWhole := fmt.Sprintf("(attribute_exists(%s.%s) OR attribute_not_exists(%s))", ln, fn, fn)
	switch {
	case newLen:
		w.cond = append(w.cond, "attribute_not_exists("+ln+")", notWhole)
	case n == 0:
		w.cond = append(w.cond, fmt.Sprintf("(attribute_not_exists(%s.%s) OR %s.%s = %s)", ln, fn, ln, fn, e.value(num(0))), notWhole)
	default:
		w.cond = append(w.cond, fmt.Sprintf("%s.%s = %s", ln, fn, e.value(num(n))))
	}
	s.layoutGuards(w, nil, p)
	s.version(w, 0, true)
	setFields(w, fields, with)
	return w
}

// withValues encodes the values of with, the top-level field changes an
// Append writes with its element (the updated timestamp), and returns
// them with their fields.
func withValues[T any](with []runtime.Change[T]) ([]types.AttributeValue, []*runtime.Field[T], error) {
	vals := make([]types.AttributeValue, 0, len(with))
	fields := make([]*runtime.Field[T], 0, len(with))
	for _, c := range with {
		v, err := Encode(c.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.Entry(), err)
		}
		vals, fields = append(vals, v), append(fields, c.Field)
	}
	return vals, fields, nil
}

// setFields adds the SET of each field to its value to w.
func setFields[T any](w *update, fields []*runtime.Field[T], vals []types.AttributeValue) {
	for i, f := range fields {
		w.set = append(w.set, w.e.name(f.Key)+" = "+w.e.value(vals[i]))
	}
}

// noResend makes the SDK's retryer resend a request only after the server
// answered it (throttling, a 5xx): not after a connection error, when the
// request may have been applied. For writes that a second send would
// apply twice.
func noResend(o *dynamodb.Options) {
	if o.Retryer != nil {
		o.Retryer = serverAnswered{o.Retryer}
	}
}

type serverAnswered struct{ aws.Retryer }

func (r serverAnswered) IsErrorRetryable(err error) bool {
	return !ambiguous(err) && r.Retryer.IsErrorRetryable(err)
}

// AppendPast is the list index Append writes a new element at: SET f[i]
// with i past the end of the list appends the element (DynamoDB's
// documented rule). A list longer than AppendPast (possible only with
// elements of under 7 bytes on average in a 400 KB item) fails Append's
// condition and takes the read-first way. Not larger, because dynalite
// fills the gap of a sparse array on every such write (a cost in
// proportion to the index: 2 ms at 65,536, 30 ms at 1,048,576).
const AppendPast = 1 << 16

// Append writes elem as the next element of partition f in one
// UpdateItem that sends only the new element: SET f[AppendPast] appends
// it, _len.f counts it, and the reply (ReturnValues UPDATED_NEW) carries
// the new count, from which the element's index follows. Its condition,
// size(f) = _len.f <= AppendPast, makes that index right by construction.
// list_append would do the same write, but its UPDATED_NEW reply is the
// whole list.
//
// A block without the list or its count (written before the partition
// existed) fails the condition or the path (SET of an element of a list
// it does not have), as does a missing block: nothing is written, and
// Append reads the count and appends with list_append (appendRead).
func (s *Store[T, K]) Append(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with ...runtime.Change[T]) (int, error) {
	if err := bsonval.CheckElem(op, s.d, id, f, elem, MaxDepth); err != nil {
		return 0, err
	}
	v, err := Encode(elem)
	if err != nil {
		return 0, runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("%s: %w", f.Key, err))
	}
	wv, wf, err := withValues(with)
	if err != nil {
		return 0, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	if s.index != "" && len(s.d.LookupsOf(f.Key)) > 0 {
		return s.protocolAppend(ctx, op, id, f, elem, v, wv, wf)
	}
	w := &update{e: newExpr()}
	e := w.e
	fn, ln := e.name(f.Key), e.name(LenAttr)
	one := e.value(num(1))
	w.set = append(w.set,
		fmt.Sprintf("%s[%d] = %s", fn, AppendPast, e.value(v)),
		// if_not_exists: an expression that reads a missing attribute is
		// a ValidationException even when the condition fails first.
		fmt.Sprintf("%s.%s = if_not_exists(%s.%s, %s) + %s", ln, fn, ln, fn, e.value(num(0)), one))
	w.cond = append(w.cond, "attribute_exists("+e.name(s.keyName())+")", fmt.Sprintf("size(%s) = %s.%s", fn, ln, fn), fmt.Sprintf("size(%s) <= %s", fn, e.value(num(AppendPast))))
	s.layoutGuards(w, nil, f)
	s.version(w, 0, true)
	setFields(w, wf, wv)
	in := w.input(s.table, s.key(id))
	in.ReturnValues = types.ReturnValueUpdatedNew
	// Not resent after a lost reply: a second send would append twice.
	var sent sends
	out, err := s.c.UpdateItem(ctx, in, noResend, sent.count)
	if err != nil && ambiguous(err) {
		return 0, s.writeErr(op, id, &sent, err)
	}
	if err == nil {
		if m, ok := out.Attributes[LenAttr].(*types.AttributeValueMemberM); ok {
			if n, err := intOf(m.Value[f.Key]); err == nil && n > 0 {
				return int(n - 1), nil
			}
		}
		return 0, runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("%s: the reply of the append carries no element count: %v", f.Key, out.Attributes))
	}
	if !condFailed(err) && !invalidPath(err) {
		return 0, wrap(op, s.d.Aggregate, id, err)
	}
	return s.appendRead(ctx, op, id, f, v, wv, wf)
}

// appendRead appends v as the next element of partition f after a read of
// the element count: one UpdateItem with list_append, on condition that
// the count is still the one read (so that the index it returns is
// right). It takes blocks written before the partition existed.
func (s *Store[T, K]) appendRead(ctx context.Context, op string, id K, f *runtime.Field[T], v types.AttributeValue, wv []types.AttributeValue, wf []*runtime.Field[T]) (int, error) {
	for attempt := range runtime.MaxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return 0, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		// The whole item: the count, and the layout the block is in.
		item, err := s.getItem(ctx, id, "", nil)
		if err != nil {
			return 0, wrap(op, s.d.Aggregate, id, err)
		}
		if item == nil {
			return 0, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		if err := s.writeMismatch(op, id, item, nil, f); err != nil {
			return 0, err
		}
		n := lenOf(item, f.Key)
		_, counts := item[LenAttr]
		var sent sends
		_, err = s.c.UpdateItem(ctx, s.appendOf(f, v, n, !counts, wv, wf).input(s.table, s.key(id)), sent.count)
		if err == nil {
			return int(n), nil
		}
		if !condFailed(err) {
			return 0, s.writeErr(op, id, &sent, err)
		}
	}
	return 0, s.contended(op, id)
}

// countTrips returns a client like c whose HTTP requests count as round
// trips of the operation running in their context (runtime.RoundTrip):
// one per request sent, the retryer's resends included (nil for nil).
func countTrips(c *dynamodb.Client) *dynamodb.Client {
	if c == nil {
		return nil
	}
	return dynamodb.New(c.Options(), func(o *dynamodb.Options) {
		if o.HTTPClient != nil {
			o.HTTPClient = tripClient{o.HTTPClient}
		}
	})
}

type tripClient struct{ next dynamodb.HTTPClient }

func (c tripClient) Do(r *http.Request) (*http.Response, error) {
	runtime.RoundTrip(r.Context())
	return c.next.Do(r)
}
