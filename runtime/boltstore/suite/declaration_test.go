package boltstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/boltstore/layout"
)

// TestDeclaredNames checks the names the declaration shows against the
// adapter's.
func TestDeclaredNames(t *testing.T) {
	if got, want := layout.IndexName("Game", "name"), boltstore.IndexBucket("Game", "name"); got != want {
		t.Errorf("the declaration names the index bucket %q, the adapter %q", got, want)
	}
	if layout.CountersBucket != boltstore.CountersBucket {
		t.Errorf("the declaration names the counters bucket %q, the adapter %q", layout.CountersBucket, boltstore.CountersBucket)
	}
}
