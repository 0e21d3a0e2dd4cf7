package dynamostore

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/index/indextest"
)

type doc = indextest.Doc

// docDesc describes indextest's Doc as an aggregate with the same lookups.
func docDesc() *runtime.Desc[doc, string] {
	ls := indextest.Lookups()
	return (&runtime.Desc[doc, string]{
		Aggregate: "Doc", Collection: "docs", Keys: runtime.StringKeys[string](),
		ID: func(d *doc) *string { return &d.ID },
		Fields: []*runtime.Field[doc]{
			runtime.NewField("code", "Code", func(d *doc) *string { return &d.Code }),
			runtime.NewField("tags", "Tags", func(d *doc) *[]string { return &d.Tags }),
		},
		Lookups: []*runtime.Lookup[doc]{
			{Name: "code", Unique: true, Fields: []string{"code"}, Keys: func(d *doc) [][]byte { return ls[0].Values(*d) }},
			{Name: "tags", Fields: []string{"tags"}, Keys: func(d *doc) [][]byte { return ls[1].Values(*d) }},
		},
	}).Init()
}

// docPrims are a store's primitives over *Doc as the suite's over Doc.
type docPrims struct{ index.Primitives[*doc] }

func values(bs []index.Block[*doc], err error) ([]index.Block[doc], error) {
	out := make([]index.Block[doc], len(bs))
	for i, b := range bs {
		out[i] = index.Block[doc]{Key: b.Key, Stamp: b.Stamp, Err: b.Err}
		if b.Value != nil {
			out[i].Value = *b.Value
		}
	}
	return out, err
}

func (p docPrims) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[doc], error) {
	return values(p.Primitives.ReadBlocks(ctx, keys))
}

func (p docPrims) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[doc], error) {
	return values(p.Primitives.ScanBlocks(ctx, after, limit))
}

// TestPrimitives runs the engine's primitives suite on the store's
// primitives, on dynalite: fresh tables per subtest.
func TestPrimitives(t *testing.T) {
	sv := dynalitetest.Start(t)
	c := sv.Client()
	indextest.Primitives(t, func(t *testing.T) indextest.Harness {
		s := Open(c, docDesc(), Options{TablePrefix: sv.Prefix(t)})
		if err := s.Ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
		return indextest.Harness{
			P:         docPrims{s.eng.P},
			Unordered: true, // a Scan is in hash order
			Write: func(ctx context.Context, d doc, st index.Stamp) error {
				var stp *index.Stamp
				if st != (index.Stamp{}) {
					stp = &st
				}
				item, err := s.item(&d, 1, stp)
				if err != nil {
					return err
				}
				_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
				return err
			},
		}
	})
}
