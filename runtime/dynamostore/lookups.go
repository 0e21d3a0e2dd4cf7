package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/noamgen/noamgen/runtime"
)

// The lookup protocol (after runtime/mongostore, see RELIABILITY.md), for
// DynamoDB without transactions. The item of a block with lookups holds a
// stamp: _seq, the write sequence (every write that can change lookup
// values sets it above the one it read, on condition that it has not
// changed), and _inc, the incarnation, drawn when the block is created and
// copied into its index items so that a Delete removes the items of the
// block it deleted and never those of a block created again with the same
// key. An index item (p: lookup name, k: index key) holds id (the block
// key), inc, s (the sequence of the write that wrote it) and w (the
// attempt that wrote it).
//
// A write reads the block, adds the index items the new value has and
// the old lacks (unique ones with a conditional PutItem,
// attribute_not_exists(k), so two blocks never both claim a value), then
// writes the block on condition that its stamp is the one read, then
// removes the items the old value had and the new lacks. A failed block
// write removes the items its attempt created. Reads verify every index
// item against its block and skip the stale ones (removing them once older
// than StaleAfter); Repair rebuilds the index from the blocks.

// StaleAfter is the grace period of the lookup protocol: an index item
// that does not match its block is only treated as stale (dropped by a
// read, taken over by a unique claim) once it is older than this, so that
// the items of a write in flight, written before its block, are left
// alone. Set it before using the repositories.
var StaleAfter = 30 * time.Second

func stale(s int64) bool { return time.Now().UnixNano()-s > StaleAfter.Nanoseconds() }

// stamp is the lookup protocol's state in a block's item.
type stamp struct{ seq, inc int64 }

// nextSeq is the write sequence of a write over sequence old: later than
// old and about the time in nanoseconds, plus up to a millisecond of
// jitter so that two writers over one state (clocks behind old, or one
// instant) pick the same sequence with a chance of about one in a
// million: applied tells a write from another by it.
func nextSeq(old int64) int64 { return max(old, time.Now().UnixNano()) + 1 + rand.Int64N(1<<20) }

func newInc() int64 {
	for {
		if n := rand.Int64(); n != 0 {
			return n
		}
	}
}

// state is what a protocol write reads of a block.
type state[T any] struct {
	found   bool
	stamp   stamp
	version int64
	item    map[string]types.AttributeValue
	t       *T
}

func (s *Store[T, K]) readState(ctx context.Context, id K) (state[T], error) {
	var st state[T]
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil || item == nil {
		return st, err
	}
	st.found, st.item = true, item
	st.stamp.seq, _ = intOf(item[SeqAttr])
	st.stamp.inc, _ = intOf(item[IncAttr])
	if s.d.Version != nil {
		st.version, _ = intOf(item[s.d.Version.Key])
	}
	st.t, err = s.decode(item)
	return st, err
}

// stampCond adds the condition that the block's stamp is still st's.
func stampCond[T any](w *update, st state[T]) {
	e := w.e
	if !st.found {
		w.cond = append(w.cond, "attribute_not_exists("+e.name(IDAttr)+")")
		return
	}
	w.cond = append(w.cond, e.name(SeqAttr)+" = "+e.value(num(st.stamp.seq)), e.name(IncAttr)+" = "+e.value(num(st.stamp.inc)))
}

// indexKeys returns the index keys of block id holding t for lookup i,
// sorted and distinct (as strings of bytes): the value for a unique
// lookup, the value followed by the block key otherwise.
func (s *Store[T, K]) indexKeys(i int, id K, t *T) []string {
	l := s.lookups[i]
	vals := l.Keys(t)
	var blk []byte
	if !l.Unique {
		blk = s.d.Keys.Bytes(id)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		out = append(out, string(v)+string(blk))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Store[T, K]) allKeys(id K, t *T) [][]string {
	out := make([][]string, len(s.lookups))
	if t != nil {
		for i := range s.lookups {
			out[i] = s.indexKeys(i, id, t)
		}
	}
	return out
}

// minus returns the sorted keys of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			out = append(out, k)
		}
	}
	return out
}

// MaxIndexKeyBytes is the largest index key (the sort key of an index
// item: the value, followed by the block key for a non-unique lookup):
// DynamoDB's limit on sort keys.
const MaxIndexKeyBytes = 1024

// MaxKeyBytes is the largest block key (the partition key _id: the
// order-preserving bytes of a string or composite key): DynamoDB's limit
// on partition keys. A counter's item is named by the collection and its
// scope in hex, under the same limit.
const MaxKeyBytes = 2048

// checkCounter fails with runtime.ErrTooLarge when the counter item of
// id's scope would have a partition key over MaxKeyBytes.
func (s *Store[T, K]) checkCounter(op string, id K) error {
	if s.d.Counter == nil {
		return nil
	}
	key, _ := s.counterKey(id)
	if n := len(key[IDAttr].(*types.AttributeValueMemberS).Value); n > MaxKeyBytes {
		return runtime.TooLarge(op, s.d.Aggregate, id, fmt.Sprintf("the counter of its scope: a partition key of %d bytes", n), fmt.Sprintf("DynamoDB's %d-byte partition key limit", MaxKeyBytes))
	}
	return nil
}

// checkValues refuses lookup values with strings that are not UTF-8, and
// values whose index key would exceed DynamoDB's sort key limit.
func (s *Store[T, K]) checkValues(op string, id K, t *T) error {
	blk := len(s.d.Keys.Bytes(id))
	for _, l := range s.lookups {
		for _, v := range l.Keys(t) {
			if err := runtime.CheckKey(op, s.d.Aggregate, id, "lookup "+s.d.Collection+"."+l.Name, v); err != nil {
				return err
			}
			n := len(v)
			if !l.Unique {
				n += blk
			}
			if n > MaxIndexKeyBytes {
				return runtime.TooLarge(op, s.d.Aggregate, id, fmt.Sprintf("lookup %s.%s: an index key of %d bytes", s.d.Collection, l.Name, n), fmt.Sprintf("DynamoDB's %d-byte sort key limit", MaxIndexKeyBytes))
			}
		}
	}
	return nil
}

func (s *Store[T, K]) lookupName(i int) string { return s.d.Collection + "." + s.lookups[i].Name }

func (s *Store[T, K]) indexKey(i int, k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"p": &types.AttributeValueMemberS{Value: s.lookups[i].Name},
		"k": &types.AttributeValueMemberB{Value: []byte(k)},
	}
}

// entry is an index item as read.
type entry struct {
	k   string
	id  types.AttributeValue
	inc int64
	s   int64
}

func entryOf(item map[string]types.AttributeValue) entry {
	var e entry
	if b, ok := item["k"].(*types.AttributeValueMemberB); ok {
		e.k = string(b.Value)
	}
	e.id = item["id"]
	e.inc, _ = intOf(item["inc"])
	e.s, _ = intOf(item["s"])
	return e
}

// attempt records the index items one attempt of a write created, so
// that a failed attempt can remove them.
type attempt struct {
	w       int64
	created [][]string
	// touched are the items it overwrote, as they were.
	touched [][]map[string]types.AttributeValue
}

// record notes what writing item k of lookup i did: created it, or
// overwrote old.
func (a *attempt) record(i int, k string, old map[string]types.AttributeValue) {
	if len(old) == 0 {
		a.created[i] = append(a.created[i], k)
	} else {
		a.touched[i] = append(a.touched[i], old)
	}
}

// ambiguous reports an error that leaves a write's outcome unknown: the
// request may have been applied though no reply came back.
func ambiguous(err error) bool {
	var ae smithy.APIError
	return !errors.As(err, &ae)
}

// commit runs one attempt of a write of block id (incarnation inc) whose
// index keys go from before to after, with write sequence seq: it adds
// the keys after has and before lacks (unique ones first), runs write
// (which reports whether its condition held), then removes the keys
// before has and after lacks. If a claim fails or write did not happen,
// the attempt removes the items it created, and nothing else changed.
// If write's outcome is unknown, the items stay (reads verify them).
func (s *Store[T, K]) commit(ctx context.Context, op string, id K, inc int64, before, after [][]string, seq int64, insert bool, write func() (bool, error)) (bool, error) {
	began := time.Now()
	a := &attempt{w: rand.Int64(), created: make([][]string, len(s.lookups)), touched: make([][]map[string]types.AttributeValue, len(s.lookups))}
	for _, unique := range []bool{true, false} {
		for i, l := range s.lookups {
			if l.Unique != unique {
				continue
			}
			for _, k := range minus(after[i], before[i]) {
				if err := s.add(ctx, op, a, i, id, inc, k, seq); err != nil {
					s.undo(ctx, a)
					return false, err
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// The block request is never sent: the write definitely failed,
		// so its index items go.
		return false, runtime.NotSent(op, s.d.Aggregate, id, err, s.undo(ctx, a))
	}
	ok, err := write()
	if err == nil && !ok {
		// The condition failed. The SDK may have resent the request
		// after a lost reply (its retryer resends on a connection
		// reset): then the first send was applied, and undoing its
		// index items would leave the block unfindable. The block
		// tells.
		if done, rerr := s.applied(ctx, id, inc, seq); rerr == nil && done {
			ok = true
		}
	}
	if err != nil && ambiguous(err) {
		// The request may have been applied: read the block back, with a
		// fresh context, to see whether it carries this write's stamp.
		done, rerr := s.applied(ctx, id, inc, seq)
		if rerr != nil || !done {
			detail := "(outcome unknown: the write may not have been applied; its lookup entries are kept for reads to verify)"
			if rerr != nil {
				detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v; its lookup entries are kept for reads to verify)", rerr)
			}
			return false, runtime.FailAt(op, s.d.Aggregate, id, detail, runtime.ErrUnknownOutcome, err)
		}
		ok, err = true, nil // the reply was lost, the write is done
	}
	if err != nil || !ok {
		s.undo(ctx, a)
		if err != nil {
			return false, wrap(op, s.d.Aggregate, id, err)
		}
		return false, nil
	}
	// The write is done: removing the old items is best effort (reads
	// skip stale items, Repair removes them). Only items of this
	// incarnation written before seq go: a later write's are kept. It
	// runs on a context that ends runtime.CleanupTimeout after ctx.
	caller := ctx
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	if insert && time.Since(began) > StaleAfter/2 {
		if err := s.stillOwned(ctx, op, id, inc, seq, before, after); err != nil {
			return false, err
		}
	}
	var errs []error
	for i := range s.lookups {
		for _, k := range minus(before[i], after[i]) {
			errs = append(errs, s.removeEntry(ctx, i, k, id, inc, seq))
		}
	}
	return true, runtime.LeftToRepair(caller, op, s.d.Aggregate, id, errs...)
}

// stillOwned checks, after a slow insert of block id, that the unique
// claims it took are still its own (a claimer may have taken one over
// while it stalled past StaleAfter). If one is not, it deletes the block it
// inserted (on condition that it is still the one it wrote) and fails with
// runtime.ErrDuplicate.
func (s *Store[T, K]) stillOwned(ctx context.Context, op string, id K, inc, seq int64, before, after [][]string) error {
	for i, l := range s.lookups {
		if !l.Unique {
			continue
		}
		for _, k := range minus(after[i], before[i]) {
			got, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.index), Key: s.indexKey(i, k), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return runtime.FailAt(op, s.d.Aggregate, id, "(checking the unique claims of a slow write)", nil, err)
			}
			if e := entryOf(got.Item); len(got.Item) > 0 && e.inc == inc {
				if holder, err := s.keyOf(e.id); err == nil && holder == id {
					continue
				}
			}
			w := &update{e: newExpr()}
			stampCond(w, state[T]{found: true, stamp: stamp{seq: seq, inc: inc}})
			_, derr := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(s.table), Key: s.key(id),
				ConditionExpression: aws.String(w.cond[0] + " AND " + w.cond[1]), ExpressionAttributeNames: w.e.names, ExpressionAttributeValues: w.e.values,
			})
			if derr != nil && !condFailed(derr) {
				return runtime.FailAt(op, s.d.Aggregate, id, "(lost the unique claim "+s.lookupName(i)+" "+describeKey([]byte(k))+" while stalled; removing the block failed)", runtime.ErrDuplicate, derr)
			}
			return runtime.FailAt(op, s.d.Aggregate, id, "(lost the unique claim "+s.lookupName(i)+" "+describeKey([]byte(k))+" while stalled past StaleAfter)", runtime.ErrDuplicate, nil)
		}
	}
	return nil
}

// applied reports whether block id carries the stamp (seq, inc) of a
// write whose outcome is unknown. It reads on a context that ends
// runtime.CleanupTimeout after ctx (runtime.Detach).
func (s *Store[T, K]) applied(ctx context.Context, id K, inc, seq int64) (bool, error) {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(SeqAttr)+", "+e.name(IncAttr), e)
	if err != nil || item == nil {
		return false, err
	}
	sq, _ := intOf(item[SeqAttr])
	ic, _ := intOf(item[IncAttr])
	return sq == seq && ic == inc, nil
}

// removeEntry deletes index item k of lookup i if it is block id's
// (incarnation inc) and older than seq. It fails only when the request
// did (an item that is no longer this one's is left, which is not an error).
func (s *Store[T, K]) removeEntry(ctx context.Context, i int, k string, id K, inc, seq int64) error {
	e := newExpr()
	cond := fmt.Sprintf("%s = %s AND %s = %s", e.name("id"), e.value(s.KeyAttr(id)), e.name("inc"), e.value(num(inc)))
	if seq != 0 {
		cond += fmt.Sprintf(" AND %s < %s", e.name("s"), e.value(num(seq)))
	}
	_, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.index), Key: s.indexKey(i, k),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	})
	if condFailed(err) {
		return nil
	}
	return err
}

// undo removes the items attempt a created and puts back those it
// overwrote, unless a later write has taken them over since. It returns
// the first request error (what it could not undo stays for Repair). It
// runs on runtime.Detach: not cancelled with the caller, but bounded.
func (s *Store[T, K]) undo(ctx context.Context, a *attempt) error {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var first error
	keep := func(_ any, err error) {
		if err != nil && !condFailed(err) && first == nil {
			first = err
		}
	}
	mine := map[string]types.AttributeValue{":w": num(a.w)}
	for i, keys := range a.created {
		for _, k := range keys {
			keep(s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(s.index), Key: s.indexKey(i, k),
				ConditionExpression:       aws.String("#w = :w"),
				ExpressionAttributeNames:  map[string]string{"#w": "w"},
				ExpressionAttributeValues: mine,
			}))
		}
	}
	for _, olds := range a.touched {
		for _, old := range olds {
			keep(s.c.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(s.index), Item: old,
				ConditionExpression:       aws.String("#w = :w"),
				ExpressionAttributeNames:  map[string]string{"#w": "w"},
				ExpressionAttributeValues: mine,
			}))
		}
	}
	return first
}

// add writes index item k of block id (incarnation inc) for lookup i,
// recording in a what it created. A unique value another block holds
// fails with ErrDuplicate, unless that block no longer holds it and the
// item is stale: then the claim is taken over, after fencing the holder's
// write in flight (bumping its stamp).
func (s *Store[T, K]) add(ctx context.Context, op string, a *attempt, i int, id K, inc int64, k string, seq int64) error {
	item := s.indexKey(i, k)
	item["id"] = s.KeyAttr(id)
	item["inc"] = num(inc)
	item["s"] = num(seq)
	item["w"] = num(a.w)
	in := &dynamodb.PutItemInput{TableName: aws.String(s.index), Item: item, ReturnValues: types.ReturnValueAllOld}
	if !s.lookups[i].Unique {
		out, err := s.c.PutItem(ctx, in)
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		a.record(i, k, out.Attributes)
		return nil
	}
	for attempt := range maxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		in.ConditionExpression = aws.String("attribute_not_exists(#k) OR #id = :id")
		in.ExpressionAttributeNames = map[string]string{"#k": "k", "#id": "id"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":id": s.KeyAttr(id)}
		out, err := s.c.PutItem(ctx, in)
		if err == nil {
			a.record(i, k, out.Attributes)
			return nil
		}
		if !condFailed(err) {
			return wrap(op, s.d.Aggregate, id, err)
		}
		got, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.index), Key: s.indexKey(i, k), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		if len(got.Item) == 0 {
			continue // removed meanwhile: claim again
		}
		e := entryOf(got.Item)
		holder, err := s.keyOf(e.id)
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("index item %s %s: %w", s.lookupName(i), describeKey([]byte(k)), err))
		}
		if holder == id {
			continue // ours meanwhile
		}
		hst, err := s.readState(ctx, holder)
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		holds := hst.found && slices.Contains(s.indexKeys(i, holder, hst.t), k)
		if holds || !stale(e.s) {
			return runtime.FailAt(op, s.d.Aggregate, id, "(lookup "+s.lookupName(i)+" "+describeKey([]byte(k))+" is taken)", runtime.ErrDuplicate, nil)
		}
		// A stale claim: fence the holder's write in flight, then take
		// the claim over on condition that it did not change.
		if hst.found {
			w := &update{e: newExpr()}
			w.set = append(w.set, w.e.name(SeqAttr)+" = "+w.e.value(num(nextSeq(hst.stamp.seq))))
			stampCond(w, hst)
			if _, err := s.c.UpdateItem(ctx, w.input(s.table, s.key(holder))); err != nil {
				if condFailed(err) {
					continue
				}
				return wrap(op, s.d.Aggregate, id, err)
			}
		}
		take := &dynamodb.PutItemInput{TableName: aws.String(s.index), Item: item, ReturnValues: types.ReturnValueAllOld,
			ConditionExpression:       aws.String("#s = :s AND #id = :id"),
			ExpressionAttributeNames:  map[string]string{"#s": "s", "#id": "id"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": num(e.s), ":id": e.id},
		}
		out, err = s.c.PutItem(ctx, take)
		if err != nil {
			if condFailed(err) {
				continue
			}
			return wrap(op, s.d.Aggregate, id, err)
		}
		a.record(i, k, out.Attributes)
		return nil
	}
	return s.contended(op, id)
}

// protocolPut creates (insert) or replaces block t through the protocol;
// a replacement checks version want (0: no block).
func (s *Store[T, K]) protocolPut(ctx context.Context, op string, t *T, insert bool, want int64) error {
	id := *s.d.ID(t)
	if err := s.checkValues(op, id, t); err != nil {
		return err
	}
	after := s.allKeys(id, t)
	for attempt := range maxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		var st state[T]
		if !insert {
			var err error
			if st, err = s.readState(ctx, id); err != nil {
				return wrap(op, s.d.Aggregate, id, err)
			}
			if s.d.Version != nil && (st.found != (want != 0) || st.version != want) {
				return s.conflict(op, id, st.found, st.version, want)
			}
		}
		inc := st.stamp.inc
		if !st.found {
			inc = newInc()
		}
		seq := nextSeq(st.stamp.seq)
		item, err := s.item(t, want+1, &stamp{seq: seq, inc: inc})
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		if err := s.checkSize(op, id, item); err != nil {
			return err
		}
		var before [][]string
		if st.found {
			before = s.allKeys(id, st.t)
		} else {
			before = s.allKeys(id, nil)
		}
		var dup bool
		done, err := s.commit(ctx, op, id, inc, before, after, seq, !st.found, func() (bool, error) {
			w := &update{e: newExpr()}
			stampCond(w, st)
			if st.found && s.d.Version != nil {
				// A write of unindexed fields changes the version, not
				// the stamp.
				s.version(w, want, false)
			}
			in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
				ConditionExpression: aws.String(strings.Join(w.cond, " AND ")), ExpressionAttributeNames: w.e.namesOrNil(), ExpressionAttributeValues: w.e.valuesOrNil()}
			_, err := s.c.PutItem(ctx, in)
			if condFailed(err) {
				dup = !st.found
				return false, nil
			}
			return err == nil, err
		})
		if err != nil || done {
			return err
		}
		if dup && insert {
			return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrDuplicate, nil)
		}
	}
	return s.contended(op, id)
}

// protocolUpdate writes the changes of u, which change lookup values.
func (s *Store[T, K]) protocolUpdate(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	for attempt := range maxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		st, err := s.readState(ctx, id)
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		if err := s.check(op, id, st.item, u); err != nil {
			return err
		}
		before := s.allKeys(id, st.t)
		for _, c := range u.Changes {
			if err := c.Apply(st.t); err != nil {
				if errors.Is(err, runtime.ErrNotFound) {
					return runtime.FailAt(op, s.d.Aggregate, id, c.Entry(), runtime.ErrNotFound, nil)
				}
				return runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
		}
		if err := s.checkValues(op, id, st.t); err != nil {
			return err
		}
		w, err := s.changes(u)
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		done, err := s.stampedWrite(ctx, op, id, st, before, s.allKeys(id, st.t), w)
		if err != nil || done {
			return err
		}
	}
	return s.contended(op, id)
}

// stampedWrite commits UpdateItem w of block id, read as st, with its
// stamp checked and moved on.
func (s *Store[T, K]) stampedWrite(ctx context.Context, op string, id K, st state[T], before, after [][]string, w *update) (bool, error) {
	seq := nextSeq(st.stamp.seq)
	w.set = append(w.set, w.e.name(SeqAttr)+" = "+w.e.value(num(seq)))
	stampCond(w, st)
	return s.commit(ctx, op, id, st.stamp.inc, before, after, seq, false, func() (bool, error) {
		_, err := s.c.UpdateItem(ctx, w.input(s.table, s.key(id)))
		if condFailed(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// protocolAppend appends to a partition whose elements lookups read.
func (s *Store[T, K]) protocolAppend(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, v types.AttributeValue) (int, error) {
	for attempt := range maxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return 0, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		st, err := s.readState(ctx, id)
		if err != nil {
			return 0, wrap(op, s.d.Aggregate, id, err)
		}
		if !st.found {
			return 0, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		before := s.allKeys(id, st.t)
		n := lenOf(st.item, f.Key)
		if err := f.AppendValue(st.t, elem); err != nil {
			return 0, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		if err := s.checkValues(op, id, st.t); err != nil {
			return 0, err
		}
		done, err := s.stampedWrite(ctx, op, id, st, before, s.allKeys(id, st.t), s.appendOf(f.Key, v, n))
		if err != nil {
			return 0, err
		}
		if done {
			return int(n), nil
		}
	}
	return 0, s.contended(op, id)
}

// protocolDelete removes block id, then its index items: those of the
// incarnation it removed.
func (s *Store[T, K]) protocolDelete(ctx context.Context, op string, id K) error {
	for attempt := range maxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		st, err := s.readState(ctx, id)
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		if !st.found {
			return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		w := &update{e: newExpr()}
		stampCond(w, st)
		_, err = s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: s.key(id),
			ConditionExpression: aws.String(w.cond[0] + " AND " + w.cond[1]), ExpressionAttributeNames: w.e.names, ExpressionAttributeValues: w.e.values,
		})
		if condFailed(err) {
			continue
		}
		if err != nil {
			return wrap(op, s.d.Aggregate, id, err)
		}
		// The block is gone: removing its items is best effort, on a
		// context that ends runtime.CleanupTimeout after ctx.
		cctx, cancel := runtime.Detach(ctx)
		defer cancel()
		var errs []error
		for i, keys := range s.allKeys(id, st.t) {
			for _, k := range keys {
				errs = append(errs, s.removeEntry(cctx, i, k, id, st.stamp.inc, 0))
			}
		}
		return runtime.LeftToRepair(ctx, op, s.d.Aggregate, id, errs...)
	}
	return s.contended(op, id)
}

// describeKey renders an index key as its components, e.g. ("Dortmund",
// 4), for error messages and repair reports.
func describeKey(b []byte) string {
	r := runtime.NewKeyReader(b)
	var parts []string
	for !r.Done() {
		var s string
		switch r.Rest()[0] {
		case 0x02:
			v, err := r.String()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			s = fmt.Sprintf("%q", v)
		case 0x03:
			v, err := r.Int()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			s = fmt.Sprint(v)
		case 0x04:
			v, err := r.Uint()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			s = fmt.Sprint(v)
		default:
			return fmt.Sprintf("%x", b)
		}
		parts = append(parts, s)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	var buf bytes.Buffer
	buf.WriteByte('(')
	for i, p := range parts {
		if i > 0 {
			buf.WriteString(", ")
		}
		buf.WriteString(p)
	}
	buf.WriteByte(')')
	return buf.String()
}
