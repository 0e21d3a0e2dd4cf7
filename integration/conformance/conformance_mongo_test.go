// Package conformance runs the store-independent conformance suite
// (runtime/storetest) against the MongoDB adapter: FerretDB in-process, or
// the MongoDB at NOAM_MONGO_URI, once with lookups on native indexes and
// once with every lookup in an index table.
package conformance

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// harness is the suite's harness; uniqueTables says the unique lookups
// are in index tables, whose entries DropClaim can remove (a native unique
// index refuses a second holder itself).
func harness(name string, atomic, uniqueTables bool, opts ...mongostore.Option) storetest.Harness {
	var db *mongo.Database // the current subtest's
	h := storetest.Harness{
		Name:                      name,
		Declaration:               layout.Store,
		Requests:                  sent,
		Caps:                      runtime.Caps{Name: "mongo", OrderedScan: true, AtomicLookups: atomic, MaxValueBytes: 16 << 20, MaxDepth: mongostore.MaxDepth},
		AtomicLookupsPerAggregate: atomic,
		Concurrent:                mongotest.Real(),
		NotConcurrent:             "FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run the concurrency subtests against a real MongoDB",
		TimePrecision:             time.Millisecond,
		Corrupt: func(t *testing.T, id, entry string) {
			// A document where the entry holds a string.
			res, err := db.Collection("matches").UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: entry, Value: bson.D{{Key: "not", Value: "a string"}}}}}})
			if err != nil || res.MatchedCount != 1 {
				t.Fatalf("corrupting %s of block %s: %v, %+v", entry, id, err, res)
			}
		},
		Open: func(t *testing.T) storetest.Repos {
			db = mongotest.StartWithOptions(t, counting())
			return storetest.Repos{
				Matches:  model.NewMatchMongoRepository(db, opts...),
				Journals: model.NewJournalMongoRepository(db, opts...),
				Cards:    model.NewCardMongoRepository(db, opts...),
				Replies:  model.NewReplyMongoRepository(db, opts...),
			}
		},
	}
	// FerretDB v1 refuses projections in findAndModify and $slice ones:
	// the adapter resends such a command without, once per client (each
	// subtest has a client of its own), and appends with a find and an
	// update.
	if !mongotest.Real() {
		h.Facts = map[access.Term]int{access.IfProjectionRefused: 1, access.IfNoProjection: 1, access.IfSliceRefused: 1}
	}
	if uniqueTables {
		// The entry of a unique value is keyed by the value alone.
		h.DropClaim = func(t *testing.T, collection, lookup string, value []byte) {
			_, err := db.Collection(mongostore.TableName(collection, lookup)).DeleteOne(context.Background(), bson.D{{Key: "_id", Value: mongostore.IndexKey(value)}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// TestConformance runs the suite with lookups on native indexes (the
// default mapping). The concurrency subtests run only against a real
// MongoDB: FerretDB's concurrent writes are not atomic.
func TestConformance(t *testing.T) {
	h := harness("mongo", true, !mongotest.Real(), mongotest.NativeOptions()...)
	if !mongotest.Real() {
		h.Tables = func(l access.Lookup) bool { return l.Unique } // mongostore.UniqueTables
	}
	storetest.Run(t, h)
}

// TestConformanceIndexTables runs the suite with every lookup in an index
// table (noam:"lookup,table" on every lookup), so that the index-table
// protocol stays tested.
func TestConformanceIndexTables(t *testing.T) {
	h := harness("mongo", false, true, mongostore.IndexTables())
	h.Tables = func(access.Lookup) bool { return true }
	storetest.Run(t, h)
}
