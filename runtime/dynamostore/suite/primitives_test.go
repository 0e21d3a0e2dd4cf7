package dynamostore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/indextest"
)

// pdoc is the aggregate of the primitives' suite: indextest.Doc with a
// descriptor.
type pdoc struct {
	ID   string
	Code string
	Tags []string
}

var pdocDesc = func() *runtime.Desc[pdoc, string] {
	ls := indextest.Lookups()
	view := func(d *pdoc) indextest.Doc { return indextest.Doc{ID: d.ID, Code: d.Code, Tags: d.Tags} }
	return (&runtime.Desc[pdoc, string]{
		Aggregate: "Doc", Collection: "docs", Keys: runtime.StringKeys[string](),
		ID: func(d *pdoc) *string { return &d.ID },
		Fields: []*runtime.Field[pdoc]{
			runtime.NewField("code", "Code", func(d *pdoc) *string { return &d.Code }),
			runtime.NewField("tags", "Tags", func(d *pdoc) *[]string { return &d.Tags }),
		},
		Lookups: []*runtime.Lookup[pdoc]{
			{Name: "code", Unique: true, Parts: 1, Fields: []string{"code"}, Values: func(d *pdoc) [][]byte { return ls[0].Values(view(d)) }},
			{Name: "tags", Parts: 1, Fields: []string{"tags"}, Values: func(d *pdoc) [][]byte { return ls[1].Values(view(d)) }},
		},
	}).Init()
}()

// TestPrimitives checks the adapter's primitives against the in-memory
// ones the index engine is tested on, on dynalite (fresh tables per
// subtest).
func TestPrimitives(t *testing.T) {
	sv := dynalitetest.Start(t)
	c := sv.Client()
	indextest.Primitives(t, func(t *testing.T) indextest.Harness[*pdoc] {
		prefix := sv.Prefix(t)
		s := dynamostore.Open(c, pdocDesc, dynamostore.Options{TablePrefix: prefix})
		must(t, s.Ensure(ctx))
		return indextest.Harness[*pdoc]{
			P:         s.Primitives(),
			Unordered: true, // a Scan is in hash order
			Write: func(ctx context.Context, d indextest.Doc, st index.Stamp) error {
				item := map[string]types.AttributeValue{
					dynamostore.IDAttr: &types.AttributeValueMemberB{Value: d.Key()},
					"code":             &types.AttributeValueMemberS{Value: d.Code},
				}
				tags := make([]types.AttributeValue, len(d.Tags))
				for i, tag := range d.Tags {
					tags[i] = &types.AttributeValueMemberS{Value: tag}
				}
				item["tags"] = &types.AttributeValueMemberL{Value: tags}
				for attr, v := range map[string]int64{dynamostore.SeqAttr: st.Seq, dynamostore.IncAttr: st.Inc} {
					if v != 0 {
						item[attr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
					}
				}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(prefix + "docs"), Item: item})
				return err
			},
			View: func(d *pdoc) indextest.Doc { return indextest.Doc{ID: d.ID, Code: d.Code, Tags: d.Tags} },
		}
	})
}
