package game_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/game/gametest"
	"github.com/noamgen/noamgen/internal/storeharness"
)

func TestMain(m *testing.M) { storeharness.Main(m) }

// TestSuite runs the game suite on every store of the main module, each
// through its harness (internal/storeharness: bbolt, a Redis node, a Redis
// Cluster, DynamoDB), the one its conformance suite takes; MongoDB's runs
// in integration/example.
func TestSuite(t *testing.T) {
	for _, h := range storeharness.All() {
		t.Run(h.Name, func(t *testing.T) { gametest.Run(t, h) })
	}
}
