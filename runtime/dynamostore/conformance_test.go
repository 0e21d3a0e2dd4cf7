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
		Caps:       runtime.Caps{Name: "dynamo", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes, MaxDepth: dynamostore.MaxDepth},
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
