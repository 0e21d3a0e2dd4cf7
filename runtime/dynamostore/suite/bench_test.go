package dynamostore_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

// BenchmarkAddRound adds a round to a game of n rounds on DynamoDB
// (dynalite): AppendRounds (the ROUNDS layout: one UpdateItem with
// list_append) against Put of the whole game (what an EAO layout writes).
// It reports the bytes the client sends and receives per operation, the
// measure that matters on DynamoDB (write units are counted per KB of
// item written, request size is bounded); dynalite's times say little.
func BenchmarkAddRound(b *testing.B) {
	srv := dynalitetest.Start(b)
	for _, n := range []int{10, 100, 1000} {
		for _, mode := range []string{"AppendRounds", "Put"} {
			b.Run(fmt.Sprintf("%s/rounds=%d", mode, n), func(b *testing.B) {
				l := &logger{}
				c := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = l })
				games := game.NewGameDynamoRepository(c, dynamostore.Options{TablePrefix: srv.Prefix(b)})
				if err := games.EnsureIndexes(ctx); err != nil {
					b.Fatal(err)
				}
				g := &game.Game{ID: "g", FirstPlayer: "mary", SecondPlayer: "rick"}
				for i := range n {
					g.Rounds = append(g.Rounds, game.Round{Moves: []string{fmt.Sprintf("move-%d", i), "e2e4"}})
				}
				if err := games.Create(ctx, g); err != nil {
					b.Fatal(err)
				}
				l.take()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					r := game.Round{Moves: []string{fmt.Sprintf("new-%d", i)}}
					var err error
					if mode == "Put" {
						g.Rounds = append(g.Rounds, r)
						err = games.Put(ctx, g)
					} else {
						_, err = games.AppendRounds(ctx, "g", r)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				var sent, received int
				for _, r := range l.take() {
					sent += len(r.body)
					received += len(r.resp)
				}
				b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
				b.ReportMetric(float64(received)/float64(b.N), "recv-B/op")
			})
		}
	}
}
