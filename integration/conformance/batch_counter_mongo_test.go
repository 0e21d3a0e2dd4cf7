package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestBatchCounterMongo: a CreateMany of an aggregate with a counter
// moves each counter scope once (findOneAndUpdate $inc n) and writes the
// blocks as a batch without a counter: with native indexes one bulkWrite,
// with index tables the index protocol's phases. 50 items take no more
// commands than 5. So does a PutMany (TestBatchPutCounterMongo).
func TestBatchCounterMongo(t *testing.T) {
	for _, tc := range []struct {
		name            string
		opts            []runtime.Option
		bound, replaced int
	}{
		// The counter, the bulkWrite.
		// Replacing journals (numbers given, versioned): the single Puts,
		// one replaceOne each (see mongostore's PutMany).
		{"native", []runtime.Option{mongostore.NoPartialIndexes()}, 2, 50 + 2},
		// The counter; per index table (owner, lines.kind) one bulkWrite
		// of the entries, one of the documents.
		{"tables", []runtime.Option{mongostore.IndexTables()}, 1 + 2 + 1 + 2, 1 + 2 + 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := mongotest.Start(t)
			var last *runtime.Call
			hook := runtime.WithHook(func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
				last = c
				return next(ctx)
			})
			// A lease longer than the test: a write past its lease reads
			// the schema record again (the layout fence), one round trip
			// that the bounds below do not count, and a loaded machine
			// takes more than the default 2 s between EnsureIndexes and
			// the last batch.
			opts := append(tc.opts, hook, runtime.WithLayoutLease(time.Hour))
			journals := model.NewJournalMongoRepository(db, opts...)
			replies := model.NewReplyMongoRepository(db, opts...)
			for _, r := range []interface{ EnsureIndexes(context.Context) error }{journals, replies} {
				if err := r.EnsureIndexes(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// The first write of a repository lists its indexes once.
			if err := journals.Create(ctx, &model.Journal{Owner: "first"}); err != nil {
				t.Fatal(err)
			}
			if err := replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "first"}}); err != nil {
				t.Fatal(err)
			}
			storetest.BatchCounterTrips(t, journals, replies, func() *runtime.Call { return last }, tc.name, tc.bound)
			storetest.BatchPutCounterTrips(t, journals, replies, func() *runtime.Call { return last }, tc.name, tc.bound, tc.replaced)
		})
	}
}
