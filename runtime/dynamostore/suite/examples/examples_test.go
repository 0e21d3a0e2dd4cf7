// Package examples_test runs on DynamoDB (dynalite, or NOAM_DYNAMO_ENDPOINT), through the harness the
// conformance suite takes (dynamoharness), the other suites written once for every
// store: the examples' suites (example/game/gametest,
// example/hotel/hoteltest: the game and the hotel, over their generated
// repositories) and the OpenTelemetry hook's check
// (runtime/otelnoam/oteltest). It is a package of its own so that the race
// step of scripts/test-all.sh, which builds runtime/dynamostore/suite with
// -race, does not instrument the examples' generated code.
package examples_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/game/gametest"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynamoharness"
	"github.com/noamgen/noamgen/runtime/otelnoam/oteltest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestMain stops the shared servers.
func TestMain(m *testing.M) { dynamoharness.Main(m) }

func harnesses() []storetest.Harness { return []storetest.Harness{dynamoharness.Harness()} }

func TestExamples(t *testing.T) {
	for _, h := range harnesses() {
		t.Run(h.Name+"/game", func(t *testing.T) { gametest.Run(t, h) })
		t.Run(h.Name+"/hotel", func(t *testing.T) { hoteltest.Run(t, h) })
	}
}

func TestOpenTelemetry(t *testing.T) {
	for _, h := range harnesses() {
		t.Run(h.Name, func(t *testing.T) { oteltest.Check(t, h) })
	}
}
