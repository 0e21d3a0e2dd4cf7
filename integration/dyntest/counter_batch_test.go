package dyntest

import (
	"context"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestBatchCounter: with transactions, a CreateMany with a counter moves
// each counter scope once (UpdateItem ADD n) and packs the blocks into
// transactions (Journal's lookups are GSIs: one action per block), so 50
// journals take the counter and one TransactWriteItems, not a counter
// request and a conditional write per item.
func TestBatchCounter(t *testing.T) {
	journals, replies, last := counted(t, dynamostore.TxAuto)
	storetest.BatchCounterTrips(t, journals, replies, last, "dyn", 2)
}

// TestBatchPutCounter: a PutMany with a counter moves each counter scope
// once, as CreateMany does: with transactions, 50 journals (new ones,
// whose numbers are allocated, or the same replaced) take the counter,
// the BatchGetItem of their blocks (which the single Put reads too) and
// one TransactWriteItems; without, the counter and each item's single
// conditional write (BatchWriteItem takes no condition; 3 requests a new
// block here), not a counter request per item too.
func TestBatchPutCounter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tx    dynamostore.Tx
		bound int
	}{{"TxAuto", dynamostore.TxAuto, 3}, {"TxOff", dynamostore.TxOff, 1 + 3*50}} {
		t.Run(tc.name, func(t *testing.T) {
			journals, replies, last := counted(t, tc.tx)
			storetest.BatchPutCounterTrips(t, journals, replies, last, "dynput", tc.bound, tc.bound)
		})
	}
}

// counted returns Journal and Reply repositories (both with a counter)
// on a server of their own with transactions tx, ensured, and a function
// that returns their last call.
func counted(t *testing.T, tx dynamostore.Tx) (model.JournalRepository, model.ReplyRepository, func() *runtime.Call) {
	ctx := context.Background()
	srv := Start(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
		last = c
		return next(ctx)
	})
	c := srv.Client()
	opts := dynamostore.Options{TablePrefix: srv.Prefix(t), Transactions: tx}
	journals := model.NewJournalDynamoRepository(c, opts, hook)
	replies := model.NewReplyDynamoRepository(c, opts, hook)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{journals, replies} {
		if err := r.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return journals, replies, func() *runtime.Call { return last }
}
