package boltstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	"github.com/noamgen/noamgen/runtime/internal/limit"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestConformance runs the store-independent conformance suite against
// bbolt: a fresh database file per subtest.
func TestConformance(t *testing.T) { storetest.Run(t, boltharness.Harness()) }

// TestConformanceSizes runs the size tests with the value limit lowered
// from bbolt's 2 GiB to 1 MiB (the same check, affordable sizes); keys
// keep bbolt's 32768-byte limit.
func TestConformanceSizes(t *testing.T) {
	defer limit.Set("boltstore.value", 1<<20)()
	h := boltharness.Harness()
	h.Name = "bolt (values of at most 1 MiB)"
	h.Caps.MaxValueBytes = 1 << 20
	storetest.RunSizes(t, h)
}

// TestDeadlines runs the deadline test on bbolt, "paused" by a write
// transaction that holds the database's write lock: every write gives up
// waiting for the lock at its deadline (bbolt takes no context; see
// update), reads, which never wait for a writer, run.
func TestDeadlines(t *testing.T) { storetest.Deadlines(t, boltharness.Harness()) }

// TestEvolution runs the schema and layout evolution suite on bbolt.
func TestEvolution(t *testing.T) { storetest.Evolution(t, boltharness.Harness()) }
