package boltstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 2,000 items, each succeeding whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, boltharness.Harness(), 2_000) }
