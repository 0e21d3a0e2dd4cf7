package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Batch writes in transactions.
//
// Where the endpoint has transactions (Store.Transactions), the writes
// of a batch that need a condition (CreateMany; PutMany of an aggregate
// with an index table, a version or a created timestamp; DeleteMany of
// one with an index table), of an aggregate without a counter (with
// one, CreateMany and PutMany once the counters moved: counterbatch.go),
// are packed into TransactWriteItems of up to MaxTxItems actions: each
// item's block write with the very condition of its single call, and the Puts
// and Deletes of its index items with their unique claims, as tx.go
// builds them for one write. The blocks a PutMany or DeleteMany replaces
// are read first with BatchGetItem (MaxBatch keys a request), as the
// single call reads its block. N items cost about ceil(actions/100)
// requests, plus the reads.
//
// A transaction is all or nothing: when it is cancelled, its
// CancellationReasons say which actions failed. An item whose block
// condition failed is runtime.ErrDuplicate for a Create; one whose claim
// is held by a block holding the value is runtime.ErrDuplicate naming the
// value (claimFailed); any other failed item (a block changed since it
// was read: a version conflict, a concurrent write) is its single call,
// made right after its transaction settled, which says exactly why. The
// other items are sent again in a new transaction.
//
// One transaction touches an item at most once: two items of a batch
// that write the same index item (two blocks claiming one unique value,
// one releasing a value another claims) go in transactions one after the
// other, in slice order, so the first wins as with the single calls. A
// key given twice ends the batch's segment: the items from the second on
// are read and packed after the ones before it are written.
//
// Each transaction carries a ClientRequestToken; after a lost reply it is
// sent once more with the same token (which DynamoDB does not apply
// twice), and if that reply is lost too its blocks are read back
// (txLost): an aggregate with an index table stamps its blocks, so a
// block carrying its write's stamp shows that the transaction, all or
// nothing, was applied (and a block a DeleteMany item deletes being gone
// settles that item, as for the single Delete); the items still unknown
// get runtime.ErrUnknownOutcome, as do all of a transaction of blocks
// without stamps. A transaction writes each item twice the capacity
// units of a plain write.
//
// Without transactions (dynalite, TxOff) a batch makes the single
// conditional calls (batch.go): BatchWriteItem takes no condition.

// maxTxBytes bounds the estimated size of one transaction's items, under
// DynamoDB's 4 MB aggregate limit.
const maxTxBytes = 4_000_000

// maxTxRounds bounds the rounds of a transaction in which no item was
// settled (lost to concurrent transactions, throttled).
const maxTxRounds = 10

// txPlan is one item's write in a batch of transactions.
type txPlan struct {
	i      int // the item's position in the batch
	items  []types.TransactWriteItem
	what   []txItem
	keys   []string // the item each action touches
	bytes  int      // its estimated size
	insert bool     // a Create: the block existing is ErrDuplicate
	block  []byte
	done   func() // after it was written (nil: nothing to do)
	// What the block holds once the transaction is applied (txLost):
	// stamp (nil: a block without one), or nothing (deletes).
	stamp   *index.Stamp
	deletes bool
}

// batchTx reports whether a batch of conditional writes is packed into
// transactions.
func (s *Store[T, K]) batchTx(ctx context.Context) bool {
	if s.d.Counter != nil {
		return false
	}
	on, err := s.Transactions(ctx)
	return err == nil && on
}

// txCreateMany is CreateMany in transactions.
func (s *Store[T, K]) txCreateMany(ctx context.Context, ts []*T) []error {
	const op = "Create"
	return s.txBatch(ctx, op, len(ts), func(i int) K { return *s.d.ID(ts[i]) }, false,
		func(i int, _ *readState[T]) (*txPlan, error) {
			t := ts[i]
			id := *s.d.ID(t)
			if err := bsonval.CheckBlock(op, s.d, t, MaxDepth); err != nil {
				return nil, err
			}
			if err := s.checkValues(op, id, t); err != nil {
				return nil, err
			}
			var p *txPlan
			if s.index == "" {
				item, err := s.item(t, 1, nil)
				if err != nil {
					return nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
				}
				if err := s.checkSize(op, id, item); err != nil {
					return nil, err
				}
				p = s.plainPlan(&types.Put{TableName: aws.String(s.table), Item: item,
					ConditionExpression:      aws.String("attribute_not_exists(#id)"),
					ExpressionAttributeNames: map[string]string{"#id": s.keyName()}})
			} else {
				a, err := s.putAttempt(op, t, 0)(state[T]{})
				if err != nil {
					return nil, err
				}
				if p, err = s.attemptPlan(ctx, op, id, a); p == nil || err != nil {
					return p, err
				}
			}
			p.insert, p.done = true, func() { s.d.SetVersion(t, 1) }
			return p, nil
		},
		func(i int) error { return s.Create(ctx, ts[i]) })
}

// txPutMany is PutMany in transactions.
func (s *Store[T, K]) txPutMany(ctx context.Context, ts []*T) []error {
	const op = "Put"
	read := s.index != "" || s.d.Created != nil
	return s.txBatch(ctx, op, len(ts), func(i int) K { return *s.d.ID(ts[i]) }, read,
		func(i int, r *readState[T]) (*txPlan, error) {
			t := ts[i]
			id := *s.d.ID(t)
			want := s.d.VersionOf(t)
			if err := bsonval.CheckBlock(op, s.d, t, MaxDepth); err != nil {
				return nil, err
			}
			if err := s.checkValues(op, id, t); err != nil {
				return nil, err
			}
			if r != nil && r.err != nil {
				return nil, r.err
			}
			var st state[T]
			if r != nil {
				st = r.st
			}
			var p *txPlan
			if s.index == "" {
				// put: the created timestamp of a block that exists stays.
				created := st.item[s.createdKey()]
				if created != nil {
					if err := s.d.KeepCreated(op, id, t, &decoder{created}); err != nil {
						return nil, err
					}
				}
				in, err := s.putInput(op, t, want, created)
				if err != nil {
					return nil, err
				}
				p = s.plainPlan(&types.Put{TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
					ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues})
			} else {
				// protocolPut's read.
				if s.d.Version != nil {
					_, versioned := st.item[s.d.Version.Key]
					if versioned != (want != 0) || st.version != want {
						return nil, s.conflict(op, id, st.found, st.version, want)
					}
				}
				a, err := s.putAttempt(op, t, want)(st)
				if err != nil {
					return nil, err
				}
				if p, err = s.attemptPlan(ctx, op, id, a); p == nil || err != nil {
					return p, err
				}
			}
			p.done = func() { s.d.SetVersion(t, want+1) }
			return p, nil
		},
		func(i int) error { return s.Put(ctx, ts[i]) })
}

// txDeleteMany is DeleteMany of an aggregate with an index table in
// transactions: txDelete's, one per item.
func (s *Store[T, K]) txDeleteMany(ctx context.Context, ids []K) []error {
	const op = "Delete"
	return s.txBatch(ctx, op, len(ids), func(i int) K { return ids[i] }, true,
		func(i int, r *readState[T]) (*txPlan, error) {
			id := ids[i]
			if r.err != nil {
				return nil, r.err
			}
			st := r.st
			if !st.found {
				return nil, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
			}
			block := s.d.Keys.Bytes(id)
			w, fits, err := s.deleteWrite(id, block, st)
			if err != nil {
				return nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
			} else if !fits {
				return nil, nil
			}
			p := s.plan(w, block)
			p.deletes = true
			return p, nil
		},
		func(i int) error { return s.Delete(ctx, ids[i]) })
}

// plainPlan is the plan of a block write without index items.
func (s *Store[T, K]) plainPlan(put *types.Put) *txPlan {
	return s.plan(&txWrite{items: []types.TransactWriteItem{{Put: put}}, what: []txItem{{lookup: -1}}}, nil)
}

// attemptPlan is the plan of protocol attempt a of block id as one
// transaction (txRun's): nil when its index items do not fit in one.
func (s *Store[T, K]) attemptPlan(ctx context.Context, op string, id K, a index.Attempt) (*txPlan, error) {
	block := s.d.Keys.Bytes(id)
	st := index.Stamp{Seq: index.NextSeq(a.Stamp.Seq), Inc: a.Stamp.Inc}
	if !a.Found {
		st.Inc = index.NewInc()
	}
	var c captured
	if _, err := a.Write(context.WithValue(ctx, captureKey{}, &c), st); err != nil {
		return nil, err
	}
	w := &txWrite{items: []types.TransactWriteItem{c.item}, what: []txItem{{lookup: -1}}}
	if fits, err := s.indexItems(w, block, st, a.Before, a.After); err != nil {
		return nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	} else if !fits {
		return nil, nil
	}
	p := s.plan(w, block)
	p.stamp = &st
	return p, nil
}

// plan is the plan of transaction write w of block.
func (s *Store[T, K]) plan(w *txWrite, block []byte) *txPlan {
	p := &txPlan{items: w.items, what: w.what, block: block}
	for _, it := range w.items {
		table, key, n := actionOf(it)
		p.bytes += n
		if v, ok := key[IDAttr]; ok {
			p.keys = append(p.keys, table+"\x00"+attrKey(v))
		} else if v, ok := key[PKAttr]; ok {
			p.keys = append(p.keys, table+"\x00"+attrKey(v)+"\x00"+attrKey(key[SKAttr]))
		} else {
			p.keys = append(p.keys, table+"\x00"+attrKey(key["p"])+"\x00"+attrKey(key["k"]))
		}
	}
	return p
}

// actionOf returns the table and key of the item a transaction action
// writes, and its estimated size.
func actionOf(it types.TransactWriteItem) (string, map[string]types.AttributeValue, int) {
	switch {
	case it.Put != nil:
		return aws.ToString(it.Put.TableName), it.Put.Item, itemSize(it.Put.Item)
	case it.Update != nil:
		return aws.ToString(it.Update.TableName), it.Update.Key, itemSize(it.Update.Key) + itemSize(it.Update.ExpressionAttributeValues)
	case it.Delete != nil:
		return aws.ToString(it.Delete.TableName), it.Delete.Key, itemSize(it.Delete.Key)
	case it.ConditionCheck != nil:
		return aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key, itemSize(it.ConditionCheck.Key)
	}
	return "", nil, 0
}

// readState is what a batch read of one block found.
type readState[T any] struct {
	st  state[T]
	err error
}

// txBatch writes the n items of a batch (item i of block key(i)) in
// transactions, segment by segment (a key given twice starts a new one).
// With read set, each segment's blocks are read first (BatchGetItem).
// plan builds item i's plan from its block as read (nil without read),
// or fails it; a nil plan (its index items do not fit in one transaction)
// is the single call, single, made after the items before it.
func (s *Store[T, K]) txBatch(ctx context.Context, op string, n int, key func(int) K, read bool,
	plan func(int, *readState[T]) (*txPlan, error), single func(int) error) []error {
	errs := make([]error, n)
	for start := 0; start < n; {
		end := start
		seen := map[K]bool{}
		for ; end < n && !seen[key(end)]; end++ {
			seen[key(end)] = true
		}
		s.txSegment(ctx, op, start, end, key, read, plan, single, errs)
		start = end
	}
	return errs
}

// txSegment writes items [start, end) of a batch, of distinct keys.
func (s *Store[T, K]) txSegment(ctx context.Context, op string, start, end int, key func(int) K, read bool,
	plan func(int, *readState[T]) (*txPlan, error), single func(int) error, errs []error) {
	var states map[string]*readState[T]
	if read {
		ids := make([]K, 0, end-start)
		for i := start; i < end; i++ {
			ids = append(ids, key(i))
		}
		var err error
		if states, err = s.readStates(ctx, op, ids); err != nil {
			for i := start; i < end; i++ {
				errs[i] = wrap(op, s.d.Aggregate, key(i), err)
			}
			return
		}
	}
	var plans []*txPlan
	flush := func() {
		for _, tx := range packTx(plans) {
			s.sendTx(ctx, op, key, tx, single, errs)
		}
		plans = plans[:0]
	}
	for i := start; i < end; i++ {
		var r *readState[T]
		if read {
			r = states[attrKey(s.KeyAttr(key(i)))]
		}
		p, err := plan(i, r)
		switch {
		case err != nil:
			errs[i] = err
		case p == nil:
			// Its index items do not fit in one transaction: its single
			// call, after the items before it.
			flush()
			errs[i] = single(i)
		default:
			p.i = i
			plans = append(plans, p)
		}
	}
	flush()
}

// readStates reads the blocks ids (distinct), MaxBatch a BatchGetItem, as
// readState reads one: by attrKey of their key attribute. A block that
// does not decode has its error.
func (s *Store[T, K]) readStates(ctx context.Context, op string, ids []K) (map[string]*readState[T], error) {
	out := make(map[string]*readState[T], len(ids))
	for _, id := range ids {
		out[attrKey(s.KeyAttr(id))] = &readState[T]{}
	}
	for from := 0; from < len(ids); from += MaxBatch {
		keys := make([]map[string]types.AttributeValue, 0, MaxBatch)
		for _, id := range ids[from:min(from+MaxBatch, len(ids))] {
			keys = append(keys, s.key(id))
		}
		items, err := s.batchGet(ctx, s.table, keys)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			r := out[attrKey(s.idAttr(item))]
			if r == nil {
				continue
			}
			r.st = state[T]{found: true, item: item, stamp: stampOf(item)}
			if s.d.Version != nil {
				r.st.version, _ = intOf(item[s.d.Version.Key])
			}
			if s.index != "" {
				if r.st.t, err = s.decode(item); err != nil {
					id, _ := s.keyOf(s.idAttr(item))
					r.err = wrap(op, s.d.Aggregate, id, err)
				}
			}
		}
	}
	return out, nil
}

// packTx packs plans into transactions of at most MaxTxItems actions and
// maxTxBytes, in slice order: each in the first transaction with room
// after the last one that touches an item it touches.
func packTx(plans []*txPlan) [][]*txPlan {
	var txs [][]*txPlan
	var actions, bytes []int
	last := map[string]int{}
	for _, p := range plans {
		j := 0
		for _, k := range p.keys {
			if l, ok := last[k]; ok && l >= j {
				j = l + 1
			}
		}
		for j < len(txs) && (actions[j]+len(p.items) > MaxTxItems || bytes[j]+p.bytes > maxTxBytes) {
			j++
		}
		if j == len(txs) {
			txs, actions, bytes = append(txs, nil), append(actions, 0), append(bytes, 0)
		}
		txs[j] = append(txs[j], p)
		actions[j] += len(p.items)
		bytes[j] += p.bytes
		for _, k := range p.keys {
			last[k] = j
		}
	}
	return txs
}

// sendTx writes plans in one transaction, again without those that
// failed until none is left, then makes the single calls of the failed
// items whose error their plan cannot tell.
func (s *Store[T, K]) sendTx(ctx context.Context, op string, key func(int) K, plans []*txPlan, single func(int) error, errs []error) {
	var alone []*txPlan
	idle := 0 // rounds that settled no item
	for len(plans) > 0 {
		if idle == maxTxRounds {
			alone = append(alone, plans...)
			break
		}
		if err := backoff(ctx, idle); err != nil {
			for _, p := range plans {
				errs[p.i] = runtime.NotSent(op, s.d.Aggregate, key(p.i), err, nil)
			}
			break
		}
		in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token.New())}
		for _, p := range plans {
			in.TransactItems = append(in.TransactItems, p.items...)
		}
		_, err := s.c.TransactWriteItems(ctx, in)
		if err != nil && ambiguous(err) {
			// The reply was lost: the same token again, which is not
			// applied twice.
			dctx, cancel := runtime.Detach(ctx)
			_, err = s.c.TransactWriteItems(dctx, in)
			cancel()
		}
		if err == nil {
			for _, p := range plans {
				if p.done != nil {
					p.done()
				}
			}
			break
		}
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			if retryable(err) {
				idle++
				continue
			}
			if ambiguous(err) {
				s.txLost(ctx, op, key, plans, err, errs)
				break
			}
			for _, p := range plans {
				errs[p.i] = wrap(op, s.d.Aggregate, key(p.i), err)
			}
			break
		}
		reasons := tc.CancellationReasons
		if len(reasons) != len(in.TransactItems) {
			alone = append(alone, plans...) // no reasons to tell what failed
			break
		}
		var again []*txPlan
		off := 0
		for _, p := range plans {
			failed, err := s.txFailed(ctx, op, key(p.i), p, reasons[off:off+len(p.items)], tc)
			off += len(p.items)
			switch {
			case err != nil:
				errs[p.i] = err
			case failed:
				alone = append(alone, p)
			default:
				again = append(again, p)
			}
		}
		if len(again) == len(plans) {
			idle++
		} else {
			idle = 0
		}
		plans = again
	}
	slices.SortFunc(alone, func(a, b *txPlan) int { return a.i - b.i })
	for _, p := range alone {
		errs[p.i] = single(p.i)
	}
}

// retryable reports a transaction refused as a whole that may go through
// when sent again.
func retryable(err error) bool {
	var ae interface{ ErrorCode() string }
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "TransactionInProgressException", "TransactionConflictException", "ThrottlingException", "ProvisionedThroughputExceededException":
		return true
	}
	return false
}

// txFailed says what the cancellation reasons of plan p's actions mean
// for its item (block id): an error (a Create of a block that exists, a
// claim of a value another block holds: ErrDuplicate), failed (its single
// call says), or neither (sent again).
func (s *Store[T, K]) txFailed(ctx context.Context, op string, id K, p *txPlan, reasons []types.CancellationReason, cause error) (bool, error) {
	if aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		if p.insert {
			return false, runtime.Fail(op, s.d.Aggregate, id, runtime.ErrDuplicate, nil)
		}
		return true, nil
	}
	for j, r := range reasons {
		switch code := aws.ToString(r.Code); code {
		case "", "None", "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
		case "ConditionalCheckFailed":
			if !p.what[j].claim {
				return true, nil // a lost item held by another block
			}
			// ErrDuplicate if the holder holds the value; otherwise the
			// single call settles it (a stale claim, a moved value).
			if _, err := s.claimFailed(ctx, op, id, p.block, p.what[j]); err != nil {
				return false, err
			}
			return true, nil
		default:
			return false, runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("%w (item %d: %s %s)", cause, j, code, aws.ToString(r.Message)))
		}
	}
	return false, nil
}
