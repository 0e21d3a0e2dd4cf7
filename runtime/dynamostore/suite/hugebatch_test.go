package dynamostore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/dynamostore/dynamoharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 2,000 items on dynalite (a size it
// takes in reasonable time), each succeeding whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, dynamoharness.Harness(), 2_000) }
