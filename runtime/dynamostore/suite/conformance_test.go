package dynamostore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/dynamostore/dynamoharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

func TestMain(m *testing.M) { dynamoharness.Main(m) }

// TestConformance runs the store-independent conformance suite against
// DynamoDB (dynalite, or NOAM_DYNAMO_ENDPOINT): one server, fresh tables
// (a new table-name prefix) per subtest.
func TestConformance(t *testing.T) { storetest.Run(t, dynamoharness.Harness()) }

// TestConformanceSingleTable runs the suite in the single-table design
// (Options.SingleTable): every collection of a subtest in one table.
func TestConformanceSingleTable(t *testing.T) { storetest.Run(t, dynamoharness.Single()) }

// TestDeadlines runs the deadline test on a dynalite of its own, paused
// with SIGSTOP: the SDK's requests and retries, and the read-back, undo
// and cleanup of the lookup protocol, end with the caller's deadline
// (plus runtime.CleanupTimeout).
func TestDeadlines(t *testing.T) { storetest.Deadlines(t, dynamoharness.Private()) }

// TestEvolution runs the schema and layout evolution suite (issue 23),
// on dynalite with every lookup in the index table: it cannot add a GSI
// to a table that exists (TestGSI tests the build of GSI lookups over
// older blocks on a table made with its GSIs).
func TestEvolution(t *testing.T) { storetest.Evolution(t, dynamoharness.IndexTables()) }

// TestEvolutionSingleTable runs the evolution suite in the single-table
// design, whose table is made with its overloaded GSIs up front (dynalite
// cannot add one later): added lookups are built on GSIs there, next to a
// unique lookup's index items, in Repair's two passes (the index engine's,
// then the GSI attributes'), and a build cut short resumes in the right
// pass.
func TestEvolutionSingleTable(t *testing.T) { storetest.Evolution(t, dynamoharness.Single()) }

// TestDeadlinesSingleTable runs the deadline test in the single-table
// design, on a dynalite of its own paused with SIGSTOP.
func TestDeadlinesSingleTable(t *testing.T) {
	storetest.Deadlines(t, dynamoharness.PrivateSingle())
}
