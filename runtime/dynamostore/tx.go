package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Unique values in one transaction.
//
// Where the endpoint has TransactWriteItems, a write that claims or
// releases unique values (Create, Put, Delete and an Update of indexed
// entries of a block with a unique lookup; Set and Append of a field a
// unique lookup reads: what explain counts as writing one) is one
// TransactWriteItems: the block write with the very condition the
// protocol's block write has (its stamp, version, existence and layout
// guards), a Put of each index item the block gains (a unique claim on
// condition attribute_not_exists(k), or that it is this block's already)
// and a Delete of each it loses (a unique one on condition that it is this
// block's, or gone). The index items of its non-unique lookups and of its
// counter scope go in the same transaction. Atomic: no index item is ever
// stale, nothing is left to verify or repair. Items keep the protocol's
// attributes (id, inc, s, w), so reads verify them as they verify the
// protocol's, Repair works as before, and blocks written by the protocol
// (before transactions were on, or by another client) mix with them.
//
// A transaction holds at most 100 items: a write with more index items
// (a block with many values) falls back to the protocol, as does a write
// whose claim is held by a block that no longer holds the value (a stale
// claim of the protocol, which the protocol takes over once older than
// StaleAfter). A transaction's 4 MB cannot be reached: a block is at most
// 400 KB and 99 index items at most 3 KB each.
//
// The transaction carries a ClientRequestToken, so that the SDK resending
// it after a lost reply is not applied twice; an outcome still unknown
// (a cancelled context, no reply) is read back from the block's stamp,
// and is runtime.ErrUnknownOutcome if the block does not carry it.
// Sweep's deletes of expired blocks keep the protocol.

// Tx chooses whether writes of unique values are transactions
// (Options.Transactions).
type Tx uint8

const (
	// TxAuto uses transactions where the endpoint has them: detected once
	// per client, with a TransactGetItems (dynalite answers that it does
	// not know the operation; DynamoDB, DynamoDB Local and minidyn have
	// it). The default.
	TxAuto Tx = iota
	// TxOn always uses transactions.
	TxOn
	// TxOff never does: every write of unique values runs the protocol.
	TxOff
)

func (x Tx) String() string {
	switch x {
	case TxOn:
		return "on"
	case TxOff:
		return "off"
	}
	return "auto"
}

// MaxTxItems is the most items one TransactWriteItems writes.
const MaxTxItems = 100

// txSupport remembers, per client (the one Open was given), whether its
// endpoint has transactions.
var txSupport sync.Map // *dynamodb.Client -> bool

// Transactions reports whether writes of unique values run as one
// transaction on s's endpoint: Options.Transactions, or (TxAuto) what the
// endpoint answered to a probe, sent once per client (EnsureIndexes sends
// it; so does the first write that needs to know).
func (s *Store[T, K]) Transactions(ctx context.Context) (bool, error) {
	switch s.tx {
	case TxOn:
		return true, nil
	case TxOff:
		return false, nil
	}
	if v, ok := txSupport.Load(s.client); ok {
		return v.(bool), nil
	}
	// A read of one item that need not exist, of a table that need not
	// exist either: an endpoint with transactions answers it (the item,
	// or ResourceNotFoundException), one without refuses the operation.
	_, err := s.c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{
		TableName: aws.String(s.schema), Key: s.schemaKey(),
	}}}})
	var nf *types.ResourceNotFoundException
	var ae smithy.APIError
	switch {
	case err == nil || errors.As(err, &nf):
		txSupport.Store(s.client, true)
		return true, nil
	case errors.As(err, &ae):
		// UnknownOperationException (dynalite), an unsupported
		// operation, or a principal not allowed transactions.
		txSupport.Store(s.client, false)
		return false, nil
	}
	return false, err // no answer: ask again next time
}

// hasUnique reports whether one of ls is unique.
func hasUnique[T any](ls []*runtime.Lookup[T]) bool {
	for _, l := range ls {
		if l.Unique {
			return true
		}
	}
	return false
}

// inTx reports whether a protocol write of block id, which writes unique
// values when unique is set, runs as one transaction.
func (s *Store[T, K]) inTx(ctx context.Context, op string, id K, unique bool) (bool, error) {
	if !unique {
		return false, nil
	}
	on, err := s.Transactions(ctx)
	if err != nil {
		return false, wrap(op, s.d.Aggregate, id, err)
	}
	return on, nil
}

// errProtocol says that a write cannot be one transaction: the caller
// runs the protocol instead.
var errProtocol = errors.New("dynamostore: the write takes the protocol")

// captured is where a protocol attempt's block command lands instead of
// being sent (blockPut, blockUpdate), when the context carries it.
type captured struct{ item types.TransactWriteItem }

type captureKey struct{}

// blockPut sends the block PutItem of a protocol attempt, or captures it
// for a transaction.
func (s *Store[T, K]) blockPut(ctx context.Context, in *dynamodb.PutItemInput) error {
	if c, ok := ctx.Value(captureKey{}).(*captured); ok {
		c.item.Put = &types.Put{TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
		return nil
	}
	_, err := s.c.PutItem(ctx, in)
	return err
}

// blockUpdate sends the block UpdateItem of a protocol attempt, or
// captures it for a transaction.
func (s *Store[T, K]) blockUpdate(ctx context.Context, in *dynamodb.UpdateItemInput) error {
	if c, ok := ctx.Value(captureKey{}).(*captured); ok {
		c.item.Update = &types.Update{TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
		return nil
	}
	_, err := s.c.UpdateItem(ctx, in)
	return err
}

// txItem is what one item of a transaction is, to map its cancellation
// reason: the block (lookup -1), or index item key of lookup l, a claim
// when claim is set.
type txItem struct {
	lookup int
	key    []byte
	claim  bool
}

// txWrite is one TransactWriteItems being built: the block first.
type txWrite struct {
	items []types.TransactWriteItem
	what  []txItem
}

// ownedOrGone is the condition that an index item is block id's or
// missing.
func (s *Store[T, K]) ownedOrGone(e *expr, id types.AttributeValue) string {
	return fmt.Sprintf("(attribute_not_exists(%s) OR %s = %s)", e.name(s.indexSort()), e.name("id"), e.value(id))
}

// indexItems adds to w the Puts of the index items block (with stamp st)
// gains from before to after and the Deletes of those it loses. It
// reports false when they do not fit in one transaction.
func (s *Store[T, K]) indexItems(w *txWrite, block []byte, st index.Stamp, before, after index.Keys) (bool, error) {
	p := prims[T, K]{s}
	id, err := p.blockAttr(block)
	if err != nil {
		return false, err
	}
	mark := index.NewInc()
	at := func(k index.Keys, i int) [][]byte {
		if i < len(k) {
			return k[i]
		}
		return nil
	}
	for i, l := range s.lookups {
		b, a := at(before, i), at(after, i)
		gained, lost := index.Minus(a, b), index.Minus(b, a)
		if len(w.items)+len(gained)+len(lost) > MaxTxItems {
			return false, nil
		}
		for _, k := range gained {
			item, err := p.encode(i, index.Item{Key: k, Block: block, Inc: st.Inc, Seq: st.Seq, W: mark})
			if err != nil {
				return false, err
			}
			put := &types.Put{TableName: aws.String(s.index), Item: item}
			if l.Unique {
				e := newExpr()
				put.ConditionExpression = aws.String(s.ownedOrGone(e, id))
				put.ExpressionAttributeNames, put.ExpressionAttributeValues = e.names, e.values
			}
			w.items = append(w.items, types.TransactWriteItem{Put: put})
			w.what = append(w.what, txItem{lookup: i, key: k, claim: l.Unique})
		}
		for _, k := range lost {
			del := &types.Delete{TableName: aws.String(s.index), Key: p.itemKey(i, k)}
			if l.Unique {
				e := newExpr()
				del.ConditionExpression = aws.String(s.ownedOrGone(e, id))
				del.ExpressionAttributeNames, del.ExpressionAttributeValues = e.names, e.values
			}
			w.items = append(w.items, types.TransactWriteItem{Delete: del})
			w.what = append(w.what, txItem{lookup: i, key: k})
		}
	}
	return true, nil
}

// txOutcome is what a transaction did.
type txOutcome int

const (
	txDone      txOutcome = iota
	txBlock               // the block's condition failed
	txAgain               // lost to a concurrent transaction: try again
	txDuplicate           // a claim is held by a block holding the value
	txProtocol            // leave it to the protocol
)

// transact sends w, the write of block id with stamp st (for a delete,
// deleted: the block is gone once written), and says what came of it.
func (s *Store[T, K]) transact(ctx context.Context, op string, id K, block []byte, st index.Stamp, deleted bool, w *txWrite) (txOutcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, runtime.NotSent(op, s.d.Aggregate, id, err, nil)
	}
	_, err := s.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: w.items, ClientRequestToken: aws.String(token.New())})
	if err == nil {
		return txDone, nil
	}
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		var ae smithy.APIError
		switch {
		case errors.As(err, &ae) && (ae.ErrorCode() == "TransactionInProgressException" || ae.ErrorCode() == "TransactionConflictException"):
			return txAgain, nil
		case ambiguous(err):
			return s.txApplied(ctx, op, id, block, st, deleted, err)
		}
		return 0, wrap(op, s.d.Aggregate, id, err)
	}
	reasons := tc.CancellationReasons
	if len(reasons) != len(w.items) {
		return txProtocol, nil // no reasons to tell what failed
	}
	if code := aws.ToString(reasons[0].Code); code == "ConditionalCheckFailed" {
		return txBlock, nil
	}
	for j, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			if j == 0 || !w.what[j].claim {
				return txProtocol, nil // a lost item held by another block
			}
			return s.claimFailed(ctx, op, id, block, w.what[j])
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			return txAgain, nil
		default:
			return 0, runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("%w (item %d: %s %s)", err, j, aws.ToString(r.Code), aws.ToString(r.Message)))
		}
	}
	return 0, wrap(op, s.d.Aggregate, id, err)
}

// claimFailed says why the claim of it failed: the item is held by
// another block. If that block holds the value, the write fails with
// runtime.ErrDuplicate (the protocol's error); if the item changed
// meanwhile the write is tried again; otherwise the claim is stale (or a
// protocol write of its holder is in flight), which the protocol decides.
func (s *Store[T, K]) claimFailed(ctx context.Context, op string, id K, block []byte, it txItem) (txOutcome, error) {
	l := s.eng.Lookups[it.lookup]
	items, err := s.eng.P.GetItems(ctx, it.lookup, [][]byte{it.key})
	if err != nil {
		return 0, wrap(op, s.d.Aggregate, id, err)
	}
	if len(items) == 0 || string(items[0].Block) == string(block) {
		return txAgain, nil
	}
	holder := items[0].Block
	blocks, err := s.eng.P.ReadBlocks(ctx, [][]byte{holder})
	if err != nil {
		return 0, wrap(op, s.d.Aggregate, id, err)
	}
	if len(blocks) == 1 && blocks[0].Err == nil && index.Holds(index.LookupKeys(true, l.Values(blocks[0].Value), holder), it.key) {
		return txDuplicate, runtime.LookupTaken(op, s.d.Aggregate, id, l.Name, it.key, nil)
	}
	return txProtocol, nil
}

// txApplied reads block back after a transaction whose reply did not come
// (cause): done if it carries the transaction's stamp (for a delete: if
// it is gone), runtime.ErrUnknownOutcome otherwise.
func (s *Store[T, K]) txApplied(ctx context.Context, op string, id K, block []byte, st index.Stamp, deleted bool, cause error) (txOutcome, error) {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	bs, err := s.eng.P.ReadBlocks(ctx, [][]byte{block})
	if err == nil {
		switch {
		case deleted && len(bs) == 0, !deleted && len(bs) == 1 && bs[0].Stamp == st:
			return txDone, nil
		}
	}
	detail := "(outcome unknown: the transaction may not have been applied)"
	if err != nil {
		detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v)", err)
	}
	return 0, runtime.FailAt(op, s.d.Aggregate, id, detail, runtime.ErrUnknownOutcome, cause)
}

// txRun runs a protocol write of block id (read says what to write, as
// for run) as one transaction per attempt. insert: the write creates the
// block (one attempt; the block existing fails it with
// runtime.ErrDuplicate). It returns errProtocol when the write is the
// protocol's to run.
func (s *Store[T, K]) txRun(ctx context.Context, op string, id K, insert bool, read func() (index.Attempt, error)) error {
	block := s.d.Keys.Bytes(id)
	for attempt := range runtime.MaxAttempts {
		if err := backoff(ctx, attempt); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
		a, err := read()
		if err != nil {
			return err
		}
		st := index.Stamp{Seq: index.NextSeq(a.Stamp.Seq), Inc: a.Stamp.Inc}
		if !a.Found {
			st.Inc = index.NewInc()
		}
		// The attempt's block command, with its stamp, captured.
		var c captured
		if _, err := a.Write(context.WithValue(ctx, captureKey{}, &c), st); err != nil {
			return err
		}
		w := &txWrite{items: []types.TransactWriteItem{c.item}, what: []txItem{{lookup: -1}}}
		if fits, err := s.indexItems(w, block, st, a.Before, a.After); err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		} else if !fits {
			return errProtocol
		}
		out, err := s.transact(ctx, op, id, block, st, false, w)
		switch {
		case err != nil:
			return err
		case out == txDone:
			return nil
		case out == txProtocol:
			return errProtocol
		case out == txBlock && insert:
			return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrDuplicate, nil)
		}
		// The block changed meanwhile (txBlock), or the transaction lost
		// to another (txAgain): read it again.
	}
	return s.contended(op, id)
}

// txDelete removes block id and its index items in one transaction, on
// condition that its stamp is the one read. It returns errProtocol when
// the delete is the protocol's to run.
func (s *Store[T, K]) txDelete(ctx context.Context, op string, id K) error {
	block := s.d.Keys.Bytes(id)
	for attempt := range runtime.MaxAttempts {
		st, err := s.readFound(ctx, op, id, attempt)
		if err != nil {
			return err
		}
		w, fits, err := s.deleteWrite(id, block, st)
		if err != nil {
			return runtime.Fail(op, s.d.Aggregate, id, nil, err)
		} else if !fits {
			return errProtocol
		}
		out, err := s.transact(ctx, op, id, block, st.stamp, true, w)
		switch {
		case err != nil:
			return err
		case out == txDone:
			return nil
		case out == txProtocol:
			return errProtocol
		}
	}
	return s.contended(op, id)
}

// deleteWrite is the transaction of the delete of block (key id) in state
// st: the item's delete on condition of the stamp read, and the removal
// of its index items; fits is false when they take more than one
// transaction holds.
func (s *Store[T, K]) deleteWrite(id K, block []byte, st state[T]) (w *txWrite, fits bool, err error) {
	u := &update{e: newExpr()}
	u.cond = append(u.cond, "attribute_exists("+u.e.name(s.keyName())+")")
	s.stampCond(u, st)
	w = &txWrite{what: []txItem{{lookup: -1}}, items: []types.TransactWriteItem{{Delete: &types.Delete{
		TableName: aws.String(s.table), Key: s.key(id),
		ConditionExpression: aws.String(strings.Join(u.cond, " AND ")), ExpressionAttributeNames: u.e.namesOrNil(), ExpressionAttributeValues: u.e.valuesOrNil(),
	}}}}
	fits, err = s.indexItems(w, block, st.stamp, s.keys(id, st.t), nil)
	return w, fits, err
}
