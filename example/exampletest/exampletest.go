// Package exampletest runs, on the stores of the harnesses it is given,
// the suites written once for every store besides the conformance suite:
// the examples' suites (example/game/gametest, example/hotel/hoteltest:
// the game and the hotel, over their generated repositories) and the
// OpenTelemetry hook's check (runtime/otelnoam/oteltest). Each store runs
// it from runtime/<store>store/suite/examples, with the harnesses its
// conformance suite takes, in a test package of its own, so that the race
// step of scripts/test-all.sh, which builds runtime/<store>store/suite
// with -race, does not instrument the examples' generated code.
package exampletest

import (
	"testing"

	"github.com/noamgen/noamgen/example/game/gametest"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/runtime/otelnoam/oteltest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Run runs the game's and the hotel's suites and the OpenTelemetry check
// on each of hs, as subtests named after the harness.
func Run(t *testing.T, hs ...storetest.Harness) {
	for _, h := range hs {
		t.Run(h.Name+"/game", func(t *testing.T) { gametest.Run(t, h) })
		t.Run(h.Name+"/hotel", func(t *testing.T) { hoteltest.Run(t, h) })
		t.Run(h.Name+"/opentelemetry", func(t *testing.T) { oteltest.Check(t, h) })
	}
}
