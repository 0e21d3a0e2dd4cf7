// Package conformance runs the store-independent conformance suite
// (runtime/storetest) against the MongoDB adapter: FerretDB in-process, or
// the MongoDB at NOAM_MONGO_URI, once with lookups on native indexes and
// once with every lookup in an index table.
package conformance

import (
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// TestConformance runs the suite with lookups on native indexes (the
// default mapping). The concurrency subtests run only against a real
// MongoDB: FerretDB's concurrent writes are not atomic.
func TestConformance(t *testing.T) { storetest.Run(t, mongotest.Native().Store()) }

// TestConformanceDefaultOptions runs the suite with repositories opened
// without mapping options, as the README opens them: the first
// EnsureIndexes decides the mapping the server supports.
func TestConformanceDefaultOptions(t *testing.T) { storetest.Run(t, mongotest.Default().Store()) }

// TestConformanceIndexTables runs the suite with every lookup in an index
// table (noam:"lookup,table" on every lookup), so that the index-table
// protocol stays tested.
func TestConformanceIndexTables(t *testing.T) { storetest.Run(t, mongotest.IndexTables().Store()) }

// TestEvolution runs the schema and layout evolution suite with lookups
// on native indexes, and TestEvolutionIndexTables with every lookup in an
// index table.
func TestEvolution(t *testing.T) { storetest.Evolution(t, mongotest.Native().Store()) }

func TestEvolutionIndexTables(t *testing.T) {
	storetest.Evolution(t, mongotest.IndexTables().Store())
}
