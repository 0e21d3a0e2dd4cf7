package dynamostore_test

import (
	"testing"

	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestConformance runs the store-independent conformance suite against
// DynamoDB (dynalite, or NOAM_DYNAMO_ENDPOINT): one server, fresh tables
// (a new table-name prefix) per subtest.
func TestConformance(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	storetest.Run(t, storetest.Harness{
		Name:       "dynamo",
		Caps:       runtime.Caps{Name: "dynamo", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes},
		Concurrent: true, // every block write is one conditional request
		Open: func(t *testing.T) storetest.Repos {
			o := dynamostore.Options{TablePrefix: srv.Prefix(t)}
			return storetest.Repos{
				Matches:  model.NewMatchDynamoRepository(c, o),
				Journals: model.NewJournalDynamoRepository(c, o),
				Cards:    model.NewCardDynamoRepository(c, o),
				Replies:  model.NewReplyDynamoRepository(c, o),
			}
		},
	})
}

// TestDeadlines runs the deadline test on a dynalite of its own, paused
// with SIGSTOP: the SDK's requests and retries, and the read-back, undo
// and cleanup of the lookup protocol, end with the caller's deadline
// (plus runtime.CleanupTimeout).
func TestDeadlines(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	storetest.Deadlines(t, storetest.Harness{
		Name: "dynamo",
		Open: func(t *testing.T) storetest.Repos {
			o := dynamostore.Options{TablePrefix: srv.Prefix(t)}
			return storetest.Repos{
				Matches:  model.NewMatchDynamoRepository(c, o),
				Journals: model.NewJournalDynamoRepository(c, o),
				Cards:    model.NewCardDynamoRepository(c, o),
				Replies:  model.NewReplyDynamoRepository(c, o),
			}
		},
		Pause: func(t *testing.T) func() { return srv.Pause(t) },
	})
}
