package boltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) {
	var db *bbolt.DB // the current subtest's
	storetest.Run(t, storetest.Harness{
		Name:       "bolt",
		Caps:       runtime.Caps{Name: "bolt", OrderedScan: true, AtomicLookups: true},
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
		Layout: func(_ context.Context, collection string, blockKey []byte) ([]string, error) {
			return boltLayout(db, collection, blockKey)
		},
	})
}

// boltLayout lists the entries of one block as the bucket holds them: the
// key-value pairs under the block's prefix, decoded to the model's entry
// keys ("" for the EAO root entry at the prefix itself, "rounds" for an
// element count, "rounds[3]" for an element); the empty marker of an ETF
// block is no entry. It stands in for a Layout method of the adapter,
// which the store contract does not have yet.
func boltLayout(db *bbolt.DB, collection string, blockKey []byte) ([]string, error) {
	var out []string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(collection))
		if b == nil {
			return fmt.Errorf("no bucket %q", collection)
		}
		prefix := boltstore.BlockPrefix(blockKey)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			r := runtime.NewKeyReader(k[len(prefix):])
			if r.Done() {
				if len(v) > 0 {
					out = append(out, "")
				}
				continue
			}
			field, err := r.String()
			if err != nil {
				return fmt.Errorf("key %x: entry key: %v", k, err)
			}
			if r.Done() {
				out = append(out, field)
				continue
			}
			i, err := r.Int()
			if err != nil || !r.Done() {
				return fmt.Errorf("key %x: element index: %v", k, err)
			}
			out = append(out, fmt.Sprintf("%s[%d]", field, i))
		}
		return nil
	})
	return out, err
}
