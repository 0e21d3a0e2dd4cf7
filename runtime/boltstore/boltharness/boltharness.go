// Package boltharness is bbolt's test harness (runtime/storetest.Harness):
// how to open an empty database file, what the adapter declares, and its
// hooks behind the repositories' back (a dropped claim, a corrupted value, a
// pause). Every suite that runs on every store takes it: the conformance
// suite (runtime/boltstore/suite), the examples' suites and the
// OpenTelemetry check, all run from runtime/boltstore/suite.
package boltharness

import (
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Caps are bbolt's capabilities, as the adapter declares them.
var Caps = runtime.Caps{Name: "bolt", System: "bbolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: bbolt.MaxValueSize, MaxKeyBytes: bbolt.MaxKeySize, MaxIndexKeyBytes: bbolt.MaxKeySize, MaxDepth: bsonval.MaxDepth}

// Open opens a fresh database file in a temporary directory of t,
// closed when t ends.
func Open(t testing.TB) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "test.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Harness is the harness of bbolt: a fresh database file per test, paused by
// a write transaction that holds its write lock (every write gives up
// waiting for the lock at its deadline; reads, which never wait for a
// writer, run).
func Harness() storetest.Harness {
	return storetest.Harness{
		Name:       "bolt",
		Caps:       Caps,
		Concurrent: true, // every write is one bbolt transaction
		Batches:    true, // one transaction
		// The expires entry of each counted block, in the count's transaction.
		ExpiringCounts: true,
		Open: func(t *testing.T) storetest.DB {
			db := Open(t)
			return storetest.DB{Store: "bolt", Handle: db, Pause: func(t testing.TB) func() {
				tx, err := db.Begin(true)
				if err != nil {
					t.Fatal(err)
				}
				return func() { _ = tx.Rollback() }
			}}
		},
		PauseReadsPass: true,
		// A unique lookup's bucket maps each value to its holder.
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			err := db.Handle.(*bbolt.DB).Update(func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(collection + "." + lookup)).Delete(value)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A BSON string whose length runs past the value.
			key := runtime.AppendString(boltstore.BlockPrefix(runtime.AppendString(nil, id)), entry)
			err := db.Handle.(*bbolt.DB).Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket([]byte(collection))
				if b == nil || b.Get(key) == nil {
					return fmt.Errorf("no entry %s of block %s", entry, id)
				}
				return b.Put(key, []byte{0x02, 0xff, 0xff, 0xff, 0x7f, 'x', 0})
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
}
