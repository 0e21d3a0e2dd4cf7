package boltstore

import (
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

func testCollection(t *testing.T) Collection[string] {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Collection[string]{DB: db, Name: "Thing", Aggregate: "Thing", Keys: runtime.KeyCodec[string]{
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

func readThing(b *Block, _ string) (*thing, error) {
	var th thing
	err := b.Scan(func(e Entry) error {
		switch e.Key {
		case "name":
			return e.Decode(&th.name)
		case "tags":
			return DecodeElems(e, &th.tags)
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

func writeThing(t *testing.T, c Collection[string], id string, th thing) {
	t.Helper()
	err := c.Update(ctx, "Create", id, func(b *Block) error {
		b.PutMarker()
		b.Put("name", th.name)
		PutElems(b, "tags", th.tags)
		b.Put("version", th.version)
		return b.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
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
	got, err := Get(ctx, c, "a", readThing)
	if err != nil || got.name != "A" || !slices.Equal(got.tags, []string{"x", "y", "z"}) || got.version != 3 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	got, err = Get(ctx, c, "b", readThing)
	if err != nil || got.tags == nil || len(got.tags) != 0 {
		t.Fatalf("a block with no elements reads %#v, want an empty slice: %v", got, err)
	}
	if _, err := Get(ctx, c, "nope", readThing); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a missing block: %v", err)
	}
}

// TestVersion checks CheckVersion and BumpVersion: a missing block has
// version 0.
func TestVersion(t *testing.T) {
	c := testCollection(t)
	check := func(id string, want int64) error {
		return c.View(ctx, "Put", id, func(b *Block) error { return b.CheckVersion("version", want) })
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
	err := c.Update(ctx, "Set", "a", func(b *Block) error {
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
	err := c.Update(ctx, "Set", "a", func(b *Block) error {
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
	err = c.Update(ctx, "SetAt", "a", func(b *Block) error {
		b.SetAt("tags", 1, "y")
		return b.Err()
	})
	if !errors.Is(err, runtime.ErrNotFound) || !errors.As(err, &re) || re.Detail != "tags[1]" {
		t.Fatalf("SetAt out of range: %v", err)
	}
	if w := Written().Sub(before); w != (WriteStats{}) {
		t.Fatalf("failed updates counted %+v", w)
	}
	got, err := Get(ctx, c, "a", readThing)
	if err != nil || got.name != "A" || len(got.tags) != 1 {
		t.Fatalf("after failed updates: %+v, %v", got, err)
	}
}

// TestCorruptBlocks checks that keys and values the mapping does not make
// fail reads with an error instead of a panic or a wrong aggregate.
func TestCorruptBlocks(t *testing.T) {
	c := testCollection(t)
	writeThing(t, c, "a", thing{tags: []string{"x", "y", "z"}})
	prefix := BlockPrefix(runtime.AppendString(nil, "a"))
	corrupt := func(fn func(b *bbolt.Bucket) error) {
		t.Helper()
		if err := c.DB.Update(func(tx *bbolt.Tx) error { return fn(tx.Bucket([]byte("Thing"))) }); err != nil {
			t.Fatal(err)
		}
	}
	// A gap in the elements.
	corrupt(func(b *bbolt.Bucket) error {
		return b.Delete(runtime.AppendInt(runtime.AppendString(append([]byte(nil), prefix...), "tags"), 1))
	})
	if _, err := Get(ctx, c, "a", readThing); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Get of a block with an element missing: %v", err)
	}
	if _, err := Elements[string](ctx, c, "ListTags", "a", "tags", runtime.PageRequest{}); err == nil {
		t.Fatal("Elements of a block with an element missing did not fail")
	}
	// An entry key that is not a field or element key.
	corrupt(func(b *bbolt.Bucket) error { return b.Put(append(append([]byte(nil), prefix...), 0x7f), []byte{}) })
	if _, err := Get(ctx, c, "a", readThing); err == nil {
		t.Fatal("Get of a block with a bad entry key did not fail")
	}
	if _, err := List(ctx, c, "Thing.List", runtime.PageRequest{}, readThing); err == nil || !strings.Contains(err.Error(), "Thing a: List") {
		t.Fatalf("List over a corrupt block: %v", err)
	}
	// A block without its marker, found by List.
	corrupt(func(b *bbolt.Bucket) error {
		if err := b.Delete(prefix); err != nil {
			return err
		}
		return b.Put(runtime.AppendString(BlockPrefix(runtime.AppendString(nil, "b")), "name"), encodeInt(1))
	})
	if _, err := List(ctx, c, "Thing.List", runtime.PageRequest{}, readThing); err == nil || !strings.Contains(err.Error(), "no block marker") {
		t.Fatalf("List over a block without marker: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	c := testCollection(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := c.Update(cancelled, "Create", "a", func(b *Block) error {
		t.Fatal("the transaction ran")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a cancelled context: %v", err)
	}
	if _, err := List(cancelled, c, "Thing.List", runtime.PageRequest{}, readThing); !errors.Is(err, context.Canceled) {
		t.Fatalf("List with a cancelled context: %v", err)
	}
}
