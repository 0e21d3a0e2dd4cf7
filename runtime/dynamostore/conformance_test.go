package dynamostore_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	var prefix string // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:       "dynamo",
		Caps:       runtime.Caps{Name: "dynamo", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes},
		Concurrent: true, // every block write is one conditional request
		Open: func(t *testing.T) storetest.Repos {
			prefix = srv.Prefix(t)
			o := dynamostore.Options{TablePrefix: prefix}
			return storetest.Repos{
				Matches:  model.NewMatchDynamoRepository(c, o),
				Journals: model.NewJournalDynamoRepository(c, o),
				Cards:    model.NewCardDynamoRepository(c, o),
				Replies:  model.NewReplyDynamoRepository(c, o),
			}
		},
		// An index item of a unique lookup is keyed by the lookup's name
		// and the value alone (lookups.go).
		DropClaim: func(t *testing.T, collection, lookup string, value []byte) {
			_, err := c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
				TableName: aws.String(prefix + dynamostore.IndexTable(collection)),
				Key: map[string]types.AttributeValue{
					"p": &types.AttributeValueMemberS{Value: lookup},
					"k": &types.AttributeValueMemberB{Value: value},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
