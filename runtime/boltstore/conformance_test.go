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

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	var db *bbolt.DB // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true, MaxDepth: bsonval.MaxDepth},
		Concurrent: true, // every write is one bbolt transaction
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
