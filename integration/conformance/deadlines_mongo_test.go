package conformance

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/integration/faults"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// deadlines runs the deadline test on MongoDB (FerretDB in-process, or
// NOAM_MONGO_URI) behind a proxy that stops forwarding (faults.Pauser):
// the driver takes its timeouts from the context, and the index-table
// protocol's read-back, undo and cleanup end runtime.CleanupTimeout after
// the caller's deadline.
func deadlines(t *testing.T, m mongotest.Harness) {
	p := faults.NewPauser()
	m.Client, m.Pause = options.Client().SetDialer(p), p.Pause
	storetest.Deadlines(t, m.Store())
}

// TestDeadlines: native lookups (the default mapping).
func TestDeadlines(t *testing.T) { deadlines(t, mongotest.Native()) }

// TestDeadlinesIndexTables: every lookup in an index table.
func TestDeadlinesIndexTables(t *testing.T) { deadlines(t, mongotest.IndexTables()) }
