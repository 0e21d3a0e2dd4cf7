package hotel_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/runtime/dynamostore"
)

func dynamoStores(t *testing.T, srv *dynalitetest.Server, c *dynamodb.Client) hoteltest.Stores {
	o := dynamostore.Options{TablePrefix: srv.Prefix(t)}
	return hoteltest.Stores{
		Hotels:        hotel.NewHotelDynamoRepository(c, o),
		Posts:         hotel.NewPostDynamoRepository(c, o),
		Comments:      hotel.NewCommentDynamoRepository(c, o),
		UnorderedScan: true,
	}
}

// TestDynamoSuite runs the hotel suite on DynamoDB (dynalite, or
// NOAM_DYNAMO_ENDPOINT): fresh tables, by table-name prefix, per test.
func TestDynamoSuite(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	hoteltest.Run(t, func(t *testing.T) hoteltest.Stores { return dynamoStores(t, srv, c) })
}
