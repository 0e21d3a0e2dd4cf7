package example

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/integration/mongotest"
)

func hotelStores(db *mongo.Database) hoteltest.Stores {
	return hoteltest.Stores{
		Hotels:   hotel.NewHotelMongoRepository(db),
		Posts:    hotel.NewPostMongoRepository(db),
		Comments: hotel.NewCommentMongoRepository(db),
	}
}

// TestMongoHotelSuite runs the store-independent suite of lookups,
// composite and enumerable keys, batch reads and pagination.
func TestMongoHotelSuite(t *testing.T) {
	hoteltest.Run(t, func(t *testing.T) hoteltest.Stores { return hotelStores(mongotest.Start(t)) })
}
