package boltstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 10,000 items, each succeeding whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, boltharness.Harness(), 10_000) }
