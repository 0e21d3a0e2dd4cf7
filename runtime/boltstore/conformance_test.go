package boltstore_test

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true},
		Concurrent: true, // every write is one bbolt transaction
		Open:       func(t *testing.T) storetest.Repos { return open(t, "conformance.db", nil) },
	})
}

// open opens a fresh database file and its repositories; db, when not
// nil, gets the database.
func open(t *testing.T, name string, db **bbolt.DB) storetest.Repos {
	d, err := bbolt.Open(filepath.Join(t.TempDir(), name), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if db != nil {
		*db = d
	}
	return storetest.Repos{
		Matches:  model.NewMatchBoltRepository(d),
		Journals: model.NewJournalBoltRepository(d),
		Cards:    model.NewCardBoltRepository(d),
		Replies:  model.NewReplyBoltRepository(d),
	}
}

// TestDeadlines runs the deadline test on bbolt, "paused" by a write
// transaction that holds the database's write lock: every write gives up
// waiting for the lock at its deadline (bbolt takes no context; see
// update), reads, which never wait for a writer, run.
func TestDeadlines(t *testing.T) {
	var db *bbolt.DB
	storetest.Deadlines(t, storetest.Harness{
		Name:           "bolt",
		PauseReadsPass: true,
		Open:           func(t *testing.T) storetest.Repos { return open(t, "deadlines.db", &db) },
		Pause: func(t *testing.T) func() {
			tx, err := db.Begin(true)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = tx.Rollback() }
		},
		// A unique lookup's bucket maps each value to its holder.
		DropClaim: func(t *testing.T, collection, lookup string, value []byte) {
			err := db.Update(func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(collection + "." + lookup)).Delete(value)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
