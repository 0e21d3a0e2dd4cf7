package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/integration/dyntest"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkUniqueWriteDynamo compares writes that claim a unique value
// (Create of a Match, then SetCode moving its unique code) with the
// lookup protocol (TxOff) and in one TransactWriteItems (TxOn), on the
// in-process minidyn (or NOAM_DYNAMO_ENDPOINT). minidyn answers in
// process, so time and allocations include the server's: its
// TransactWriteItems copies every table it touches (to roll back), which
// grows with the table. requests/op is what a real endpoint's latency
// follows.
func BenchmarkUniqueWriteDynamo(b *testing.B) {
	for _, mode := range []struct {
		name string
		tx   dynamostore.Tx
	}{{"protocol", dynamostore.TxOff}, {"transaction", dynamostore.TxOn}} {
		srv := dyntest.Start(b)
		var sent atomic.Int64
		c := srv.Client(func(o *dynamodb.Options) {
			next := o.HTTPClient
			if next == nil {
				next = awshttp.NewBuildableClient()
			}
			o.HTTPClient = countRequests{next, &sent}
		})
		repo := st.NewMatchDynamoRepository(c, dynamostore.Options{TablePrefix: srv.Prefix(b), Transactions: mode.tx})
		ctx := context.Background()
		if err := repo.EnsureIndexes(ctx); err != nil {
			b.Fatal(err)
		}
		n := 0 // b.Run runs its function more than once: keys stay new
		b.Run("Create/"+mode.name, func(b *testing.B) {
			b.ReportAllocs()
			n0 := sent.Load()
			defer func() { b.ReportMetric(float64(sent.Load()-n0)/float64(b.N), "requests/op") }()
			for range b.N {
				n++
				id := fmt.Sprintf("%s-c%d", mode.name, n)
				if err := repo.Create(ctx, &st.Match{ID: id, Code: id, Region: "r", Level: 1, Tags: []string{"a"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		id := mode.name + "-set"
		if err := repo.Create(ctx, &st.Match{ID: id, Code: id, Region: "r", Level: 1}); err != nil {
			b.Fatal(err)
		}
		b.Run("SetCode/"+mode.name, func(b *testing.B) {
			b.ReportAllocs()
			n0 := sent.Load()
			defer func() { b.ReportMetric(float64(sent.Load()-n0)/float64(b.N), "requests/op") }()
			for range b.N {
				n++
				if err := repo.SetCode(ctx, id, fmt.Sprintf("%s-%d", id, n)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countRequests counts a client's HTTP requests.
type countRequests struct {
	next dynamodb.HTTPClient
	n    *atomic.Int64
}

func (c countRequests) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}
