package conformance

import (
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/otelnoam/oteltest"
)

// TestOpenTelemetry runs runtime/otelnoam's hook on MongoDB, with lookups
// on native indexes and in index tables: the same check as on the main
// module's stores (runtime/otelnoam's TestHook).
func TestOpenTelemetry(t *testing.T) {
	for _, h := range []mongotest.Harness{mongotest.Native(), mongotest.IndexTables()} {
		t.Run(h.Name, func(t *testing.T) { oteltest.Check(t, h.Store()) })
	}
}
