package boltstore

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// ragg is an ETF aggregate with a partition of structs, for the whole-block
// reader and the rewriting Put.
type ragg struct {
	ID      string
	Name    string
	Items   []ritem
	Tags    []string
	Version int64
}

type ritem struct {
	A string   `bson:"a"`
	B []string `bson:"b,omitempty"`
	N int      `bson:"n"`
}

func raggDesc() *runtime.Desc[ragg, string] {
	return (&runtime.Desc[ragg, string]{
		Aggregate: "Ragg",
		Keys:      runtime.StringKeys[string](),
		ID:        func(a *ragg) *string { return &a.ID },
		Fields: []*runtime.Field[ragg]{
			runtime.NewField("name", "Name", func(a *ragg) *string { return &a.Name }),
			runtime.NewPartition("items", "Items", func(a *ragg) *[]ritem { return &a.Items }),
			runtime.NewPartition("tags", "Tags", func(a *ragg) *[]string { return &a.Tags }),
		},
		Version: runtime.NewVersion("version", "Version", func(a *ragg) *int64 { return &a.Version }),
	}).Init()
}

func openRagg(t *testing.T) (*bbolt.DB, runtime.Repo[ragg, string]) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d := raggDesc()
	return db, runtime.NewRepo(d, Open(db, d))
}

func items(n int) []ritem {
	out := make([]ritem, n)
	for i := range out {
		out[i] = ritem{A: strings.Repeat("a", i), N: i}
		if i%2 == 1 {
			out[i].B = []string{"x", "y"}
		}
	}
	return out
}

func dumpBucket(t *testing.T, db *bbolt.DB, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A Put leaves exactly the pairs a Create of the same aggregate writes,
// whatever the block held before: entries it no longer has are gone,
// changed ones are rewritten, and Get reads it back.
func TestPutRewritesToTheCreatedBytes(t *testing.T) {
	for _, tc := range []struct{ before, after ragg }{
		{ragg{Name: "a", Items: items(5), Tags: []string{"t"}}, ragg{Name: "b", Items: items(2), Tags: nil}},
		{ragg{Name: "a", Items: items(2)}, ragg{Name: "a", Items: items(7), Tags: []string{"u", "v"}}},
		{ragg{Name: "a", Items: items(3), Tags: []string{"t"}}, ragg{Name: "a", Items: items(3), Tags: []string{"t"}}},
		{ragg{Name: "a", Items: items(3)}, ragg{Name: "", Items: []ritem{}, Tags: []string{}}},
	} {
		dbPut, put := openRagg(t)
		before := tc.before
		before.ID = "k"
		if err := put.Create(ctx, &before); err != nil {
			t.Fatal(err)
		}
		after := tc.after
		after.ID, after.Version = "k", before.Version
		if err := put.Put(ctx, &after); err != nil {
			t.Fatal(err)
		}
		dbNew, fresh := openRagg(t)
		want := tc.after
		want.ID = "k"
		if err := fresh.Create(ctx, &want); err != nil {
			t.Fatal(err)
		}
		// The versions differ (2 against 1): compare them apart.
		got, exp := dumpBucket(t, dbPut, "Ragg"), dumpBucket(t, dbNew, "Ragg")
		vkey := string(runtime.AppendString(BlockPrefix(runtime.AppendString(nil, "k")), "version"))
		if got[vkey] != string(encodeInt(2)) || exp[vkey] != string(encodeInt(1)) {
			t.Errorf("versions %x and %x", got[vkey], exp[vkey])
		}
		delete(got, vkey)
		delete(exp, vkey)
		if !maps.Equal(got, exp) {
			t.Errorf("Put of %+v over %+v left\n%q\nCreate wrote\n%q", tc.after, tc.before, got, exp)
		}
		back, err := put.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		want.Version = 2
		if want.Items == nil {
			want.Items = []ritem{}
		}
		if want.Tags == nil {
			want.Tags = []string{}
		}
		if !reflect.DeepEqual(*back, want) {
			t.Errorf("Get after Put = %+v, want %+v", *back, want)
		}
	}
}

// A bad element value fails Get with an error naming the element, though
// the elements are decoded together.
func TestReadNamesTheBadElement(t *testing.T) {
	db, repo := openRagg(t)
	a := ragg{ID: "k", Name: "n", Items: items(4), Tags: []string{"p", "q"}}
	if err := repo.Create(ctx, &a); err != nil {
		t.Fatal(err)
	}
	prefix := BlockPrefix(runtime.AppendString(nil, "k"))
	elem := runtime.AppendInt(runtime.AppendString(bytes.Clone(prefix), "items"), 2)
	err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("Ragg")).Put(elem, encodeInt(7)) // an int64 where a document belongs
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = repo.Get(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "items[2]") {
		t.Fatalf("Get of a block with a bad element: %v", err)
	}
	if errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a bad block is a not-found: %v", err)
	}
}

// bad is an aggregate whose elements cannot be encoded (a func field).
type bad struct {
	ID    string
	Elems []badElem
}

type badElem struct {
	F func() `bson:"f"`
}

// A value the codec refuses fails Create and Put with an error naming the
// entry, and writes nothing.
func TestUnencodableValueWritesNothing(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "b.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := (&runtime.Desc[bad, string]{
		Aggregate: "Bad",
		Keys:      runtime.StringKeys[string](),
		ID:        func(a *bad) *string { return &a.ID },
		Fields: []*runtime.Field[bad]{
			runtime.NewPartition("elems", "Elems", func(a *bad) *[]badElem { return &a.Elems }),
		},
	}).Init()
	repo := runtime.NewRepo(d, Open(db, d))
	if err := repo.Create(ctx, &bad{ID: "ok", Elems: []badElem{}}); err != nil {
		t.Fatal(err)
	}
	before := dumpBucket(t, db, "Bad")
	for _, op := range []func(*bad) error{
		func(a *bad) error { a.ID = "new"; return repo.Create(ctx, a) },
		func(a *bad) error { return repo.Put(ctx, a) },
	} {
		a := &bad{ID: "ok", Elems: []badElem{{}, {}}}
		err := op(a)
		if err == nil || !strings.Contains(err.Error(), "elems[0]") {
			t.Errorf("writing an unencodable element: %v", err)
		}
	}
	if after := dumpBucket(t, db, "Bad"); !maps.Equal(before, after) {
		t.Errorf("a failed write changed the bucket:\n%q\n%q", before, after)
	}
}
