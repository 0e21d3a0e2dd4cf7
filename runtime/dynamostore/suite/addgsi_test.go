package dynamostore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
)

// TestAddGSILookup: a model gains a non-unique lookup (a GSI by default)
// over a table that holds data, with the default options. On an on-demand
// table (the one EnsureIndexes makes) and on a PROVISIONED one (made
// beforehand), EnsureIndexes either adds the GSI, sending what the
// table's billing mode needs, and the lookup then lists the blocks, or
// fails with dynamostore.ErrCannotAddGSI (dynalite cannot add a GSI to a
// table that exists), never with the driver's own error.
func TestAddGSILookup(t *testing.T) {
	srv := dynalitetest.Shared(t)
	for _, billing := range []types.BillingMode{types.BillingModePayPerRequest, types.BillingModeProvisioned} {
		t.Run(string(billing), func(t *testing.T) {
			c := srv.Client()
			o := dynamostore.Options{TablePrefix: srv.Prefix(t)}
			if billing == types.BillingModeProvisioned {
				_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
					TableName:             aws.String(o.TablePrefix + "players"),
					BillingMode:           types.BillingModeProvisioned,
					ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)},
					AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String(dynamostore.IDAttr), AttributeType: types.ScalarAttributeTypeB}},
					KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String(dynamostore.IDAttr), KeyType: types.KeyTypeHash}},
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			v1 := etf.NewPlayerDynamoRepository(c, o)
			if err := v1.EnsureIndexes(ctx); err != nil {
				t.Fatal(err)
			}
			for _, p := range []*etf.Player{{ID: "p1", Email: "a@x", City: "Oslo"}, {ID: "p2", Email: "b@x", City: "Rome"}} {
				if err := v1.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			v2 := lookups.NewPlayerDynamoRepository(c, o)
			err := v2.EnsureIndexes(ctx)
			if err == nil {
				page, err := v2.ListByCity(ctx, "Oslo", runtime.PageRequest{Limit: 10})
				if err != nil || len(page.Items) != 1 || page.Items[0].ID != "p1" {
					t.Fatalf("ListByCity(Oslo) after the GSI was added: %v, %v; want p1", page.Items, err)
				}
				return
			}
			var re *runtime.Error
			if !errors.Is(err, dynamostore.ErrCannotAddGSI) || !errors.As(err, &re) {
				t.Fatalf("EnsureIndexes adding a GSI lookup over a %s table with data: %v; want nil or a *runtime.Error of dynamostore.ErrCannotAddGSI", billing, err)
			}
			if !strings.Contains(err.Error(), "IndexTables") {
				t.Errorf("the error %q does not say what to do", err)
			}
			t.Logf("%s: %v", billing, err)
		})
	}
}
