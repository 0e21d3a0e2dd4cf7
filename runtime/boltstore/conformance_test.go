package boltstore_test

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	var db *bbolt.DB // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true, MaxDepth: bsonval.MaxDepth},
		Concurrent: true, // every write is one bbolt transaction
		Open: func(t *testing.T) storetest.Repos {
			var err error
			db, err = bbolt.Open(filepath.Join(t.TempDir(), "conformance.db"), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := db
			t.Cleanup(func() { d.Close() })
			return storetest.Repos{
				Matches:  model.NewMatchBoltRepository(db),
				Journals: model.NewJournalBoltRepository(db),
				Cards:    model.NewCardBoltRepository(db),
				Replies:  model.NewReplyBoltRepository(db),
			}
		},
	})
}
