package boltstore

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// indexedRagg is ragg with a unique lookup over its name and one over
// its tags.
func indexedRagg(t *testing.T) (*bbolt.DB, *Store[ragg, string]) {
	t.Helper()
	d := raggDesc()
	d.Lookups = []*runtime.Lookup[ragg]{
		{Name: "name", Unique: true, Parts: 1, Fields: []string{"name"}, Values: func(a *ragg) [][]byte {
			return [][]byte{runtime.AppendString(nil, a.Name)}
		}},
		{Name: "tags", Parts: 1, Fields: []string{"tags"}, Values: func(a *ragg) [][]byte {
			var out [][]byte
			for _, tag := range a.Tags {
				out = append(out, runtime.AppendString(nil, tag))
			}
			return runtime.SortKeys(out)
		}},
	}
	d.Init()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, Open(db, d)
}

// TestRepairRestoresBuckets: Repair (the engine's, over the bbolt
// primitives) puts the index buckets back to the very pairs the writes
// left, after entries were removed, added and redirected behind the
// store's back, across more blocks than one Repair page holds; a second
// Repair finds nothing to fix.
func TestRepairRestoresBuckets(t *testing.T) {
	db, s := indexedRagg(t)
	const n = 150 // more than two pages of index.Engine.RepairBatch (64)
	for i := range n {
		a := &ragg{ID: fmt.Sprintf("r%03d", i), Name: fmt.Sprintf("name%03d", i), Tags: []string{"all", fmt.Sprintf("t%d", i%3)}}
		if err := s.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	names, tags := dumpBucket(t, db, "Ragg.name"), dumpBucket(t, db, "Ragg.tags")
	if len(names) != n || len(tags) != 2*n {
		t.Fatalf("index buckets hold %d and %d pairs, want %d and %d", len(names), len(tags), n, 2*n)
	}
	str := func(s string) []byte { return runtime.AppendString(nil, s) }
	tagKey := func(tag, id string) []byte { return append(str(tag), str(id)...) }
	err := db.Update(func(tx *bbolt.Tx) error {
		nb, tb := tx.Bucket([]byte("Ragg.name")), tx.Bucket([]byte("Ragg.tags"))
		for _, err := range []error{
			nb.Delete(str("name007")),                  // missing
			nb.Put(str("name100"), str("r101")),        // the wrong holder
			nb.Put(str("gone"), str("r999")),           // no such block
			nb.Put(str("name102"), str("r103")),        // a block that does not hold it
			tb.Delete(tagKey("all", "r140")),           // missing
			tb.Put(tagKey("t9", "r001"), []byte{}),     // a value the block does not hold
			tb.Put(tagKey("all", "r999"), []byte{}),    // no such block
			tb.Put(append(str("all"), 0x7f), []byte{}), // not even a block key
			tb.Put([]byte{0x7f}, []byte{}),             // not even a value
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Aggregates != n || rep.Added != 4 || rep.Removed != 7 || len(rep.Conflicts) != 0 || len(rep.Unreadable) != 0 {
		t.Fatalf("Repair: %v, want %d aggregates, 4 added, 7 removed", rep, n)
	}
	if got := dumpBucket(t, db, "Ragg.name"); !maps.Equal(got, names) {
		t.Fatalf("Ragg.name after Repair differs from what the writes left")
	}
	if got := dumpBucket(t, db, "Ragg.tags"); !maps.Equal(got, tags) {
		t.Fatalf("Ragg.tags after Repair differs from what the writes left")
	}
	if rep, err := s.Repair(ctx); err != nil || rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("second Repair: %v, %v", rep, err)
	}
}
