package boltstore

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

var ctx = context.Background()

func testCollection(t *testing.T) collection[string] {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return collection[string]{DB: db, Name: "Thing", Aggregate: "Thing", Keys: runtime.KeyCodec[string]{
		Append: runtime.AppendString,
		Read:   (*runtime.KeyReader).String,
	}}
}

// thing is a test aggregate: an ETF block with a name and partitioned
// tags, and a version.
type thing struct {
	name    string
	tags    []string
	version int64
}

func readThing(b *block, _ string) (*thing, error) {
	var th thing
	err := b.Scan(func(e blockEntry) error {
		switch e.Key {
		case "name":
			return e.Decode(&th.name)
		case "tags":
			if !e.Elem {
				return nil // the element count
			}
			var tag string
			if err := Decode(e.Value, &tag); err != nil {
				return err
			}
			th.tags = append(th.tags, tag)
			return nil
		case "version":
			return e.Decode(&th.version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &th, nil
}

func writeThing(t *testing.T, c collection[string], id string, th thing) {
	t.Helper()
	err := c.Update(ctx, "Create", id, func(b *block) error {
		b.PutMarker()
		b.Put("name", th.name)
		for _, tag := range th.tags {
			b.Append("tags", tag)
		}
		b.Put("version", th.version)
		return b.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// getThing reads block id in one read transaction.
func getThing(ctx context.Context, c collection[string], id string) (*thing, error) {
	var th *thing
	err := c.View(ctx, "Get", id, func(b *block) error {
		var err error
		th, err = readThing(b, id)
		return err
	})
	return th, err
}

// listThings reads every block in one read transaction, as Store's List
// does.
func listThings(ctx context.Context, c collection[string]) ([]*thing, error) {
	var out []*thing
	err := c.view(ctx, "List", nil, func(b *bbolt.Bucket) error {
		var err error
		out, _, _, err = readBlocks(c, b, "List", nil, 100, false, readThing)
		return err
	})
	return out, err
}

func TestEncodeDecode(t *testing.T) {
	type doc struct {
		A string `bson:"a"`
		B []int  `bson:"b,omitempty"`
	}
	for _, v := range []any{"text", int64(-3), 2.5, true, []string{"x", "y"}, doc{A: "z"}} {
		b, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		switch want := v.(type) {
		case doc:
			var got doc
			if err := Decode(b, &got); err != nil || got.A != want.A {
				t.Fatalf("%v decoded as %v, %v", v, got, err)
			}
		case []string:
			var got []string
			if err := Decode(b, &got); err != nil || !slices.Equal(got, want) {
				t.Fatalf("%v decoded as %v, %v", v, got, err)
			}
		default:
			var got any
			if err := Decode(b, &got); err != nil || got != v {
				t.Fatalf("%v decoded as %v, %v", v, got, err)
			}
		}
	}
	// Counts and versions are BSON int64s like any other value.
	n, err := Encode(int64(42))
	if err != nil || string(n) != string(encodeInt(42)) {
		t.Fatalf("encodeInt(42) = %x, Encode = %x", encodeInt(42), n)
	}
	if err := Decode(nil, new(string)); err == nil {
		t.Fatal("Decode of an empty value did not fail")
	}
}

func TestReadBack(t *testing.T) {
	c := testCollection(t)
	writeThing(t, c, "a", thing{name: "A", tags: []string{"x", "y", "z"}, version: 3})
	writeThing(t, c, "b", thing{name: "B"})
	got, err := getThing(ctx, c, "a")
	if err != nil || got.name != "A" || !slices.Equal(got.tags, []string{"x", "y", "z"}) || got.version != 3 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	got, err = getThing(ctx, c, "b")
	if err != nil || got.name != "B" || len(got.tags) != 0 {
		t.Fatalf("a block with no elements reads %#v: %v", got, err)
	}
	if _, err := getThing(ctx, c, "nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a missing block: %v", err)
	}
}

// TestVersion checks CheckVersion and BumpVersion: a missing block has
// version 0.
func TestVersion(t *testing.T) {
	c := testCollection(t)
	check := func(id string, want int64) error {
		return c.View(ctx, "Put", id, func(b *block) error { return b.CheckVersion("version", want) })
	}
	if err := check("a", 0); err != nil {
		t.Fatalf("version 0 of a missing block: %v", err)
	}
	if err := check("a", 1); !errors.Is(err, runtime.ErrConflict) || !strings.Contains(err.Error(), "no block") {
		t.Fatalf("version 1 of a missing block: %v", err)
	}
	writeThing(t, c, "a", thing{version: 1})
	if err := check("a", 0); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("version 0 of an existing block: %v", err)
	}
	if err := check("a", 1); err != nil {
		t.Fatal(err)
	}
	err := c.Update(ctx, "Set", "a", func(b *block) error {
		b.BumpVersion("version")
		return b.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := check("a", 1); !errors.Is(err, runtime.ErrConflict) || !strings.Contains(err.Error(), "(stored version 2, expected 1)") {
		t.Fatalf("stale version: %v", err)
	}
}

// TestFailedUpdateWritesNothing checks that Update does not commit after a
// write error, even when fn ignores it and returns nil, and that only
// committed writes are counted.
func TestFailedUpdateWritesNothing(t *testing.T) {
	c := testCollection(t)
	writeThing(t, c, "a", thing{name: "A", tags: []string{"x"}})
	before := Written()
	err := c.Update(ctx, "Set", "a", func(b *block) error {
		b.Put("name", "changed")
		b.Put("bad", make(chan int)) // BSON cannot encode a channel
		b.Put("name", "changed again")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "encoding entry bad") {
		t.Fatalf("Update with an unencodable value: %v", err)
	}
	var re *runtime.Error
	if !errors.As(err, &re) || re.Op != "Set" || re.ID != "a" {
		t.Fatalf("error %v does not name the operation and block", err)
	}
	err = c.Update(ctx, "SetAt", "a", func(b *block) error {
		b.SetAt("tags", 1, "y")
		return b.Err()
	})
	if !errors.Is(err, runtime.ErrNotFound) || !errors.As(err, &re) || re.Detail != "tags[1]" {
		t.Fatalf("SetAt out of range: %v", err)
	}
	if w := Written().Sub(before); w != (WriteStats{}) {
		t.Fatalf("failed updates counted %+v", w)
	}
	got, err := getThing(ctx, c, "a")
	if err != nil || got.name != "A" || len(got.tags) != 1 {
		t.Fatalf("after failed updates: %+v, %v", got, err)
	}
}

// TestCorruptBlocks checks that keys and values the mapping does not make
// fail the Store's reads with an error instead of a panic or a wrong
// aggregate.
func TestCorruptBlocks(t *testing.T) {
	db, repo := openRagg(t)
	if err := repo.Create(ctx, &ragg{ID: "a", Items: items(3)}); err != nil {
		t.Fatal(err)
	}
	prefix := BlockPrefix(runtime.AppendString(nil, "a"))
	corrupt := func(fn func(b *bbolt.Bucket) error) {
		t.Helper()
		if err := db.Update(func(tx *bbolt.Tx) error { return fn(tx.Bucket([]byte("Ragg"))) }); err != nil {
			t.Fatal(err)
		}
	}
	// A gap in the elements.
	corrupt(func(b *bbolt.Bucket) error {
		return b.Delete(runtime.AppendInt(runtime.AppendString(bytes.Clone(prefix), "items"), 1))
	})
	if _, err := repo.Get(ctx, "a"); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Get of a block with an element missing: %v", err)
	}
	f := repo.D.Field("items")
	if _, err := runtime.ListElems[ritem](ctx, repo, "ListItems", "a", f, runtime.PageRequest{}); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("ListItems of a block with an element missing: %v", err)
	}
	// An entry key that is not a field or element key.
	corrupt(func(b *bbolt.Bucket) error { return b.Put(append(bytes.Clone(prefix), 0x7f), []byte{}) })
	if _, err := repo.Get(ctx, "a"); err == nil {
		t.Fatal("Get of a block with a bad entry key did not fail")
	}
	if _, err := repo.List(ctx, runtime.PageRequest{}); err == nil || !strings.Contains(err.Error(), "Ragg a: List") {
		t.Fatalf("List over a corrupt block: %v", err)
	}
	// A block without its marker, found by List.
	corrupt(func(b *bbolt.Bucket) error {
		if err := b.Delete(prefix); err != nil {
			return err
		}
		return b.Put(runtime.AppendString(BlockPrefix(runtime.AppendString(nil, "b")), "name"), encodeInt(1))
	})
	if _, err := repo.List(ctx, runtime.PageRequest{}); err == nil || !strings.Contains(err.Error(), "no block marker") {
		t.Fatalf("List over a block without marker: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	c := testCollection(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := c.Update(cancelled, "Create", "a", func(b *block) error {
		t.Fatal("the transaction ran")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a cancelled context: %v", err)
	}
	if _, err := listThings(cancelled, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("List with a cancelled context: %v", err)
	}
}
