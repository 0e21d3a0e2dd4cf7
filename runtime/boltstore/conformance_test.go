package boltstore_test

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// openRepos opens the model's repositories over a fresh database file.
func openRepos(t *testing.T) storetest.Repos {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "conformance.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return storetest.Repos{
		Matches:  model.NewMatchBoltRepository(db),
		Journals: model.NewJournalBoltRepository(db),
		Cards:    model.NewCardBoltRepository(db),
		Replies:  model.NewReplyBoltRepository(db),
	}
}

// TestConformanceSizes runs the size tests with the value limit lowered
// from bbolt's 2 GiB to 1 MiB (the same check, affordable sizes); keys
// keep bbolt's 32768-byte limit.
func TestConformanceSizes(t *testing.T) {
	defer boltstore.SetMaxValueBytes(1 << 20)()
	storetest.RunSizes(t, storetest.Harness{
		Name: "bolt (values of at most 1 MiB)",
		Caps: runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: 1 << 20, MaxKeyBytes: bbolt.MaxKeySize, MaxIndexKeyBytes: bbolt.MaxKeySize},
		Open: openRepos,
	})
}

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: bbolt.MaxValueSize, MaxKeyBytes: bbolt.MaxKeySize, MaxIndexKeyBytes: bbolt.MaxKeySize},
		Concurrent: true, // every write is one bbolt transaction
		Open:       openRepos,
	})
}
