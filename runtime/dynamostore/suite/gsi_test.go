package dynamostore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestGSI: Match's regionLevel (composite) and venueCity (a path into a
// struct) are non-unique lookups of one value per block, kept in global
// secondary indexes on dynalite.
func TestGSI(t *testing.T) {
	sv := dynalitetest.Start(t)
	t.Run("OneRequest", func(t *testing.T) { testGSIRequests(t, newFixture(t, sv)) })
	t.Run("OlderBlocks", func(t *testing.T) { testGSIOlderBlocks(t, newFixture(t, sv)) })
}

// ops lists the operations of a log and, for a Query, its index.
func ops(log []request) []string {
	var out []string
	for _, r := range log {
		op := r.op
		var in struct{ IndexName, TableName string }
		_ = json.Unmarshal(r.body, &in)
		if in.IndexName != "" {
			op += " " + in.IndexName
		}
		if strings.HasSuffix(in.TableName, "__index") {
			op += " (index table)"
		}
		out = append(out, op)
	}
	return out
}

func ids(ms []*model.Match) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return strings.Join(out, " ")
}

func testGSIRequests(t *testing.T, f *fixture) {
	r := f.matches(t)
	for _, m := range []*model.Match{
		{ID: "a", Code: "ca", Region: "north", Level: 2, Venue: model.Venue{City: "Oslo"}},
		{ID: "b", Code: "cb", Region: "north", Level: 1, Venue: model.Venue{City: "Oslo"}},
		{ID: "c", Code: "cc", Region: "south", Level: 1},
		{ID: "d", Code: "cd", Region: "north", Level: 1},
	} {
		must(t, r.Create(ctx, m))
	}
	if items := f.index(t, "matches", "regionLevel"); len(items) != 0 {
		t.Errorf("regionLevel has %d index-table items, want none (a GSI)", len(items))
	}
	item := f.item(t, "matches", strKey("b"))
	k, _ := item[dynamostore.GSIKeyPrefix+"regionLevel"].(*types.AttributeValueMemberB)
	want := append(runtime.AppendInt(runtime.AppendString(nil, "north"), 1), runtime.AppendString(nil, "b")...)
	if k == nil || string(k.Value) != string(want) {
		t.Errorf("block b's %sregionLevel is %v, want %x", dynamostore.GSIKeyPrefix, item[dynamostore.GSIKeyPrefix+"regionLevel"], want)
	}
	if s(item[dynamostore.GSIPartAttr]) != "matches" {
		t.Errorf("block b's %s is %v, want matches", dynamostore.GSIPartAttr, item[dynamostore.GSIPartAttr])
	}

	// A prefix query, page by page: one Query of the GSI per page, in
	// (value, block key) order.
	f.log.take()
	q := model.MatchRegionLevelQuery{Region: runtime.Eq("north")}
	p, err := r.ListByRegionLevel(ctx, q, runtime.PageRequest{Limit: 2})
	must(t, err)
	if got := ids(p.Items); got != "b d" {
		t.Errorf("first page: %q, want \"b d\"", got)
	}
	if got := ops(f.log.take()); strings.Join(got, ",") != "Query "+dynamostore.GSIName("regionLevel") {
		t.Errorf("ListByRegionLevel sent %q, want one Query of the GSI", got)
	}
	p, err = r.ListByRegionLevel(ctx, q, runtime.PageRequest{Limit: 2, Cursor: p.Next})
	must(t, err)
	if got := ids(p.Items); got != "a" || p.Next != "" {
		t.Errorf("second page: %q (next %q), want \"a\" and the end", got, p.Next)
	}
	// A range on the second part.
	p, err = r.ListByRegionLevel(ctx, model.MatchRegionLevelQuery{Region: runtime.Eq("north"), Level: runtime.Gte(2)}, runtime.PageRequest{Limit: 10})
	must(t, err)
	if got := ids(p.Items); got != "a" {
		t.Errorf("level >= 2: %q, want \"a\"", got)
	}
	p, err = r.ListByVenueCity(ctx, "Oslo", runtime.PageRequest{Limit: 10})
	must(t, err)
	if got := ids(p.Items); got != "a b" {
		t.Errorf("ListByVenueCity Oslo: %q, want \"a b\"", got)
	}

	// A write of both fields of the lookup is one UpdateItem, no index
	// table item; a write of one of them reads the block first.
	f.log.take()
	must(t, r.Update(ctx, "c", model.MatchUpdate{Region: runtime.Ptr("north"), Level: runtime.Ptr(3)}))
	if got := ops(f.log.take()); strings.Join(got, ",") != "UpdateItem" {
		t.Errorf("Update of region and level sent %q, want one UpdateItem", got)
	}
	must(t, r.SetLevel(ctx, "d", 5))
	if got := ops(f.log.take()); strings.Join(got, ",") != "GetItem,UpdateItem" {
		t.Errorf("SetLevel sent %q, want GetItem, UpdateItem", got)
	}
	p, err = r.ListByRegionLevel(ctx, q, runtime.PageRequest{Limit: 10})
	must(t, err)
	if got := ids(p.Items); got != "b a c d" {
		t.Errorf("after the updates: %q, want \"b a c d\"", got)
	}
	if items := f.index(t, "matches", "regionLevel"); len(items) != 0 {
		t.Errorf("regionLevel has %d index-table items after updates, want none", len(items))
	}
	must(t, r.Delete(ctx, "a"))
	p, err = r.ListByVenueCity(ctx, "Oslo", runtime.PageRequest{Limit: 10})
	must(t, err)
	if got := ids(p.Items); got != "b" {
		t.Errorf("ListByVenueCity Oslo after a delete: %q, want \"b\"", got)
	}
}

// testGSIOlderBlocks: blocks written before their lookup was a GSI lookup
// (no GSI attributes, the schema record saying the lookup is in the index
// table: an upgrade of noamgen over live data) are found once
// EnsureIndexes has run.
func testGSIOlderBlocks(t *testing.T, f *fixture) {
	// A short layout lease (recorded with the layout): the second
	// EnsureIndexes, which finds the lookups' layout changed, waits out
	// two of it.
	r := model.NewMatchDynamoRepository(f.c, f.o, lease)
	must(t, r.EnsureIndexes(ctx))
	for _, id := range []string{"x", "y", "z"} {
		must(t, r.Create(ctx, &model.Match{ID: id, Code: "c" + id, Region: "west", Level: 1}))
	}
	// As an older noamgen left them: no GSI attributes, and the record
	// of a lookup kept in the index table.
	for _, id := range []string{"x", "y", "z"} {
		_, err := f.plain.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.prefix + "matches"), Key: strKey(id),
			UpdateExpression:         aws.String("REMOVE #p, #k, #v"),
			ExpressionAttributeNames: map[string]string{"#p": dynamostore.GSIPartAttr, "#k": dynamostore.GSIKeyPrefix + "regionLevel", "#v": dynamostore.GSIKeyPrefix + "venueCity"}})
		must(t, err)
	}
	key := map[string]types.AttributeValue{"_id": &types.AttributeValueMemberS{Value: "matches"}}
	out, err := f.plain.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.prefix + dynamostore.SchemaTable), Key: key, ConsistentRead: aws.Bool(true)})
	must(t, err)
	rec, err := runtime.DecodeSchema(out.Item["rec"].(*types.AttributeValueMemberB).Value)
	must(t, err)
	for i := range rec.Layout.Lookups {
		if rec.Layout.Lookups[i].Native != "gsi" && (rec.Layout.Lookups[i].Name == "regionLevel" || rec.Layout.Lookups[i].Name == "venueCity") {
			t.Errorf("the schema record says %v, want the gsi form", rec.Layout.Lookups[i])
		}
		rec.Layout.Lookups[i].Native = ""
	}
	raw, _ := json.Marshal(rec)
	out.Item["rec"] = &types.AttributeValueMemberB{Value: raw}
	_, err = f.plain.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.prefix + dynamostore.SchemaTable), Item: out.Item})
	must(t, err)

	q := model.MatchRegionLevelQuery{Region: runtime.Eq("west")}
	r = model.NewMatchDynamoRepository(f.c, f.o, lease)
	if p, err := r.ListByRegionLevel(ctx, q, runtime.PageRequest{Limit: 10}); err == nil {
		t.Errorf("before EnsureIndexes: %q, want an error (the record says the lookup is elsewhere)", ids(p.Items))
	}
	must(t, r.EnsureIndexes(ctx))
	p, err := r.ListByRegionLevel(ctx, q, runtime.PageRequest{Limit: 10})
	must(t, err)
	if got := ids(p.Items); got != "x y z" {
		t.Errorf("after EnsureIndexes: %q, want \"x y z\"", got)
	}
}
