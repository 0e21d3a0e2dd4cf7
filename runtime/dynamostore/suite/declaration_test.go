package dynamostore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestDeclaredNames checks the names and limits the declaration shows
// against the adapter's.
func TestDeclaredNames(t *testing.T) {
	for _, c := range []struct{ decl, real any }{
		{layout.IndexTable("Game"), dynamostore.IndexTable("Game")},
		{layout.Counters, dynamostore.CountersTable},
		{layout.Schema, dynamostore.SchemaTable},
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

// TestDeclaredAttributes writes a Match whose lookups all hold a value
// and checks that its item has exactly the attributes the declaration's
// example block shows (the element counts as the map _len).
func TestDeclaredAttributes(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	prefix := srv.Prefix(t)
	ctx := context.Background()
	// Every lookup in the index table: the example block shows no GSI
	// attributes (the declaration's note says them).
	repo := model.NewMatchDynamoRepository(c, dynamostore.Options{TablePrefix: prefix, IndexTables: true})
	if err := repo.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	m := &model.Match{ID: "2345", Code: "c", Region: "r", Tags: []string{"t"}, Venue: model.Venue{City: "x"}, Tree: &model.Node{Label: "n"}, Rounds: []model.Round{{Serial: "s"}, {Serial: "u"}}}
	if err := repo.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(prefix + "matches"), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, "2345")}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range out.Item {
		got = append(got, k)
	}
	shape := &access.Shape{Collection: "matches", Key: []access.KeyValue{{Value: "2345"}},
		Fields: []access.Field{{Key: "code"}, {Key: "region"}, {Key: "level"}, {Key: "tags"}, {Key: "venue"}, {Key: "start"}, {Key: "meta"}, {Key: "tree"},
			{Key: "rounds", Partition: true}, {Key: "version", Version: true}},
		Lookups: []access.Lookup{{Name: "code", Unique: true}, {Name: "tags"}}}
	var want []string
	for _, row := range layout.Store.Layout(shape).Example {
		k, _, _ := strings.Cut(row.Key, ".") // _len.rounds: the map _len
		if !slices.Contains(want, k) {
			want = append(want, k)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the declaration shows the attributes %q, the item has %q", want, got)
	}
}
