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
	ctx := context.Background()
	srv := Start(t)
	var last *runtime.Call
	hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
		last = c
		return next(ctx)
	})
	c := srv.Client()
	opts := dynamostore.Options{TablePrefix: srv.Prefix(t), Transactions: dynamostore.TxAuto}
	journals := model.NewJournalDynamoRepository(c, opts, hook)
	replies := model.NewReplyDynamoRepository(c, opts, hook)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{journals, replies} {
		if err := r.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	storetest.BatchCounterTrips(t, journals, replies, func() *runtime.Call { return last }, "dyn", 2)
}
