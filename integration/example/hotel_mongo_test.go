package example

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

func hotelStores(db *mongo.Database, opts ...mongostore.Option) hoteltest.Stores {
	return hoteltest.Stores{
		Hotels:   hotel.NewHotelMongoRepository(db, opts...),
		Posts:    hotel.NewPostMongoRepository(db, opts...),
		Comments: hotel.NewCommentMongoRepository(db, opts...),
	}
}

// TestMongoHotelSuite runs the store-independent suite of lookups,
// composite and enumerable keys, batch reads and pagination.
func TestMongoHotelSuite(t *testing.T) {
	hoteltest.Run(t, func(t *testing.T) hoteltest.Stores {
		return hotelStores(mongotest.Start(t), mongotest.NativeOptions()...)
	})
}

// TestMongoHotelSuiteIndexTables runs the hotel suite with every lookup in
// an index table.
func TestMongoHotelSuiteIndexTables(t *testing.T) {
	hoteltest.Run(t, func(t *testing.T) hoteltest.Stores { return hotelStores(mongotest.Start(t), mongostore.IndexTables()) })
}
