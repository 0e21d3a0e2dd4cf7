package mongotest

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Harness is the test harness of the MongoDB adapter (the store's
// runtime/storetest.Harness, which the conformance suite and the
// examples' suites take), over databases from Start, with the lookup
// mapping of opts: Native or IndexTables.
type Harness struct {
	// Name names the harness in messages and subtests.
	Name string
	// Options are the mongostore options of every repository.
	Options []mongostore.Option
	// Atomic: every lookup is a native index, so AtomicLookups holds for
	// aggregates whose lookups are all native.
	Atomic bool
	// UniqueTables: unique lookups are in index tables, whose entries
	// DropClaim can remove (a native unique index refuses a second holder
	// itself).
	UniqueTables bool
	// Client, optional, are the client options of every database opened
	// (StartWithOptions: a client of the test's own), and Pause what pauses
	// it, for Deadlines (e.g. a dialer that stops forwarding).
	Client *options.ClientOptions
	Pause  func() (resume func())
}

// Native is the harness of the default mapping: lookups on native
// indexes (NativeOptions: on FerretDB unique lookups keep their index
// tables).
func Native() Harness {
	return Harness{Name: "mongo", Options: NativeOptions(), Atomic: true, UniqueTables: !Real()}
}

// IndexTables is the harness of the mapping with every lookup in an index
// table (noam:"lookup,table" on every lookup), so that the index-table
// protocol stays tested.
func IndexTables() Harness {
	return Harness{Name: "mongo-tables", Options: []mongostore.Option{mongostore.IndexTables()}, UniqueTables: true}
}

// Store returns the storetest harness. The concurrency subtests run only
// against a real MongoDB: FerretDB's concurrent writes are not atomic.
func (m Harness) Store() storetest.Harness {
	h := storetest.Harness{
		Name:                      m.Name,
		Caps:                      runtime.Caps{Name: "mongo", OrderedScan: true, AtomicLookups: m.Atomic, MaxValueBytes: 16 << 20, MaxDepth: mongostore.MaxDepth},
		AtomicLookupsPerAggregate: m.Atomic,
		Concurrent:                Real(),
		NotConcurrent:             "FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run the concurrency subtests against a real MongoDB",
		TimePrecision:             time.Millisecond,
		Open: func(t *testing.T) storetest.DB {
			db := storetest.DB{MongoOptions: m.Options}
			if m.Client != nil {
				db.Mongo = StartWithOptions(t, m.Client)
			} else {
				db.Mongo = Start(t)
			}
			if m.Pause != nil {
				db.Pause = func(testing.TB) func() { return m.Pause() }
			}
			return db
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A document where the entry holds a string.
			res, err := db.Mongo.Collection(collection).UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: entry, Value: bson.D{{Key: "not", Value: "a string"}}}}}})
			if err != nil || res.MatchedCount != 1 {
				t.Fatalf("corrupting %s of block %s: %v, %+v", entry, id, err, res)
			}
		},
	}
	if m.UniqueTables {
		// The entry of a unique value is keyed by the value alone.
		h.DropClaim = func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			_, err := db.Mongo.Collection(mongostore.TableName(collection, lookup)).DeleteOne(context.Background(), bson.D{{Key: "_id", Value: mongostore.IndexKey(value)}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}
