package boltstore_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

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

// caps are bbolt's capabilities, as the adapter declares them.
var caps = runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: bbolt.MaxValueSize, MaxKeyBytes: bbolt.MaxKeySize, MaxIndexKeyBytes: bbolt.MaxKeySize, MaxDepth: bsonval.MaxDepth}

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	var db *bbolt.DB // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       caps,
		Concurrent: true, // every write is one bbolt transaction
		Open:       func(t *testing.T) storetest.Repos { return open(t, "conformance.db", &db) },
		// A unique lookup's bucket maps each value to its holder.
		DropClaim: func(t *testing.T, collection, lookup string, value []byte) {
			err := db.Update(func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(collection + "." + lookup)).Delete(value)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, id, entry string) {
			// A BSON string whose length runs past the value.
			key := runtime.AppendString(boltstore.BlockPrefix(runtime.AppendString(nil, id)), entry)
			err := db.Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket([]byte("matches"))
				if b == nil || b.Get(key) == nil {
					return fmt.Errorf("no entry %s of block %s", entry, id)
				}
				return b.Put(key, []byte{0x02, 0xff, 0xff, 0xff, 0x7f, 'x', 0})
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestConformanceSizes runs the size tests with the value limit lowered
// from bbolt's 2 GiB to 1 MiB (the same check, affordable sizes); keys
// keep bbolt's 32768-byte limit.
func TestConformanceSizes(t *testing.T) {
	defer boltstore.SetMaxValueBytes(1 << 20)()
	small := caps
	small.MaxValueBytes = 1 << 20
	storetest.RunSizes(t, storetest.Harness{
		Name: "bolt (values of at most 1 MiB)",
		Caps: small,
		Open: func(t *testing.T) storetest.Repos { return open(t, "sizes.db", nil) },
	})
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
	})
}
