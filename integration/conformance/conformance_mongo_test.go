// Package conformance runs the store-independent conformance suite
// (runtime/storetest) against the MongoDB adapter: FerretDB in-process, or
// the MongoDB at NOAM_MONGO_URI.
package conformance

import (
	"testing"
	"time"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// TestConformance is the MongoDB harness: a fresh database per subtest.
// The concurrency subtests run only against a real MongoDB: FerretDB's
// concurrent writes are not atomic.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:          "mongo",
		Caps:          runtime.Caps{Name: "mongo", OrderedScan: true, MaxValueBytes: 16 << 20},
		Concurrent:    mongotest.Real(),
		NotConcurrent: "FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run the concurrency subtests against a real MongoDB",
		TimePrecision: time.Millisecond,
		Open: func(t *testing.T) storetest.Repos {
			db := mongotest.Start(t)
			return storetest.Repos{
				Matches:  model.NewMatchMongoRepository(db),
				Journals: model.NewJournalMongoRepository(db),
				Cards:    model.NewCardMongoRepository(db),
				Replies:  model.NewReplyMongoRepository(db),
			}
		},
	})
}
