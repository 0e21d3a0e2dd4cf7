package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// The lookup protocol is runtime/index's (see RELIABILITY.md), run over
// the primitives of primitives.go, without transactions. The item of a
// block with lookups holds a stamp: _seq, the write sequence (every write
// that can change lookup values sets it above the one it read, on
// condition that it has not changed), and _inc, the incarnation, drawn
// when the block is created and copied into its index items so that a
// Delete removes the items of the block it deleted and never those of a
// block created again with the same key. The block write of a protocol
// write is one conditional request (PutItem, UpdateItem or DeleteItem),
// built here; the engine adds the index items before it and removes the
// old ones after it.

// StaleAfter is the grace period of the lookup protocol: an index item
// that does not match its block is only treated as stale (dropped by a
// read, taken over by a unique claim) once it is older than this, so that
// the items of a write in flight, written before its block, are left
// alone. Set it before using the repositories.
var StaleAfter = 30 * time.Second

// engine returns the lookup engine of a store with lookups.
func (s *Store[T, K]) engine() *index.Engine[*T] {
	e := &index.Engine[*T]{
		Agg: s.d.Aggregate, P: prims[T, K]{s},
		ID: func(b []byte) any {
			if k, err := s.readKey(b); err == nil {
				return k
			}
			return runtime.FormatKey(b)
		},
		StaleAfter: func() time.Duration { return StaleAfter },
		Batch:      index.Limits{Keys: MaxBatch},
		// The SDK resends a request after a lost reply: a block write
		// may see its own first send as a failed condition.
		CheckUnmatched: true,
	}
	for _, l := range s.lookups {
		e.Lookups = append(e.Lookups, index.Lookup[*T]{Name: s.d.Collection + "." + l.Name, Unique: l.Unique, Values: l.Keys})
	}
	return e
}

// Primitives returns the store primitives the index engine runs the
// lookups on (nil without lookups), in the order of the descriptor's
// lookups (then the scope index): for the primitives' conformance suite
// (runtime/storetest/indextest).
func (s *Store[T, K]) Primitives() index.Primitives[*T] {
	if s.eng == nil {
		return nil
	}
	return s.eng.P
}

// state is what a protocol write reads of a block.
type state[T any] struct {
	found   bool
	stamp   index.Stamp
	version int64
	item    map[string]types.AttributeValue
	t       *T
}

// readFound is attempt's read of a write that needs block id: it backs
// off (backoff), then reads the block's state; runtime.ErrNotFound when
// the block does not exist.
func (s *Store[T, K]) readFound(ctx context.Context, op string, id K, attempt int) (state[T], error) {
	if err := backoff(ctx, attempt); err != nil {
		return state[T]{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	st, err := s.readState(ctx, id)
	if err != nil {
		return st, wrap(op, s.d.Aggregate, id, err)
	}
	if !st.found {
		return st, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	return st, nil
}

func (s *Store[T, K]) readState(ctx context.Context, id K) (state[T], error) {
	var st state[T]
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil || item == nil {
		return st, err
	}
	st.found, st.item, st.stamp = true, item, stampOf(item)
	if s.d.Version != nil {
		st.version, _ = intOf(item[s.d.Version.Key])
	}
	st.t, err = s.decode(item)
	return st, err
}

// stampCond adds the condition that the block is as st read it: with its
// stamp, or missing.
func (s *Store[T, K]) stampCond(w *update, st state[T]) {
	if !st.found {
		w.cond = append(w.cond, "attribute_not_exists("+w.e.name(s.keyName())+")")
		return
	}
	stampIs(w, st.stamp)
}

// keys are the index keys of block id holding t (nil: none).
func (s *Store[T, K]) keys(id K, t *T) index.Keys {
	if t == nil {
		return nil
	}
	return s.eng.Keys(s.d.Keys.Bytes(id), t)
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
	scope, _ := s.d.Counter.Split(id)
	if _, n := s.counterItem(scope); n > MaxKeyBytes {
		return runtime.TooLarge(op, s.d.Aggregate, id, fmt.Sprintf("the counter of its scope: a partition key of %d bytes", n), fmt.Sprintf("DynamoDB's %d-byte partition key limit", MaxKeyBytes))
	}
	return nil
}

// checkValues refuses lookup values with strings that are not UTF-8, and
// values whose index key would exceed DynamoDB's sort key limit.
func (s *Store[T, K]) checkValues(op string, id K, t *T) error {
	if err := s.checkSingleKey(op, id); err != nil {
		return err
	}
	blk := len(s.d.Keys.Bytes(id))
	for _, l := range slices.Concat(s.lookups, s.gsis) {
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

// run runs a protocol write of block id through the engine: read is
// called once per attempt, after a backoff from the second on, to read
// the block and say what to write. A write of unique values (unique) is
// one transaction per attempt where they are on (tx.go).
func (s *Store[T, K]) run(ctx context.Context, op string, id K, unique bool, read func() (index.Attempt, error)) error {
	if tx, err := s.inTx(ctx, op, id, unique); err != nil {
		return err
	} else if tx {
		if err := s.txRun(ctx, op, id, false, read); err != errProtocol {
			return err
		}
	}
	n := 0
	return s.eng.Run(ctx, op, id, s.d.Keys.Bytes(id), func() (index.Attempt, error) {
		if err := backoff(ctx, n); err != nil {
			return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		n++
		return read()
	})
}

// sizing is the stamp an item's size is checked with before its stamp is
// drawn: its numbers are as wide as any.
var sizing = &index.Stamp{Seq: math.MinInt64, Inc: math.MinInt64}

// protocolPut creates (insert: one attempt, refused if the block exists)
// or replaces block t through the protocol; a replacement checks version
// want (0: no block).
func (s *Store[T, K]) protocolPut(ctx context.Context, op string, t *T, insert bool, want int64) error {
	id := *s.d.ID(t)
	if err := s.checkValues(op, id, t); err != nil {
		return err
	}
	attempt := s.putAttempt(op, t, want)
	unique := hasUnique(s.lookups)
	if insert {
		if tx, err := s.inTx(ctx, op, id, unique); err != nil {
			return err
		} else if tx {
			err := s.txRun(ctx, op, id, true, func() (index.Attempt, error) { return attempt(state[T]{}) })
			if err != errProtocol {
				return err
			}
		}
		a, err := attempt(state[T]{})
		if err != nil {
			return err
		}
		done, err := s.eng.Commit(ctx, op, id, s.d.Keys.Bytes(id), index.NewInc(), nil, a.After, index.NextSeq(0), true, a.Write)
		if err == nil && !done {
			return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrDuplicate, nil)
		}
		return err
	}
	return s.run(ctx, op, id, unique, func() (index.Attempt, error) {
		st, err := s.readState(ctx, id)
		if err != nil {
			return index.Attempt{}, wrap(op, s.d.Aggregate, id, err)
		}
		if s.d.Version != nil {
			// A block without a version entry is at version 0.
			_, versioned := st.item[s.d.Version.Key]
			if versioned != (want != 0) || st.version != want {
				return index.Attempt{}, s.conflict(op, id, st.found, st.version, want)
			}
		}
		return attempt(st)
	})
}

// putAttempt returns the protocol attempt of a write of t (a Put
// checking version want, or a Create: want 0) over block st as read: for
// protocolPut, and for the transactions of a batch (txbatch.go).
func (s *Store[T, K]) putAttempt(op string, t *T, want int64) func(st state[T]) (index.Attempt, error) {
	id := *s.d.ID(t)
	after := s.keys(id, t)
	return func(st state[T]) (index.Attempt, error) {
		if av := st.item[s.createdKey()]; av != nil {
			// The block's created timestamp stays (the write is on
			// condition that the block is as read).
			if err := s.d.KeepCreated(op, id, t, &decoder{av}); err != nil {
				return index.Attempt{}, err
			}
		}
		item, err := s.item(t, want+1, sizing)
		if err != nil {
			return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		if err := s.checkSize(op, id, item); err != nil {
			return index.Attempt{}, err
		}
		return index.Attempt{Found: st.found, Stamp: st.stamp, Before: s.keys(id, st.t), After: after,
			Write: func(ctx context.Context, stamp index.Stamp) (bool, error) {
				item[SeqAttr], item[IncAttr] = num(stamp.Seq), num(stamp.Inc)
				w := &update{e: newExpr()}
				s.stampCond(w, st)
				if st.found && s.d.Version != nil {
					// A write of unindexed fields changes the version, not
					// the stamp.
					s.version(w, want, false)
					if want == 0 {
						// A block written before the version existed.
						w.cond = append(w.cond, "attribute_not_exists("+w.e.name(s.d.Version.Key)+")")
					}
				}
				err := s.blockPut(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
					ConditionExpression: aws.String(strings.Join(w.cond, " AND ")), ExpressionAttributeNames: w.e.namesOrNil(), ExpressionAttributeValues: w.e.valuesOrNil()})
				return s.written(op, id, err)
			}}, nil
	}
}

// createdKey is the attribute of the created timestamp, "" for an
// aggregate without one.
func (s *Store[T, K]) createdKey() string {
	if s.d.Created == nil {
		return ""
	}
	return s.d.Created.Key
}

// written is the outcome of a block write for the engine: whether its
// condition held, a definite refusal as a *runtime.Error, any other error
// (its outcome unknown) as it is.
func (s *Store[T, K]) written(op string, id K, err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case condFailed(err):
		return false, nil
	case ambiguous(err):
		return false, err
	}
	return false, wrap(op, s.d.Aggregate, id, err)
}

// protocolUpdate writes the changes of u, which change lookup values.
func (s *Store[T, K]) protocolUpdate(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	return s.run(ctx, op, id, hasUnique(s.lookups), func() (index.Attempt, error) {
		st, err := s.readState(ctx, id)
		if err != nil {
			return index.Attempt{}, wrap(op, s.d.Aggregate, id, err)
		}
		if err := s.check(op, id, st.item, u); err != nil {
			return index.Attempt{}, err
		}
		before := s.keys(id, st.t)
		for _, c := range u.Changes {
			if err := c.Apply(st.t); err != nil {
				if errors.Is(err, runtime.ErrNotFound) {
					return index.Attempt{}, runtime.FailAt(op, s.d.Aggregate, id, c.Entry(), runtime.ErrNotFound, nil)
				}
				return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
		}
		if err := s.checkValues(op, id, st.t); err != nil {
			return index.Attempt{}, err
		}
		w, err := s.changes(u, false)
		if err != nil {
			return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		s.gsiGuarded(w, id, st.item, st.t, u.Keys())
		return s.stamped(op, id, st, before, w), nil
	})
}

// stamped is the attempt of UpdateItem w of block id, read as st, with
// its stamp checked and moved on.
func (s *Store[T, K]) stamped(op string, id K, st state[T], before index.Keys, w *update) index.Attempt {
	return index.Attempt{Found: true, Stamp: st.stamp, Before: before, After: s.keys(id, st.t),
		Write: func(ctx context.Context, stamp index.Stamp) (bool, error) {
			w.set = append(w.set, w.e.name(SeqAttr)+" = "+w.e.value(num(stamp.Seq)))
			s.stampCond(w, st)
			err := s.blockUpdate(ctx, w.input(s.table, s.key(id)))
			return s.written(op, id, err)
		}}
}

// protocolAppend appends to a partition whose elements lookups read.
func (s *Store[T, K]) protocolAppend(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, v types.AttributeValue, wv []types.AttributeValue, wf []*runtime.Field[T]) (int, error) {
	var n int64
	err := s.run(ctx, op, id, hasUnique(s.d.LookupsOf(f.Key)), func() (index.Attempt, error) {
		st, err := s.readState(ctx, id)
		if err != nil {
			return index.Attempt{}, wrap(op, s.d.Aggregate, id, err)
		}
		if !st.found {
			return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		}
		if err := s.writeMismatch(op, id, st.item, nil, f); err != nil {
			return index.Attempt{}, err
		}
		before := s.keys(id, st.t)
		n = lenOf(st.item, f.Key)
		_, counts := st.item[LenAttr]
		if err := f.AppendValue(st.t, elem); err != nil {
			return index.Attempt{}, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		if err := s.checkValues(op, id, st.t); err != nil {
			return index.Attempt{}, err
		}
		return s.stamped(op, id, st, before, s.appendOf(f, v, n, !counts, wv, wf)), nil
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// protocolDelete removes block id on condition that its stamp is the one
// read, then (the engine) its index items: those of the incarnation it
// removed.
func (s *Store[T, K]) protocolDelete(ctx context.Context, op string, id K, cond *deleteCond[T]) error {
	if cond == nil {
		// One transaction where they are on (tx.go); Sweep's deletes of
		// expired blocks keep the protocol.
		if tx, err := s.inTx(ctx, op, id, hasUnique(s.lookups)); err != nil {
			return err
		} else if tx {
			if err := s.txDelete(ctx, op, id); err != errProtocol {
				return err
			}
		}
	}
	for attempt := range runtime.MaxAttempts {
		st, err := s.readFound(ctx, op, id, attempt)
		if err != nil {
			return err
		}
		if cond != nil && cond.keep(st.t) {
			return errKept
		}
		w := &update{e: newExpr()}
		s.stampCond(w, st)
		var sent sends
		_, err = s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: s.key(id),
			ConditionExpression: aws.String(strings.Join(w.cond, " AND ")), ExpressionAttributeNames: w.e.names, ExpressionAttributeValues: w.e.values,
		}, sent.count)
		if condFailed(err) {
			continue
		}
		if err != nil {
			// Without a reply the block may be gone: its index items stay
			// for Repair (reads verify them).
			return s.writeErr(op, id, &sent, err)
		}
		return s.eng.Deleted(ctx, op, id, s.d.Keys.Bytes(id), st.stamp.Inc, s.keys(id, st.t))
	}
	return s.contended(op, id)
}
