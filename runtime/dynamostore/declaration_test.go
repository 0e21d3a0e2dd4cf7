package dynamostore_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
)

// requests counts the HTTP requests of the conformance suite's client:
// one per DynamoDB request, as the declaration (runtime/dynamostore/layout)
// counts them.
var requests atomic.Int64

func sent() int { return int(requests.Load()) }

type countingClient struct{ next aws.HTTPClient }

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	return c.next.Do(r)
}

// countRequests is a client option that counts the client's requests.
func countRequests(o *dynamodb.Options) {
	next := o.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	o.HTTPClient = countingClient{next}
}

// TestDeclaredNames checks the names and limits the declaration shows
// against the adapter's.
func TestDeclaredNames(t *testing.T) {
	for _, c := range []struct{ decl, real any }{
		{layout.IndexTable("Game"), dynamostore.IndexTable("Game")},
		{layout.Counters, dynamostore.CountersTable},
		{layout.Scope, dynamostore.ScopeLookup},
		{[]string{layout.ID, layout.Root, layout.Len, layout.Seq, layout.Inc}, []string{dynamostore.IDAttr, dynamostore.RootAttr, dynamostore.LenAttr, dynamostore.SeqAttr, dynamostore.IncAttr}},
		{[]int{layout.MaxItemBytes, layout.MaxKeyBytes, layout.MaxIndexKeyBytes, layout.AppendPast}, []int{dynamostore.MaxItemBytes, dynamostore.MaxKeyBytes, dynamostore.MaxIndexKeyBytes, dynamostore.AppendPast}},
		{layout.CheckTableName("ab"), dynamostore.CheckTableName("ab")},
		{layout.CheckTableName("a b c"), dynamostore.CheckTableName("a b c")},
		{layout.CheckTableName("Game__index"), dynamostore.CheckTableName("Game__index")},
	} {
		if a, b := fmtAny(c.decl), fmtAny(c.real); a != b {
			t.Errorf("the declaration says %s, the adapter %s", a, b)
		}
	}
}

func fmtAny(v any) string { return fmt.Sprint(v) }
