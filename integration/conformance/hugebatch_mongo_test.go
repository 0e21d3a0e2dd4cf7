package conformance

import (
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 500 items on FerretDB (2,000 took
// minutes of CI; the MongoDB at NOAM_MONGO_URI when set), each succeeding
// whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, mongotest.Native().Store(), 500) }
