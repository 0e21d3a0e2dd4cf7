package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// The rules of the shared migration loop (runtime.MigrateBlocks) that
// hold on every store, checked over a real store: a bbolt bucket whose
// values are "old:..." (a block in another layout) or "new:..." (the
// current one), rewritten by a conditional write of a transaction of its
// own, as a store without transactions over blocks does.

type boltBlocks struct {
	db *bbolt.DB
	// meddle, when set, runs before each rewrite: a write of another
	// client between the migration's read and its rewrite.
	meddle   func(id string)
	rewrites int
}

var blocksBucket = []byte("blocks")

func openBlocks(t *testing.T, blocks map[string]string) *boltBlocks {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "m.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := &boltBlocks{db: db}
	for id, v := range blocks {
		b.put(t, id, v)
	}
	return b
}

func (b *boltBlocks) put(t *testing.T, id, v string) {
	t.Helper()
	err := b.db.Update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(blocksBucket)
		if err != nil {
			return err
		}
		if v == "" {
			return bk.Delete([]byte(id))
		}
		return bk.Put([]byte(id), []byte(v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *boltBlocks) dump() map[string]string {
	out := map[string]string{}
	_ = b.db.View(func(tx *bbolt.Tx) error {
		if bk := tx.Bucket(blocksBucket); bk != nil {
			return bk.ForEach(func(k, v []byte) error { out[string(k)] = string(v); return nil })
		}
		return nil
	})
	return out
}

func (b *boltBlocks) ScanBlocks(_ context.Context, after *string, n int) ([]runtime.ScannedBlock[string, []byte], bool, error) {
	var out []runtime.ScannedBlock[string, []byte]
	more := false
	err := b.db.View(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(blocksBucket)
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek([]byte(*after))
			if k != nil && string(k) == *after {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(out) == n {
				more = true
				break
			}
			out = append(out, runtime.ScannedBlock[string, []byte]{ID: string(k), Raw: bytes.Clone(v), Read: true})
		}
		return nil
	})
	return out, more, err
}

func (b *boltBlocks) ReadBlock(_ context.Context, id string, _ int) ([]byte, bool, error) {
	var v []byte
	err := b.db.View(func(tx *bbolt.Tx) error {
		if bk := tx.Bucket(blocksBucket); bk != nil {
			v = bytes.Clone(bk.Get([]byte(id)))
		}
		return nil
	})
	return v, v != nil, err
}

func (b *boltBlocks) StoredLayout(id string, v []byte) (string, error) {
	switch {
	case bytes.HasPrefix(v, []byte("new:")):
		return "", nil
	case bytes.HasPrefix(v, []byte("old:")):
		return "old", nil
	}
	return "", runtime.Unreadable("Migrate", "Block", id, errors.New("no layout"))
}

func (b *boltBlocks) RewriteBlock(_ context.Context, id string, v []byte) error {
	if b.meddle != nil {
		b.meddle(id)
	}
	return b.db.Update(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(blocksBucket)
		if !bytes.Equal(bk.Get([]byte(id)), v) {
			return runtime.ErrChangedSinceRead
		}
		b.rewrites++
		return bk.Put([]byte(id), append([]byte("new:"), v[4:]...))
	})
}

var stringKeys = runtime.StringKeys[string]()

func TestMigrateBlocksDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	b := openBlocks(t, map[string]string{"a": "old:1", "b": "new:2", "c": "old:3", "d": "junk"})
	before := b.dump()
	res, last, more, err := runtime.MigrateBlocks(ctx, "Block", stringKeys, b, nil, 10, true)
	if err != nil || more || string(last) != string(stringKeys.Bytes("d")) {
		t.Fatalf("dry run: %v, last %q, more %v", err, last, more)
	}
	got := map[string]runtime.BlockMigration{}
	for _, m := range res {
		got[m.ID.(string)] = m
	}
	if len(res) != 4 || !got["a"].Migrated || got["a"].From != "old" || got["b"].Migrated || got["b"].From != "" || !got["c"].Migrated || !errors.Is(got["d"].Err, runtime.ErrUnreadable) {
		t.Fatalf("dry run reported %+v", res)
	}
	if after := b.dump(); b.rewrites != 0 || len(after) != len(before) || after["a"] != "old:1" || after["c"] != "old:3" {
		t.Fatalf("a dry run wrote: %v", after)
	}
	// The same run for real rewrites the two old blocks, in batches of one.
	var pos []byte
	migrated := 0
	for {
		res, last, more, err := runtime.MigrateBlocks(ctx, "Block", stringKeys, b, pos, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res {
			if m.Migrated {
				migrated++
			}
		}
		pos = last
		if !more {
			break
		}
	}
	if after := b.dump(); migrated != 2 || after["a"] != "new:1" || after["c"] != "new:3" || after["d"] != "junk" {
		t.Fatalf("migrated %d: %v", migrated, after)
	}
}

func TestMigrateBlocksRetryBound(t *testing.T) {
	ctx := context.Background()
	b := openBlocks(t, map[string]string{"a": "old:1", "b": "old:2"})
	// Block a changes before each of its rewrites: it is read again each
	// time, and fails after MaxAttempts with Contended's error; b, once
	// changed, is migrated on its second attempt. Neither stops the batch.
	changes := map[string]int{}
	b.meddle = func(id string) {
		if id == "a" || changes[id] == 0 {
			changes[id]++
			b.put(t, id, "old:"+strings.Repeat("x", changes[id]))
		}
	}
	res, _, _, err := runtime.MigrateBlocks(ctx, "Block", stringKeys, b, nil, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Migrated || !errors.Is(res[0].Err, runtime.ErrConflict) || !res[1].Migrated || res[1].Err != nil {
		t.Fatalf("got %+v", res)
	}
	if changes["a"] != runtime.MaxAttempts || changes["b"] != 1 || b.rewrites != 1 {
		t.Fatalf("a was changed %d times, b %d, rewrites %d", changes["a"], changes["b"], b.rewrites)
	}
	if got := b.dump(); got["b"] != "new:x" {
		t.Fatalf("b after the migration: %q", got["b"])
	}
}

func TestMigrateBlocksDeletedMeanwhile(t *testing.T) {
	ctx := context.Background()
	b := openBlocks(t, map[string]string{"a": "old:1"})
	b.meddle = func(id string) { b.put(t, id, "") }
	res, _, _, err := runtime.MigrateBlocks(ctx, "Block", stringKeys, b, nil, 10, false)
	if err != nil || len(res) != 1 || res[0].Migrated || res[0].From != "" || res[0].Err != nil {
		t.Fatalf("a block deleted before its rewrite: %+v, %v", res, err)
	}
}

func TestMigrateBlocksBadPosition(t *testing.T) {
	b := openBlocks(t, nil)
	_, _, _, err := runtime.MigrateBlocks(context.Background(), "Block", stringKeys, b, append(stringKeys.Bytes("a"), 0xff, 0x01, 0x02), 10, false)
	var re *runtime.Error
	if !errors.Is(err, runtime.ErrBadCursor) || !errors.As(err, &re) {
		t.Fatalf("got %v, want a *runtime.Error of kind ErrBadCursor", err)
	}
}
