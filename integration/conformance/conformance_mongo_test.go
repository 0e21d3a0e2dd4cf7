// Package conformance runs the store-independent conformance suite
// (runtime/storetest) against the MongoDB adapter: FerretDB in-process, or
// the MongoDB at NOAM_MONGO_URI, once with lookups on native indexes and
// once with every lookup in an index table.
package conformance

import (
	"testing"
	"time"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

func harness(name string, atomic bool, opts ...mongostore.Option) storetest.Harness {
	return storetest.Harness{
		Name:                      name,
		Caps:                      runtime.Caps{Name: "mongo", OrderedScan: true, AtomicLookups: atomic, MaxValueBytes: 16 << 20, MaxDepth: mongostore.MaxDepth},
		AtomicLookupsPerAggregate: atomic,
		Concurrent:                mongotest.Real(),
		NotConcurrent:             "FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run the concurrency subtests against a real MongoDB",
		TimePrecision:             time.Millisecond,
		Open: func(t *testing.T) storetest.Repos {
			db := mongotest.Start(t)
			return storetest.Repos{
				Matches:  model.NewMatchMongoRepository(db, opts...),
				Journals: model.NewJournalMongoRepository(db, opts...),
				Cards:    model.NewCardMongoRepository(db, opts...),
				Replies:  model.NewReplyMongoRepository(db, opts...),
			}
		},
	}
}

// TestConformance runs the suite with lookups on native indexes (the
// default mapping). The concurrency subtests run only against a real
// MongoDB: FerretDB's concurrent writes are not atomic.
func TestConformance(t *testing.T) {
	storetest.Run(t, harness("mongo", true, mongotest.NativeOptions()...))
}

// TestConformanceIndexTables runs the suite with every lookup in an index
// table (noam:"lookup,table" on every lookup), so that the index-table
// protocol stays tested.
func TestConformanceIndexTables(t *testing.T) {
	storetest.Run(t, harness("mongo", false, mongostore.IndexTables()))
}
