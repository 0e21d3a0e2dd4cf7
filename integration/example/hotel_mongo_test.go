package example

import (
	"testing"

	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/integration/mongotest"
)

// TestMongoHotelSuite runs the store-independent suite of lookups,
// composite and enumerable keys, batch reads and pagination through the
// MongoDB harness, with lookups on native indexes and with every lookup
// in an index table.
func TestMongoHotelSuite(t *testing.T) {
	for _, m := range []mongotest.Harness{mongotest.Native(), mongotest.IndexTables()} {
		t.Run(m.Name, func(t *testing.T) { hoteltest.Run(t, m.Store()) })
	}
}
