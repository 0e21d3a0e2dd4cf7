package index_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// The rules of index.PutMany, on blocks stored in bbolt: a bucket of
// JSON records (boltBlock), read in one read transaction per pass and
// written in one update transaction per pass, each write on condition of
// the stamp and version read, as a store without atomic lookups writes.

type doc struct {
	ID      string
	Name    string
	Created time.Time
	Version int64
}

var (
	docName    = runtime.NewField("name", "Name", func(d *doc) *string { return &d.Name })
	docCreated = runtime.NewField("created", "Created", func(d *doc) *time.Time { return &d.Created })
	docDesc    = (&runtime.Desc[doc, string]{
		Aggregate: "Doc", Collection: "docs", Keys: runtime.StringKeys[string](),
		ID:      func(d *doc) *string { return &d.ID },
		Fields:  []*runtime.Field[doc]{docName, docCreated},
		Version: runtime.NewVersion("version", "Version", func(d *doc) *int64 { return &d.Version }),
		Created: docCreated,
	}).Init()
)

// boltBlock is a block as the bucket holds it.
type boltBlock struct {
	Seq, Inc int64
	Version  int64
	Created  json.RawMessage
	Name     string
}

var bucket = []byte("docs")

// jsonDecoder decodes a stored created entry.
type jsonDecoder json.RawMessage

func (d jsonDecoder) Decode(v any) error { return json.Unmarshal(d, v) }

// boltPrims are the engine's primitives: the index items in memory, the
// blocks read from bbolt (the read-back of an ambiguous write).
type boltPrims struct {
	*memindex.Store[*doc]
	db *bolt.DB
}

func (p boltPrims) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[*doc], error) {
	var out []index.Block[*doc]
	err := p.db.View(func(tx *bolt.Tx) error {
		for _, k := range keys {
			if raw := tx.Bucket(bucket).Get(k); raw != nil {
				var b boltBlock
				if err := json.Unmarshal(raw, &b); err != nil {
					return err
				}
				out = append(out, index.Block[*doc]{Key: k, Stamp: index.Stamp{Seq: b.Seq, Inc: b.Inc}, Value: &doc{Name: b.Name}})
			}
		}
		return nil
	})
	return out, err
}

// boltPuts is index.Puts over the bucket, with hooks for the tests.
type boltPuts struct {
	db    *bolt.DB
	ts    []*doc
	read  []index.BlockState[*doc]
	reads int
	// beforeWrite runs before each pass's write transaction.
	beforeWrite func(idx []int)
	// lose reports that the reply of item i's write is lost (written
	// first when applied).
	lose func(i int) (applied bool, lost bool)
}

func (p *boltPuts) key(i int) []byte { return docDesc.Keys.Bytes(p.ts[i].ID) }

func (p *boltPuts) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*doc], []error) {
	p.reads++
	sts, errs := make([]index.BlockState[*doc], len(idx)), make([]error, len(idx))
	err := p.db.View(func(tx *bolt.Tx) error {
		for j, i := range idx {
			raw := tx.Bucket(bucket).Get(p.key(i))
			if raw == nil {
				sts[j] = index.BlockState[*doc]{HasVersion: true}
				continue
			}
			var b boltBlock
			if err := json.Unmarshal(raw, &b); err != nil {
				errs[j] = err
				continue
			}
			sts[j] = index.BlockState[*doc]{Found: true, Stamp: index.Stamp{Seq: b.Seq, Inc: b.Inc}, Value: &doc{Name: b.Name},
				HasVersion: true, Version: b.Version}
			if b.Created != nil {
				sts[j].Created = jsonDecoder(b.Created)
			}
		}
		return nil
	})
	for j, i := range idx {
		if err != nil {
			errs[j] = err
		}
		p.read[i] = sts[j]
	}
	return sts, errs
}

func (p *boltPuts) WriteBlocks(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
	if p.beforeWrite != nil {
		p.beforeWrite(idx)
	}
	ok, errs := make([]bool, len(idx)), make([]error, len(idx))
	lost := make([]bool, len(idx))
	err := p.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for j, i := range idx {
			applied := true
			if p.lose != nil {
				applied, lost[j] = p.lose(i)
			}
			if !applied {
				continue
			}
			// The condition: the block as read, at the version expected.
			raw, st := b.Get(p.key(i)), p.read[i]
			if raw == nil != !st.Found {
				continue
			}
			if raw != nil {
				var cur boltBlock
				if err := json.Unmarshal(raw, &cur); err != nil {
					return err
				}
				if cur.Seq != st.Stamp.Seq || cur.Inc != st.Stamp.Inc || cur.Version != p.ts[i].Version {
					continue
				}
			}
			t := p.ts[i]
			created, _ := json.Marshal(t.Created)
			out, _ := json.Marshal(boltBlock{Seq: sts[j].Seq, Inc: sts[j].Inc, Version: t.Version + 1, Created: created, Name: t.Name})
			if err := b.Put(p.key(i), out); err != nil {
				return err
			}
			ok[j] = true
		}
		return nil
	})
	for j := range idx {
		switch {
		case err != nil:
			errs[j] = err
		case lost[j]:
			ok[j], errs[j] = false, memindex.ErrLost
		}
	}
	return ok, errs
}

func openPuts(t *testing.T) (*bolt.DB, *index.Engine[*doc]) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "puts.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	return db, &index.Engine[*doc]{Agg: "Doc", P: boltPrims{memindex.New[*doc](0), db}}
}

func putMany(ctx context.Context, e *index.Engine[*doc], p *boltPuts, ts ...*doc) []error {
	p.ts, p.read = ts, make([]index.BlockState[*doc], len(ts))
	return index.PutMany(ctx, e, docDesc, "Put", ts, p)
}

func stored(t *testing.T, db *bolt.DB, id string) *boltBlock {
	if t != nil {
		t.Helper()
	}
	var out *boltBlock
	_ = db.View(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucket).Get(docDesc.Keys.Bytes(id)); raw != nil {
			out = &boltBlock{}
			return json.Unmarshal(raw, out)
		}
		return nil
	})
	return out
}

func wantErr(t *testing.T, err error, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(fmt.Sprint(err), text) {
		t.Errorf("got %v, want %v with %q", err, kind, text)
	}
}

// TestPutManyRules: per item, the version rule with VersionConflict's
// texts, the created entry a block keeps, a key twice in one batch
// applied in slice order, and the new version of a written item.
func TestPutManyRules(t *testing.T) {
	ctx := context.Background()
	db, e := openPuts(t)
	t0 := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &boltPuts{db: db}
	if errs := putMany(ctx, e, p, &doc{ID: "a", Name: "one", Created: t0}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	now := t0.Add(time.Hour)
	a := &doc{ID: "a", Name: "two", Created: now, Version: 1}
	b := &doc{ID: "b", Name: "new", Created: now}
	again := &doc{ID: "a", Name: "three", Created: now, Version: 1}
	missing := &doc{ID: "c", Created: now, Version: 3}
	exists := &doc{ID: "b", Created: now}
	errs := putMany(ctx, e, p, a, b, again, missing, exists)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("written items failed: %v %v", errs[0], errs[1])
	}
	if a.Version != 2 || b.Version != 1 || !a.Created.Equal(t0) || !b.Created.Equal(now) {
		t.Errorf("a v%d created %v, b v%d created %v", a.Version, a.Created, b.Version, b.Created)
	}
	wantErr(t, errs[2], runtime.ErrConflict, "(stored version 2, expected 1)")
	wantErr(t, errs[3], runtime.ErrConflict, "(no block, expected version 3)")
	wantErr(t, errs[4], runtime.ErrConflict, "(the block exists, at version 1)")
	if again.Version != 1 || missing.Version != 3 {
		t.Errorf("failed items' versions moved: %d %d", again.Version, missing.Version)
	}
	if got := stored(t, db, "a"); got.Name != "two" || got.Version != 2 {
		t.Errorf("a stored as %+v", got)
	}
	if stored(t, db, "c") != nil {
		t.Error("c written")
	}
}

// TestPutManyChanged: a block that changes between its read and its
// write is read and written again; one that keeps changing fails with
// ErrConflict after runtime.MaxAttempts, not written.
func TestPutManyChanged(t *testing.T) {
	ctx := context.Background()
	db, e := openPuts(t)
	p := &boltPuts{db: db}
	putMany(ctx, e, p, &doc{ID: "a", Name: "one"}, &doc{ID: "b", Name: "one"})
	touch := func(id string) {
		_ = db.Update(func(tx *bolt.Tx) error {
			var cur boltBlock
			k := docDesc.Keys.Bytes(id)
			_ = json.Unmarshal(tx.Bucket(bucket).Get(k), &cur)
			cur.Seq++ // a write of the block, at the same version
			out, _ := json.Marshal(cur)
			return tx.Bucket(bucket).Put(k, out)
		})
	}
	writes := 0
	p.beforeWrite = func([]int) {
		writes++
		if writes == 1 {
			touch("a") // once
		}
		touch("b") // every time
	}
	p.reads = 0
	a, b := &doc{ID: "a", Name: "two", Version: 1}, &doc{ID: "b", Name: "two", Version: 1}
	errs := putMany(ctx, e, p, a, b)
	if errs[0] != nil || a.Version != 2 || stored(t, db, "a").Name != "two" {
		t.Errorf("a: %v, v%d", errs[0], a.Version)
	}
	wantErr(t, errs[1], runtime.ErrConflict, "changed concurrently")
	if b.Version != 1 || stored(t, db, "b").Name != "one" {
		t.Errorf("b written: v%d %+v", b.Version, stored(t, db, "b"))
	}
	if p.reads != runtime.MaxAttempts+1 {
		t.Errorf("%d reads, want %d", p.reads, runtime.MaxAttempts+1)
	}
}

// TestPutManyOutcomes: a write whose reply is lost is read back, written
// when its block carries its stamp, runtime.ErrUnknownOutcome otherwise;
// a batch whose context ends before its writes are sent writes nothing
// and says so (runtime.NotSent).
func TestPutManyOutcomes(t *testing.T) {
	ctx := context.Background()
	db, e := openPuts(t)
	p := &boltPuts{db: db, lose: func(i int) (bool, bool) { return i == 0, true }}
	landed, lost := &doc{ID: "a", Name: "one"}, &doc{ID: "b", Name: "one"}
	errs := putMany(ctx, e, p, landed, lost)
	if errs[0] != nil || landed.Version != 1 || stored(t, db, "a") == nil {
		t.Errorf("landed: %v", errs[0])
	}
	wantErr(t, errs[1], runtime.ErrUnknownOutcome, "outcome unknown")
	if lost.Version != 0 {
		t.Errorf("lost item's version moved to %d", lost.Version)
	}

	cctx, cancel := context.WithCancel(ctx)
	p = &boltPuts{db: db}
	p.beforeWrite = func([]int) { t.Error("a write sent after the context ended") }
	cancel()
	c := &doc{ID: "c", Name: "one"}
	errs = putMany(cctx, e, p, c)
	wantErr(t, errs[0], context.Canceled, "nothing written")
	if stored(t, db, "c") != nil || c.Version != 0 {
		t.Error("c written")
	}
}

// boltDeletes is index.Deletes over the bucket.
type boltDeletes struct {
	p       *boltPuts // its reads
	singles []int
	// lose reports that item i's delete reply is lost (applied first
	// when applied).
	lose        func(i int) (applied, lost bool)
	beforeWrite func()
}

func (d *boltDeletes) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*doc], []error) {
	return d.p.ReadStates(ctx, idx)
}

func (d *boltDeletes) DeleteBlocks(ctx context.Context, idx []int) ([]bool, []error) {
	if d.beforeWrite != nil {
		d.beforeWrite()
	}
	ok, errs := make([]bool, len(idx)), make([]error, len(idx))
	err := d.p.db.Update(func(tx *bolt.Tx) error {
		for j, i := range idx {
			applied := true
			if d.lose != nil {
				var lost bool
				if applied, lost = d.lose(i); lost {
					errs[j] = memindex.ErrLost
				}
			}
			var cur boltBlock
			raw := tx.Bucket(bucket).Get(d.p.key(i))
			if !applied || raw == nil || json.Unmarshal(raw, &cur) != nil || (index.Stamp{Seq: cur.Seq, Inc: cur.Inc}) != d.p.read[i].Stamp {
				continue
			}
			ok[j] = errs[j] == nil
			if err := tx.Bucket(bucket).Delete(d.p.key(i)); err != nil {
				return err
			}
		}
		return nil
	})
	for j := range errs {
		if err != nil {
			errs[j] = err
		}
	}
	return ok, errs
}

func (d *boltDeletes) Cleanup(context.Context, []int) [][]error { return nil }

func (d *boltDeletes) Delete(ctx context.Context, i int) error {
	d.singles = append(d.singles, i)
	id := d.p.ts[i].ID
	if stored(nil, d.p.db, id) == nil {
		return runtime.Fail("Delete", "Doc", id, runtime.ErrNotFound, nil)
	}
	return d.p.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Delete(docDesc.Keys.Bytes(id)) })
}

func deleteMany(ctx context.Context, e *index.Engine[*doc], d *boltDeletes, ids ...string) []error {
	d.p.ts, d.p.read = make([]*doc, len(ids)), make([]index.BlockState[*doc], len(ids))
	names, blocks := make([]any, len(ids)), make([][]byte, len(ids))
	for i, id := range ids {
		d.p.ts[i], names[i], blocks[i] = &doc{ID: id}, id, docDesc.Keys.Bytes(id)
	}
	return index.DeleteMany(ctx, e, "Delete", names, blocks, d)
}

// TestDeleteManyRules: a block not found is ErrNotFound, a key given
// again is deleted again by the single Delete (ErrNotFound), a block that
// changed since it was read is deleted by the single Delete, a lost reply
// is read back (deleted, or ErrUnknownOutcome), and a context done before
// the deletes are sent deletes nothing (NotSent).
func TestDeleteManyRules(t *testing.T) {
	ctx := context.Background()
	db, e := openPuts(t)
	p := &boltPuts{db: db}
	putMany(ctx, e, p, &doc{ID: "a"}, &doc{ID: "b"}, &doc{ID: "c"}, &doc{ID: "d"}, &doc{ID: "f"})
	d := &boltDeletes{p: &boltPuts{db: db}}
	d.beforeWrite = func() {
		d.beforeWrite = nil
		putMany(ctx, e, &boltPuts{db: db}, &doc{ID: "b", Name: "changed", Version: 1})
	}
	d.lose = func(i int) (bool, bool) { return i != 5, i >= 4 } // d lost but landed, f lost
	errs := deleteMany(ctx, e, d, "a", "b", "x", "a", "d", "f")
	if errs[0] != nil || errs[1] != nil || errs[4] != nil {
		t.Errorf("deleted items failed: %v %v %v", errs[0], errs[1], errs[4])
	}
	wantErr(t, errs[2], runtime.ErrNotFound, "x")
	wantErr(t, errs[3], runtime.ErrNotFound, "a")
	wantErr(t, errs[5], runtime.ErrUnknownOutcome, "outcome unknown")
	if fmt.Sprint(d.singles) != "[1 3]" {
		t.Errorf("single Deletes of %v, want [1 3] (b changed, a again)", d.singles)
	}
	for id, want := range map[string]bool{"a": false, "b": false, "c": true, "d": false, "f": true} {
		if got := stored(t, db, id) != nil; got != want {
			t.Errorf("%s stored: %v, want %v", id, got, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	d = &boltDeletes{p: &boltPuts{db: db}, beforeWrite: func() { t.Error("a delete sent after the context ended") }}
	errs = deleteMany(cctx, e, d, "c")
	wantErr(t, errs[0], context.Canceled, "nothing written")
	if stored(t, db, "c") == nil {
		t.Error("c deleted")
	}
}
