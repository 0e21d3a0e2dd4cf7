package dynamo_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/templates"
)

func gameSchema(t *testing.T) *model.Schema {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "example", "game"))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func explainer(t *testing.T) templates.Explainer {
	t.Helper()
	ex, ok := templates.ExplainerOf("dynamo")
	if !ok {
		t.Fatal("dynamo registered no explainer")
	}
	return ex
}

// counter counts the requests a client sends.
type counter struct {
	n    atomic.Int64
	next aws.HTTPClient
}

func (c *counter) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}

// TestLayoutIsWhatTheStoreWrites writes the example block explain shows
// (Game 2345 with two rounds) with the generated DynamoDB repository and
// checks that the item's attributes are the ones explain lists, and that
// the requests explain counts for Get, a setter and an append are the
// requests the repository sends.
func TestLayoutIsWhatTheStoreWrites(t *testing.T) {
	srv := dynalitetest.Start(t)
	cnt := &counter{next: http.DefaultClient}
	c := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = cnt })
	prefix := srv.Prefix(t)
	ctx := context.Background()
	repo := game.NewGameDynamoRepository(c, dynamostore.Options{TablePrefix: prefix})
	if err := repo.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repo.Create(ctx, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick",
		Rounds: []game.Round{{Moves: []string{"a"}}, {Moves: []string{"b"}}}}); err != nil {
		t.Fatal(err)
	}
	s := gameSchema(t)
	a := s.Aggregate("Game")
	ex := explainer(t)
	phys := ex.Layout(a)
	var want []string
	for _, st := range phys.Example {
		want = append(want, strings.SplitN(st.Key, ".", 2)[0])
	}
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(prefix + "Game")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Fatalf("the table holds %d items, want the one game", len(out.Items))
	}
	if _, ok := out.Items[0]["_id"].(*types.AttributeValueMemberB); !ok {
		t.Errorf("a string key is stored as %T, explain says B", out.Items[0]["_id"])
	}
	var got []string
	for k := range out.Items[0] {
		got = append(got, k)
	}
	sort.Strings(got)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("the item holds attributes %q, explain lists %q", got, want)
	}
	if phys.Containers[0].Name != "Game" || phys.Containers[0].Kind != "table" {
		t.Errorf("first container %+v, want the table Game", phys.Containers[0])
	}

	// Requests per method, as explain's Cost says.
	rep, err := explain.Build(s, explain.Config{Stores: []string{"dynamo"}})
	if err != nil {
		t.Fatal(err)
	}
	trips := map[string]string{}
	for _, ag := range rep.Aggregates {
		if ag.Name != "Game" {
			continue
		}
		for _, m := range ag.Methods {
			trips[m.Name] = m.Stores["dynamo"].RoundTrips
		}
	}
	for _, step := range []struct {
		method string
		run    func() error
	}{
		{"Get", func() error { _, err := repo.Get(ctx, "2345"); return err }},
		{"SetSecondPlayer", func() error { return repo.SetSecondPlayer(ctx, "2345", "ann") }},
		{"AppendRounds", func() error { _, err := repo.AppendRounds(ctx, "2345", game.Round{Moves: []string{"c"}}); return err }},
		{"Delete", func() error { return repo.Delete(ctx, "2345") }},
	} {
		before := cnt.n.Load()
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.method, err)
		}
		sent := cnt.n.Load() - before
		if _, err := strconv.Atoi(trips[step.method]); err != nil {
			t.Fatalf("%s: explain gives %q round trips, want a number", step.method, trips[step.method])
		}
		if want := trips[step.method]; want != strconv.FormatInt(sent, 10) {
			t.Errorf("%s sent %d requests, explain says %s", step.method, sent, want)
		}
	}
}

// TestSample reads real items back: sizes per entry class, the partition
// of the largest block, at most n blocks, nothing written.
func TestSample(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	prefix := srv.Prefix(t)
	ctx := context.Background()
	repo := game.NewGameDynamoRepository(c, dynamostore.Options{TablePrefix: prefix})
	if err := repo.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{1, 5, 40} {
		g := &game.Game{ID: strconv.Itoa(i), FirstPlayer: "mary", SecondPlayer: "rick"}
		for range n {
			g.Rounds = append(g.Rounds, game.Round{Moves: []string{strings.Repeat("m", 100)}})
		}
		if err := repo.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	a := gameSchema(t).Aggregate("Game")
	ex := explainer(t)
	conn := map[string]string{"dynamo": srv.Endpoint, "dynamo-prefix": prefix}
	s, err := ex.Sample(ctx, a, conn, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s.Blocks != 3 || s.MaxValueBytes != dynamostore.MaxItemBytes {
		t.Fatalf("sample read %d blocks with limit %d, want 3 and %d", s.Blocks, s.MaxValueBytes, dynamostore.MaxItemBytes)
	}
	if len(s.Partitions) == 0 || s.Partitions[0].Elements != 40 || s.Partitions[0].Field != "rounds" {
		t.Errorf("largest partition %+v, want rounds with 40 elements", s.Partitions)
	}
	var elems *templates.EntrySize
	for i := range s.Entries {
		if s.Entries[i].Entry == "rounds[]" {
			elems = &s.Entries[i]
		}
	}
	if elems == nil || elems.Count != 46 || elems.Max < 100 {
		t.Errorf("rounds[] entries %+v, want 46 elements of at least 100 bytes", elems)
	}
	if s, err := ex.Sample(ctx, a, conn, 2); err != nil || s.Blocks != 2 {
		t.Errorf("a sample of 2 read %v blocks (%v)", s, err)
	}
	if s, err := ex.Sample(ctx, a, map[string]string{}, 2); err != nil || s != nil {
		t.Errorf("without an endpoint the sample is %v, %v; want nothing", s, err)
	}
	if _, err := ex.Sample(ctx, a, map[string]string{"dynamo": srv.Endpoint, "dynamo-prefix": "missing_"}, 2); err == nil {
		t.Error("sampling a table that does not exist succeeded")
	}
}
