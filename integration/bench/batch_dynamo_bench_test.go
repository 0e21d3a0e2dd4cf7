package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/integration/dyntest"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatchDynamo compares CreateMany, PutMany and DeleteMany of 100
// Matches (a unique code, lookups, a partition with a unique serial, a
// version: the Match of storetest.BenchBatchModels) with the same 100
// single calls, with transactions (TxOn) on the in-process minidyn (or
// NOAM_DYNAMO_ENDPOINT): the batch is packed into TransactWriteItems of
// up to 100 actions, each single call is one TransactWriteItems (and its
// reads). The blocks a Put or Delete needs are written with the timer
// stopped, and their requests are not counted. minidyn answers in
// process and copies every table a transaction touches, so the times are
// the server's as much as the client's; requests/op is what a real
// endpoint's latency follows.
func BenchmarkBatchDynamo(b *testing.B) {
	const n = 100
	srv := dyntest.Start(b)
	var sent atomic.Int64
	c := srv.Client(func(o *dynamodb.Options) {
		next := o.HTTPClient
		if next == nil {
			next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = countRequests{next, &sent}
	})
	repo := st.NewMatchDynamoRepository(c, dynamostore.Options{TablePrefix: srv.Prefix(b), Transactions: dynamostore.TxOn})
	ctx := context.Background()
	if err := repo.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	next := 0
	fresh := func() []*st.Match {
		ms := make([]*st.Match, n)
		for i := range ms {
			id := fmt.Sprint("m", next)
			next++
			ms[i] = &st.Match{ID: id, Code: "code-" + id, Region: "north", Level: i % 10, Tags: []string{"t", id},
				Rounds: []st.Round{{Serial: id + "/r0", Moves: []string{"e4"}}}}
		}
		return ms
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	created := func() []*st.Match {
		ms := fresh()
		must(repo.CreateMany(ctx, ms))
		return ms
	}
	ids := func(ms []*st.Match) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.ID
		}
		return out
	}
	ops := []struct {
		name         string
		setup        func() []*st.Match
		batch, singl func([]*st.Match) error
	}{
		{"Create", fresh, func(ms []*st.Match) error { return repo.CreateMany(ctx, ms) }, func(ms []*st.Match) error {
			for _, m := range ms {
				if err := repo.Create(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Put", created, func(ms []*st.Match) error { return repo.PutMany(ctx, ms) }, func(ms []*st.Match) error {
			for _, m := range ms {
				if err := repo.Put(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Delete", created, func(ms []*st.Match) error { return repo.DeleteMany(ctx, ids(ms)) }, func(ms []*st.Match) error {
			for _, id := range ids(ms) {
				if err := repo.Delete(ctx, id); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, o := range ops {
		for _, mode := range []string{"batch", "single"} {
			write := o.batch
			if mode == "single" {
				write = o.singl
			}
			b.Run(o.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				var reqs int64
				for range b.N {
					b.StopTimer()
					ms := o.setup()
					n0 := sent.Load()
					b.StartTimer()
					must(write(ms))
					reqs += sent.Load() - n0
				}
				b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
			})
		}
	}
}
