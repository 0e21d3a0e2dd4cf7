package index_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

// TestLostEntryPutUndone: a write whose put of a new non-unique entry
// has a lost reply (applied, or not) fails, and its undo removes the
// entry: the block does not hold the value, and no entry of it is left
// for Repair (Redis Cluster: an entry applied on the master that its
// replicas did not acknowledge).
func TestLostEntryPutUndone(t *testing.T) {
	f := newFixture(30 * time.Second)
	f.setup(t)
	green := append(key("green"), key("d1")...)
	f.s.Hook = func(n int, call string) memindex.Fault {
		if call == "PutItem" {
			return memindex.Lost
		}
		return memindex.None
	}
	err := f.change(context.Background(), "d1", func(d *Doc) { d.Tags = append(d.Tags, "green") })
	f.s.Hook = nil
	if !errors.Is(err, memindex.ErrLost) {
		t.Fatalf("Change whose entry put lost its reply: %v, want the lost reply's error", err)
	}
	for _, it := range f.s.Items(1) {
		if bytes.Equal(it.Key, green) {
			t.Fatalf("the entry of the failed write is left: %+v", it)
		}
	}
	b, _, err := f.read(context.Background(), "d1")
	if err != nil || len(b.Value.Tags) != 2 {
		t.Fatalf("d1 after the failed Change: %+v, %v", b.Value, err)
	}
}

// TestLostEntryPutOverHeldEntry: a Create of a key in use whose put of a
// non-unique entry has a lost reply, after replacing the entry the
// existing block holds (the same key: the value and the block), fails,
// and its undo leaves that entry: the block holds the value, so removing
// the entry would hide it from the lookup until Repair.
func TestLostEntryPutOverHeldEntry(t *testing.T) {
	f := newFixture(30 * time.Second)
	f.setup(t)
	red := append(key("red"), key("d1")...)
	puts := 0
	f.s.Hook = func(n int, call string) memindex.Fault {
		if call == "PutItem" {
			// The first put claims the unique code c77, the second puts the
			// entry of red.
			if puts++; puts == 2 {
				return memindex.Lost
			}
		}
		return memindex.None
	}
	err := f.create(context.Background(), Doc{ID: "d1", Code: "c77", Tags: []string{"red"}})
	f.s.Hook = nil
	if err == nil {
		t.Fatal("Create of a key in use whose entry put lost its reply succeeded")
	}
	if puts < 2 {
		t.Fatalf("the Create made %d puts, want the claim and the entry", puts)
	}
	held := false
	for _, it := range f.s.Items(1) {
		held = held || bytes.Equal(it.Key, red)
	}
	if !held {
		t.Fatalf("the entry d1 holds (red) is gone after the failed Create: %q", keysOf(f.s.Items(1)))
	}
	for _, it := range f.s.Items(0) {
		if bytes.Equal(it.Key, key("c77")) {
			t.Fatalf("the claim of the failed Create is left: %+v", it)
		}
	}
}

func keysOf(items []index.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, string(it.Key))
	}
	return out
}
