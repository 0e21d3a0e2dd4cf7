package conformance

import (
	"testing"

	"github.com/noamgen/noamgen/integration/dyntest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestConformanceDynamoTx runs the suite against the DynamoDB adapter
// with writes of unique values in transactions, on minidyn (or
// NOAM_DYNAMO_ENDPOINT with transactions on); dynalite, which has none,
// runs it with the protocol in the main module.
func TestConformanceDynamoTx(t *testing.T) { storetest.Run(t, dyntest.Harness()) }

// TestConformanceDynamoTxSingleTable is TestConformanceDynamoTx in the
// single-table design (dynamostore.Options.SingleTable).
func TestConformanceDynamoTxSingleTable(t *testing.T) {
	storetest.Run(t, dyntest.SingleHarness())
}
