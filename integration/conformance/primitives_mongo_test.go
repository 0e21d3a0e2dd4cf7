package conformance

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/indextest"
)

// pdoc is the aggregate of the primitives' suite: indextest.Doc with a
// descriptor.
type pdoc struct {
	ID   string
	Code string
	Tags []string
}

func encStrings(vs ...string) [][]byte {
	var out [][]byte
	for _, v := range vs {
		out = append(out, runtime.AppendString(nil, v))
	}
	return out
}

var pdocDesc = (&runtime.Desc[pdoc, string]{
	Aggregate: "Doc",
	Keys:      runtime.StringKeys[string](),
	ID:        func(d *pdoc) *string { return &d.ID },
	Fields: []*runtime.Field[pdoc]{
		runtime.NewField("code", "Code", func(d *pdoc) *string { return &d.Code }),
		runtime.NewField("tags", "Tags", func(d *pdoc) *[]string { return &d.Tags }),
	},
	Lookups: []*runtime.Lookup[pdoc]{
		{Name: "code", Unique: true, Parts: 1, Fields: []string{"code"}, Values: func(d *pdoc) [][]byte { return encStrings(d.Code) }},
		{Name: "tags", Parts: 1, Fields: []string{"tags"}, Values: func(d *pdoc) [][]byte { return encStrings(d.Tags...) }},
	},
}).Init()

// TestMongoPrimitives checks the index-table primitives of the MongoDB
// adapter against the in-memory ones the index engine is tested on.
func TestMongoPrimitives(t *testing.T) {
	indextest.Primitives(t, func(t *testing.T) indextest.Harness[*pdoc] {
		db := mongotest.Start(t)
		s := mongostore.Open(db, pdocDesc, mongostore.IndexTables())
		if err := s.Ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
		return indextest.Harness[*pdoc]{
			P: s.Primitives(),
			Write: func(ctx context.Context, d indextest.Doc, st index.Stamp) error {
				doc := bson.D{{Key: "_id", Value: d.ID}, {Key: "code", Value: d.Code}, {Key: "tags", Value: d.Tags}}
				if st.Seq != 0 {
					doc = append(doc, bson.E{Key: mongostore.SeqKey, Value: st.Seq})
				}
				if st.Inc != 0 {
					doc = append(doc, bson.E{Key: mongostore.IncKey, Value: st.Inc})
				}
				_, err := s.Collection().ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}}, doc, options.Replace().SetUpsert(true))
				return err
			},
			View: func(d *pdoc) indextest.Doc { return indextest.Doc{ID: d.ID, Code: d.Code, Tags: d.Tags} },
		}
	})
}
