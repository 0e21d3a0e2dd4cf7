package explain

// Sampling of a MongoDB database (noamgen explain -sample N -mongo URI -db name).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/model"
	mlayout "github.com/noamgen/noamgen/runtime/mongostore/layout"
)

func init() {
	samplers["mongo"] = mongoSample
}

// mongoSample reads at most n documents of a's collection, in _id order, from
// the database conn["db"] of the server at conn["mongo"].
func mongoSample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error) {
	uri := conn["mongo"]
	if uri == "" {
		return nil, nil
	}
	if conn["db"] == "" {
		return nil, fmt.Errorf("sampling MongoDB needs the database: -db or $NOAM_MONGO_DB")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to MongoDB: %w", err)
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	var raw []byte
	var mapping string
	doc, err := client.Database(conn["db"]).Collection(SchemaCollection).FindOne(ctx, bson.D{{Key: "_id", Value: a.Collection}}).Raw()
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
	case err != nil:
		return nil, fmt.Errorf("reading %s.%s: %w", conn["db"], SchemaCollection, err)
	default:
		v := doc.Lookup("rec")
		if _, data, ok := v.BinaryOK(); ok {
			raw = data
		} else if str, ok := v.StringValueOK(); ok {
			raw = []byte(str)
		}
		mapping, _ = doc.Lookup(mlayout.Mapping).StringValueOK()
	}
	rec, err := recordedOf(a, raw)
	if err != nil {
		return nil, err
	}
	coll := client.Database(conn["db"]).Collection(a.Collection)
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n)))
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", conn["db"], a.Collection, err)
	}
	defer cur.Close(ctx)
	s := &Sample{Source: "database " + conn["db"] + ", collection " + a.Collection, MaxValueBytes: mlayout.MaxDocumentBytes, LimitOf: "document", Recorded: rec, Lookups: mapping}
	acc := NewSampleSizes(a)
	fields := map[string]*model.Field{}
	for _, f := range a.Fields {
		fields[f.Key] = f
	}
	for cur.Next(ctx) {
		raw := cur.Current
		s.Blocks++
		elems, err := raw.Elements()
		if err != nil {
			return nil, fmt.Errorf("%s: a document that does not decode: %w", a.Collection, err)
		}
		key := raw.Lookup("_id").String()
		if str, ok := raw.Lookup("_id").StringValueOK(); ok {
			key = str // as bbolt's samples show it
		}
		var parts []PartitionSize
		root := 0
		for _, e := range elems {
			k := e.Key()
			f := fields[k]
			switch {
			case k == "_id", k == mlayout.Seq, k == mlayout.Inc:
			case k == mlayout.Len:
				lens, _ := e.Value().Document().Elements()
				for _, l := range lens {
					acc.Entry(l.Key(), len(l))
				}
			case f == nil:
				acc.Entry(k, len(e)) // a field of no entry (removed)
			case f.Partition:
				vals, _ := e.Value().Array().Values()
				ps := PartitionSize{Key: key, Field: k, Elements: len(vals), Bytes: len(e)}
				for _, v := range vals {
					acc.Entry(k+"[]", len(v.Value))
				}
				parts = append(parts, ps)
			case f.IsVersion || a.Strategy == model.ETF:
				acc.Entry(k, len(e))
			default:
				root += len(e)
			}
		}
		if a.Strategy == model.EAO {
			acc.Entry("", root)
		}
		acc.Block(key, len(raw), parts)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", conn["db"], a.Collection, err)
	}
	acc.Fill(s)
	return s, nil
}
