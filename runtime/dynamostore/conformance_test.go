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
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestConformance runs the store-independent conformance suite against
// DynamoDB (dynalite, or NOAM_DYNAMO_ENDPOINT): one server, fresh tables
// (a new table-name prefix) per subtest.
func TestConformance(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client(countRequests)
	var prefix string // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:        "dynamo",
		Caps:        runtime.Caps{Name: "dynamo", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes, MaxKeyBytes: dynamostore.MaxKeyBytes, MaxIndexKeyBytes: dynamostore.MaxIndexKeyBytes, MaxDepth: dynamostore.MaxDepth},
		Concurrent:  true, // every block write is one conditional request
		Open:        func(t *testing.T) storetest.Repos { prefix = srv.Prefix(t); return repos(c, prefix) },
		Declaration: layout.Store, Requests: sent,
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
		Corrupt: func(t *testing.T, id, entry string) {
			// An attribute of another type: a map where a string is.
			_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
				TableName:                 aws.String(prefix + "matches"),
				Key:                       map[string]types.AttributeValue{"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, id)}},
				UpdateExpression:          aws.String("SET #e = :v"),
				ConditionExpression:       aws.String("attribute_exists(#e)"),
				ExpressionAttributeNames:  map[string]string{"#e": entry},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"not": &types.AttributeValueMemberS{Value: "a string"}}}},
			})
			if err != nil {
				t.Fatalf("corrupting %s of block %s: %v", entry, id, err)
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
		Name:  "dynamo",
		Open:  func(t *testing.T) storetest.Repos { return repos(c, srv.Prefix(t)) },
		Pause: func(t *testing.T) func() { return srv.Pause(t) },
	})
}

// repos returns the model's repositories over fresh tables (prefix).
func repos(c *dynamodb.Client, prefix string) storetest.Repos {
	o := dynamostore.Options{TablePrefix: prefix}
	return storetest.Repos{
		Matches:  model.NewMatchDynamoRepository(c, o),
		Journals: model.NewJournalDynamoRepository(c, o),
		Cards:    model.NewCardDynamoRepository(c, o),
		Replies:  model.NewReplyDynamoRepository(c, o),
	}
}
