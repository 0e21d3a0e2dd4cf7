package boltstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

// ckey is a scoped counted key: number N of scope P.
type ckey struct{ P, N int64 }

func scopedCollection(t *testing.T) collection[ckey] {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "s.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return collection[ckey]{DB: db, Name: "C", Aggregate: "C",
		Keys: runtime.KeyCodec[ckey]{
			Append: func(b []byte, k ckey) []byte { return runtime.AppendInt(runtime.AppendInt(b, k.P), k.N) },
			Read: func(r *runtime.KeyReader) (ckey, error) {
				p, err := r.Int()
				if err != nil {
					return ckey{}, err
				}
				n, err := r.Int()
				return ckey{p, n}, err
			},
		},
		Counter: &counter[ckey]{
			Split: func(k ckey) ([]byte, int64) { return runtime.AppendInt(nil, k.P), k.N },
			With:  func(k ckey, n int64) ckey { k.N = n; return k },
		},
	}
}

func createC(t *testing.T, c collection[ckey], id ckey) (ckey, error) {
	t.Helper()
	return c.UpdateAlloc(ctx, "Create", id, func(b *block) error {
		b.PutMarker()
		return b.Err()
	})
}

// cagg is an aggregate of the scoped collection: its key alone.
type cagg struct{ K ckey }

// scopeRepo is the repository of the scoped collection, for its listings:
// the adapter's ReadScope behind runtime.Repo, as generated code calls it.
func scopeRepo(c collection[ckey]) runtime.Repo[cagg, ckey] {
	d := (&runtime.Desc[cagg, ckey]{
		Aggregate: c.Aggregate, Collection: c.Name, Keys: c.Keys,
		ID:      func(a *cagg) *ckey { return &a.K },
		Counter: &runtime.Counter[ckey]{Split: c.Counter.Split, With: c.Counter.With},
	}).Init()
	return runtime.NewRepo(d, Open(c.DB, d))
}

func dumpDB(t *testing.T, db *bbolt.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				out[string(name)+"/"+string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDump(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%s changed the stored data: %d keys before, %d after", what, len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed key %q", what, k)
		}
	}
}

// TestCounterWrapIsOverflow: after an explicit number math.MaxInt64 the
// next allocation fails with runtime.ErrOverflow (instead of wrapping to
// math.MinInt64 and handing out numbers again) and writes nothing.
func TestCounterWrapIsOverflow(t *testing.T) {
	c := scopedCollection(t)
	if _, err := createC(t, c, ckey{1, 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := createC(t, c, ckey{1, math.MaxInt64}); err != nil {
		t.Fatal(err)
	}
	before := dumpDB(t, c.DB)
	id, err := createC(t, c, ckey{1, 0})
	if !errors.Is(err, runtime.ErrOverflow) {
		t.Fatalf("allocation past MaxInt64: %v, %v", id, err)
	}
	sameDump(t, "the failed allocation", before, dumpDB(t, c.DB))
	// Another scope is not affected.
	if id, err := createC(t, c, ckey{2, 0}); err != nil || id.N != 1 {
		t.Fatalf("other scope: %v, %v", id, err)
	}
}

// TestListScopeForgedCursors: validly signed cursors at huge or negative
// numbers return ErrBadCursor or a bounded empty page, quickly, and never
// panic or loop.
func TestListScopeForgedCursors(t *testing.T) {
	c := scopedCollection(t)
	for range 3 {
		if _, err := createC(t, c, ckey{7, 0}); err != nil {
			t.Fatal(err)
		}
	}
	query := "C.ListByP:" + string(runtime.AppendInt(nil, 7))
	// The query is right: a cursor at 1 resumes after number 1.
	if page, err := scopeRepo(c).ListScope(ctx, "ListByP", ckey{P: 7}, runtime.PageRequest{Cursor: runtime.PositionCursor(query, 1)}); err != nil || len(page.Items) != 2 {
		t.Fatalf("cursor at 1: %v, %v", page, err)
	}
	for _, pos := range []int64{math.MaxInt64, math.MaxInt64 - 5, runtime.MaxPosition, math.MaxInt32, 0, -1, math.MinInt64} {
		start := time.Now()
		cur := runtime.PositionCursor(query, pos)
		page, err := scopeRepo(c).ListScope(ctx, "ListByP", ckey{P: 7}, runtime.PageRequest{Cursor: cur})
		if err != nil && !errors.Is(err, runtime.ErrBadCursor) {
			t.Fatalf("cursor at %d: %v", pos, err)
		}
		if err == nil && (len(page.Items) != 0 || page.Next != "") {
			t.Fatalf("cursor at %d: page %v", pos, page)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("cursor at %d took %v", pos, d)
		}
	}
}

// TestListScopeGapCost: a page after a gap of 20,000 deleted numbers walks
// only the blocks that exist (it reads a handful of keys, not 20,000), and
// a cancelled context stops a listing.
func TestListScopeGapCost(t *testing.T) {
	c := scopedCollection(t)
	if _, err := createC(t, c, ckey{1, 1}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{20_002, 20_003, 20_004} {
		if _, err := createC(t, c, ckey{1, n}); err != nil {
			t.Fatal(err)
		}
	}
	// Neighbouring scopes must not leak into the page.
	for _, k := range []ckey{{0, 5}, {2, 1}} {
		if _, err := createC(t, c, k); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	req := runtime.PageRequest{Limit: 2}
	for {
		page, err := scopeRepo(c).ListScope(ctx, "ListByP", ckey{P: 1}, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range page.Items {
			got = append(got, k.K.N)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if want := []int64{1, 20_002, 20_003, 20_004}; len(got) != len(want) || got[0] != 1 || got[3] != 20_004 {
		t.Fatalf("listed %v, want %v", got, want)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := scopeRepo(c).ListScope(cancelled, "ListByP", ckey{P: 1}, runtime.PageRequest{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("ListScope with a cancelled context: %v", err)
	}
}

// TestInvalidUTF8Lookup: an index value or block key with invalid UTF-8 is
// runtime.ErrInvalidValue and the transaction writes nothing.
func TestInvalidUTF8Lookup(t *testing.T) {
	c := testCollection(t)
	l := indexTable[thing]{Name: "Thing.name", Unique: true, Parts: 1, Keys: func(th *thing) [][]byte {
		return [][]byte{runtime.AppendString(nil, th.name)}
	}}
	write := func(id, name string) error {
		return c.Update(ctx, "Create", id, func(b *block) error {
			b.PutMarker()
			b.Put("name", name)
			reindexTable(b, l, nil, &thing{name: name})
			return b.Err()
		})
	}
	if err := write("a", "Wittekind"); err != nil {
		t.Fatal(err)
	}
	before := dumpDB(t, c.DB)
	for _, w := range [][2]string{{"b", "Witte\xffkind"}, {"b\xff", "Other"}} {
		if err := write(w[0], w[1]); !errors.Is(err, runtime.ErrInvalidValue) {
			t.Fatalf("write %q: %v", w, err)
		}
		sameDump(t, "a write with invalid UTF-8", before, dumpDB(t, c.DB))
	}
}

// TestTimeRule (item 9): the documented rule for time.Time values (see
// RELIABILITY.md): they go through BSON datetime, so they come back
// truncated to milliseconds and in UTC, on every store.
func TestTimeRule(t *testing.T) {
	zone := time.FixedZone("+0530", 5*3600+1800)
	in := time.Date(2026, 11, 23, 23, 59, 59, 123456789, zone)
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	var out time.Time
	if err := Decode(b, &out); err != nil {
		t.Fatal(err)
	}
	if want := in.Truncate(time.Millisecond).UTC(); !out.Equal(want) || out.Location() != time.UTC || out.Nanosecond() != 123_000_000 {
		t.Fatalf("time %v came back as %v, want %v", in, out, want)
	}
}

// TestCounterRace: 16 goroutines allocate 50 numbers each in one scope
// while others list it: every number is handed out once, 1..800, and every
// listing is in number order.
func TestCounterRace(t *testing.T) {
	c := scopedCollection(t)
	const writers, each = 16, 50
	var wg sync.WaitGroup
	ids := make(chan int64, writers*each)
	errs := make(chan error, writers*each+writers)
	for range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range each {
				id, err := c.UpdateAlloc(ctx, "Create", ckey{P: 3}, func(b *block) error {
					b.PutMarker()
					return b.Err()
				})
				if err != nil {
					errs <- err
					return
				}
				ids <- id.N
			}
		}()
		go func() {
			defer wg.Done()
			page, err := scopeRepo(c).ListScope(ctx, "ListByP", ckey{P: 3}, runtime.PageRequest{Limit: 1000})
			if err != nil {
				errs <- err
				return
			}
			for i := 1; i < len(page.Items); i++ {
				if page.Items[i].K.N <= page.Items[i-1].K.N {
					errs <- fmt.Errorf("listing out of order: %v", page.Items)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for n := range ids {
		if seen[n] || n < 1 || n > writers*each {
			t.Fatalf("number %d handed out twice or out of range", n)
		}
		seen[n] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d numbers, want %d", len(seen), writers*each)
	}
}
