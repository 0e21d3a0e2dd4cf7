package handwritten

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// HotelDynamoGSI is the hand-written DynamoDB store of hotel.Hotel the
// way a DynamoDB user writes it with a global secondary index: the city
// and stars lookup is the GSI cityStars of the hotels' table (partition
// key city, sort key starsId: the stars key followed by the id, both S,
// projecting ALL), kept by DynamoDB from the hotel's own attributes, so a
// write of a hotel is one request and ListByCityStars one Query of the
// GSI. The unique name is still a claim in an index table (as
// HotelDynamo's: a GSI cannot refuse a duplicate), written before the
// hotel; GetByName is HotelDynamo's.
//
// A GSI is eventually consistent: a Query may miss a write just made
// (dynalite updates its GSIs with the write, so the benchmarks do not
// see it). The simplifications of HotelDynamo apply (no take-over of a
// stale name claim, no Delete), and only the two lookups the benchmarks
// read are kept.
type HotelDynamoGSI struct {
	HotelDynamo
}

// CityStarsGSI names the hand-written store's GSI.
const CityStarsGSI = "cityStars"

// hotelGSIItem is the stored form of a hotel of HotelDynamoGSI: a
// hotelItem without a write sequence, with the GSI's sort key.
type hotelGSIItem struct {
	ID      string        `dynamodbav:"id"`
	Name    string        `dynamodbav:"name"`
	City    string        `dynamodbav:"city"`
	Stars   int           `dynamodbav:"stars"`
	StarsID string        `dynamodbav:"starsId"`
	Tags    []string      `dynamodbav:"tags"`
	Address hotel.Address `dynamodbav:"address"`
	Rooms   []hotel.Room  `dynamodbav:"rooms"`
}

func (it *hotelGSIItem) hotel() *hotel.Hotel {
	return &hotel.Hotel{ID: it.ID, Name: it.Name, City: it.City, Stars: it.Stars, Tags: it.Tags, Address: it.Address, Rooms: it.Rooms}
}

// NewHotelDynamoGSI returns the store over table, with its GSI, and the
// index table table+"_index" of the name claims, creating them.
func NewHotelDynamoGSI(ctx context.Context, c *dynamodb.Client, table string) (*HotelDynamoGSI, error) {
	s := &HotelDynamoGSI{HotelDynamo{C: c, Table: table, Index: table + "_index"}}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("city"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("starsId"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(CityStarsGSI),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("city"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("starsId"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return nil, err
	}
	// Active once the table is: a GSI made with its table is not
	// backfilled.
	if err := CreateDynamoTable(ctx, c, table, "id", ""); err != nil {
		return nil, err
	}
	return s, CreateDynamoTable(ctx, c, s.Index, "p", "k")
}

// Create stores a new hotel: its name claim (a conditional PutItem: a
// name in use fails with runtime.ErrDuplicate), then the hotel, with the
// GSI's attributes, on condition that it does not exist (if it does, the
// claim is removed again).
func (s *HotelDynamoGSI) Create(ctx context.Context, h *hotel.Hotel) error {
	item, err := attributevalue.MarshalMap(&hotelGSIItem{ID: h.ID, Name: h.Name, City: h.City, Stars: h.Stars, StarsID: starsKey(h.Stars) + h.ID, Tags: h.Tags, Address: h.Address, Rooms: h.Rooms})
	if err != nil {
		return err
	}
	w := rand.Int64()
	name := nameKey(h.Name)
	if err := s.addIndex(ctx, name, h.ID, 1, w, true); err != nil {
		if condFailed(err) {
			return fmt.Errorf("create %s: name %q: %w", h.ID, h.Name, runtime.ErrDuplicate)
		}
		return err
	}
	_, err = s.C.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": "id"},
	})
	if err != nil {
		s.undoIndex(ctx, name, w)
		if condFailed(err) {
			return fmt.Errorf("create %s: %w", h.ID, runtime.ErrDuplicate)
		}
		return err
	}
	return nil
}

// ListByCityStars reads a page of the hotels in city with at least
// minStars stars, in (stars, id) order: one Query of the GSI (city =
// city, starsId from the stars key, or after the cursor: the last sort
// key) for n+1 hotels, whole (the GSI projects every attribute), again
// from where it stopped only if DynamoDB's 1 MB page ends first.
func (s *HotelDynamoGSI) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	n := req.Size()
	var page runtime.Page[*hotel.Hotel]
	cond, from := "#c = :c AND #k >= :k", starsKey(minStars)
	if req.Cursor != "" {
		if len(req.Cursor) < 16 {
			return page, fmt.Errorf("cursor %q: %w", req.Cursor, runtime.ErrBadCursor)
		}
		cond, from = "#c = :c AND #k > :k", req.Cursor
	}
	var items []hotelGSIItem
	var start map[string]types.AttributeValue
	for {
		out, err := s.C.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.Table), IndexName: aws.String(CityStarsGSI),
			Limit:                     aws.Int32(int32(n + 1 - len(items))),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#c": "city", "#k": "starsId"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(city), ":k": str(from)},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return page, err
		}
		var got []hotelGSIItem
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &got); err != nil {
			return page, err
		}
		items = append(items, got...)
		if len(items) > n || len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	if len(items) > n {
		items = items[:n]
		page.Next = items[n-1].StarsID
	}
	page.Items = make([]*hotel.Hotel, len(items))
	for i := range items {
		page.Items[i] = items[i].hotel()
	}
	return page, nil
}

// SetCity sets the city: one UpdateItem on condition that the hotel
// exists. The city is the GSI's partition key, so DynamoDB moves the
// hotel in the GSI; its sort key (stars, id) does not change.
func (s *HotelDynamoGSI) SetCity(ctx context.Context, id string, city string) error {
	_, err := s.C.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(id),
		UpdateExpression:          aws.String("SET #c = :c"),
		ConditionExpression:       aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames:  map[string]string{"#c": "city", "#id": "id"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(city)},
	})
	if condFailed(err) {
		return fmt.Errorf("set city %s: %w", id, runtime.ErrNotFound)
	}
	return err
}
