package index_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

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
