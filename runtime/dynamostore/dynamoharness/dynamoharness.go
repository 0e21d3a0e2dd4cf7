// Package dynamoharness is the DynamoDB adapter's test harness
// (runtime/storetest.Harness), on dynalite (dynalitetest) or
// NOAM_DYNAMO_ENDPOINT: what the adapter declares, how its requests are
// counted, and its hooks behind the repositories' back (a dropped claim, a
// corrupted value, a pause). Every suite that runs on every store takes it,
// from runtime/dynamostore/suite; integration/dyntest builds the harness of
// DynamoDB with transactions (minidyn) on it.
//
// The shared servers are stopped when the tests of a package end: call Main
// from TestMain.
package dynamoharness

import (
	"context"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	dynamolayout "github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// servers are the servers the package's harnesses share.
var servers = &storetest.Servers{Harness: "dynamoharness", Stop: dynalitetest.Stop}

// Main runs the tests of a package and stops the servers they shared.
func Main(m *testing.M) { servers.Main(m) }

// Options are the dynamostore.Options of a DynamoDB database of the
// harnesses (the zero Options when it has none).
func Options(db storetest.DB) dynamostore.Options {
	for _, o := range db.Options {
		if d, ok := o.(dynamostore.Options); ok {
			return d
		}
	}
	return dynamostore.Options{}
}

// Prefix is the table-name prefix of a DynamoDB database of the
// harnesses.
func Prefix(db storetest.DB) string { return Options(db).TablePrefix }

// Caps are the capabilities the DynamoDB adapter declares.
var Caps = runtime.Caps{Name: "dynamo", System: "aws.dynamodb", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes, MaxKeyBytes: dynamostore.MaxKeyBytes, MaxIndexKeyBytes: dynamostore.MaxIndexKeyBytes, MaxDepth: dynamostore.MaxDepth}

var (
	clientsMu sync.Mutex
	clients   = map[*dynalitetest.Server]*dynamodb.Client{}
)

// client returns the one client of srv.
func client(srv *dynalitetest.Server) *dynamodb.Client {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	c := clients[srv]
	if c == nil {
		c = srv.Client(Count)
		clients[srv] = c
	}
	return c
}

// Harness is the harness of DynamoDB: dynalite (or NOAM_DYNAMO_ENDPOINT)
// shared by the tests of the package, fresh tables (a new table-name
// prefix) per test. Writes of unique values run the protocol: dynalite
// has no transactions (Options.Transactions auto detects it), and on
// NOAM_DYNAMO_ENDPOINT transactions are off so that the protocol stays
// tested there (integration/dyntest runs them).
func Harness() storetest.Harness {
	return New(func(t *testing.T) storetest.DB {
		servers.Need(t)
		srv := dynalitetest.Shared(t)
		return storetest.DB{Store: "dynamo", Handle: client(srv), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), Transactions: protocolTx()}}}
	})
}

// protocolTx is the Options.Transactions of the dynalite harnesses: auto
// on dynalite (which detects none), off on NOAM_DYNAMO_ENDPOINT.
func protocolTx() dynamostore.Tx {
	if os.Getenv(dynalitetest.EnvEndpoint) != "" {
		return dynamostore.TxOff
	}
	return dynamostore.TxAuto
}

// IndexTables is Harness with every lookup in the index table
// (dynamostore.Options.IndexTables): dynalite cannot add a global
// secondary index to a table that exists (it ignores UpdateTable's
// GlobalSecondaryIndexUpdates), which the evolution suite's added lookups
// need. With NOAM_DYNAMO_ENDPOINT set it is Harness.
func IndexTables() storetest.Harness {
	if os.Getenv(dynalitetest.EnvEndpoint) != "" {
		return Harness()
	}
	return New(func(t *testing.T) storetest.DB {
		servers.Need(t)
		srv := dynalitetest.Shared(t)
		return storetest.DB{Store: "dynamo", Handle: client(srv), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), IndexTables: true, Transactions: protocolTx()}}}
	})
}

// Single is Harness in the single-table design
// (dynamostore.Options.SingleTable): every collection of a test, its
// index items, counters and schema records in the one table
// "<prefix>app". The table is made with SingleTableGSIs overloaded GSIs,
// the most any collection of the suite has, so that the first
// EnsureIndexes creates them all (dynalite cannot add a GSI to a table
// that exists).
func Single() storetest.Harness { return singleTable(Harness()) }

// singleTable is harness h with its databases in the single-table design:
// their dynamostore.Options gain SingleTable and SingleTableGSIs, and the
// declaration is the single table's.
func singleTable(h storetest.Harness) storetest.Harness {
	open := h.Open
	h.Open = func(t *testing.T) storetest.DB {
		db := open(t)
		o := Options(db)
		o.SingleTable, o.SingleTableGSIs = SingleTable, SingleTableGSIs
		db.Options = []runtime.Option{o}
		return db
	}
	h.Declaration = dynamolayout.SingleTableStore(SingleTable)
	return h
}

// SingleTable and SingleTableGSIs are Single's single table (after
// the test's prefix) and its number of overloaded GSIs.
const (
	SingleTable     = "app"
	SingleTableGSIs = 2
)

// Private is the harness of a dynalite of each test's own, paused
// with SIGSTOP (DB.Pause): for Deadlines.
func Private() storetest.Harness {
	return New(func(t *testing.T) storetest.DB {
		srv := dynalitetest.Start(t)
		return storetest.DB{Store: "dynamo", Handle: srv.Client(Count), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), Transactions: protocolTx()}}, Pause: srv.Pause}
	})
}

// PrivateSingle is Private in the single-table design (as Single): for
// Deadlines.
func PrivateSingle() storetest.Harness { return singleTable(Private()) }

// New is the harness of the DynamoDB databases open opens (whose
// clients count their requests with Count), writing unique values
// with the protocol (Mode: set it to dynamolayout.Transactions for
// databases whose writes of unique values are transactions).
func New(open func(t *testing.T) storetest.DB) storetest.Harness {
	return storetest.Harness{
		Name: "dynamo",
		// Count: a Scan whose FilterExpression leaves the expired items out.
		ExpiringCounts: true,
		Caps:           Caps,
		Concurrent:     true, // every block write is one conditional request
		Open:           open,
		Declaration:    dynamolayout.Store,
		Mode:           dynamolayout.Protocol,
		Requests:       func() int { return int(dynamoRequests.Load()) },
		// An index item of a unique lookup is keyed by the lookup's name
		// and the value alone (lookups.go).
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			in := &dynamodb.DeleteItemInput{
				TableName: aws.String(Prefix(db) + dynamostore.IndexTable(collection)),
				Key: map[string]types.AttributeValue{
					"p": &types.AttributeValueMemberS{Value: lookup},
					"k": &types.AttributeValueMemberB{Value: value},
				},
			}
			if o := Options(db); o.SingleTable != "" {
				in.TableName, in.Key = aws.String(o.TablePrefix+o.SingleTable), dynamostore.SingleIndexKey(collection, lookup, value)
			}
			_, err := db.Handle.(*dynamodb.Client).DeleteItem(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// An attribute of another type: a map where a string is.
			table, key := Prefix(db)+collection, map[string]types.AttributeValue{"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, id)}}
			if o := Options(db); o.SingleTable != "" {
				table, key = o.TablePrefix+o.SingleTable, dynamostore.SingleBlockKey(collection, runtime.AppendString(nil, id))
			}
			_, err := db.Handle.(*dynamodb.Client).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
				TableName:                 aws.String(table),
				Key:                       key,
				UpdateExpression:          aws.String("SET #e = :v"),
				ConditionExpression:       aws.String("attribute_exists(#e)"),
				ExpressionAttributeNames:  map[string]string{"#e": entry},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"not": &types.AttributeValueMemberS{Value: "a string"}}}},
			})
			if err != nil {
				t.Fatalf("corrupting %s of block %s: %v", entry, id, err)
			}
		},
	}
}

// dynamoRequests counts the HTTP requests of the harnesses' clients: one
// per DynamoDB request, as the declaration (runtime/dynamostore/layout)
// counts them.
var dynamoRequests atomic.Int64

type countingClient struct{ next aws.HTTPClient }

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	dynamoRequests.Add(1)
	return c.next.Do(r)
}

// Count is a client option that counts the client's requests.
func Count(o *dynamodb.Options) {
	next := o.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	o.HTTPClient = countingClient{next}
}
