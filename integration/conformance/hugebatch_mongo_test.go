package conformance

import (
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 2,000 items on FerretDB (a size it
// takes in reasonable time; the MongoDB at NOAM_MONGO_URI when set), each
// succeeding whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, mongotest.Native().Store(), 2_000) }
