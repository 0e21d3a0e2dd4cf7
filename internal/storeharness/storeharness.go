// Package storeharness holds the test harness of each store of the main
// module (runtime/storetest.Harness): how to open an empty database of the
// store, what the store declares, and the store's hooks behind the
// repositories' back (a dropped claim, a corrupted value, a pause). Every
// suite that runs on every store takes these values: the conformance
// suite (runtime/storetest, run by each adapter's conformance_test.go)
// and the examples' suites (example/game/gametest, example/hotel/hoteltest).
// MongoDB's harness is integration/mongotest's (FerretDB needs the
// integration module).
//
// The servers are shared by the tests of a package and stopped when they
// end: call Main from TestMain.
package storeharness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	dynamolayout "github.com/noamgen/noamgen/runtime/dynamostore/layout"
	redislayout "github.com/noamgen/noamgen/runtime/redisstore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// mainCalled is set by Main: the shared servers need it to be stopped.
var mainCalled bool

// Main runs the tests of a package and stops the servers they shared
// (Redis, dynalite).
func Main(m *testing.M) {
	mainCalled = true
	code := m.Run()
	redistest.Stop()
	dynalitetest.Stop()
	os.Exit(code)
}

// needMain fails t when the shared servers would outlive the tests.
func needMain(t testing.TB) {
	t.Helper()
	if !mainCalled {
		t.Fatal("storeharness: call storeharness.Main from TestMain, so that the shared servers are stopped")
	}
}

// All returns the harnesses of every store of the main module, each on a
// server its package shares: bbolt, a Redis node, a Redis Cluster,
// DynamoDB.
func All() []storetest.Harness {
	return []storetest.Harness{Bolt(), Redis(), RedisCluster(), Dynamo()}
}

// DynamoOptions are the dynamostore.Options of a DynamoDB database of the
// harnesses (the zero Options when it has none).
func DynamoOptions(db storetest.DB) dynamostore.Options {
	for _, o := range db.Options {
		if d, ok := o.(dynamostore.Options); ok {
			return d
		}
	}
	return dynamostore.Options{}
}

// DynamoPrefix is the table-name prefix of a DynamoDB database of the
// harnesses.
func DynamoPrefix(db storetest.DB) string { return DynamoOptions(db).TablePrefix }

// ---- bbolt

// BoltCaps are bbolt's capabilities, as the adapter declares them.
var BoltCaps = runtime.Caps{Name: "bolt", System: "bbolt", OrderedScan: true, AtomicLookups: true, MaxValueBytes: bbolt.MaxValueSize, MaxKeyBytes: bbolt.MaxKeySize, MaxIndexKeyBytes: bbolt.MaxKeySize, MaxDepth: bsonval.MaxDepth}

// OpenBolt opens a fresh database file in a temporary directory of t,
// closed when t ends.
func OpenBolt(t testing.TB) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "test.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Bolt is the harness of bbolt: a fresh database file per test, paused by
// a write transaction that holds its write lock (every write gives up
// waiting for the lock at its deadline; reads, which never wait for a
// writer, run).
func Bolt() storetest.Harness {
	return storetest.Harness{
		Name:       "bolt",
		Caps:       BoltCaps,
		Concurrent: true, // every write is one bbolt transaction
		Batches:    true, // one transaction
		// The expires entry of each counted block, in the count's transaction.
		ExpiringCounts: true,
		Open: func(t *testing.T) storetest.DB {
			db := OpenBolt(t)
			return storetest.DB{Store: "bolt", Handle: db, Pause: func(t testing.TB) func() {
				tx, err := db.Begin(true)
				if err != nil {
					t.Fatal(err)
				}
				return func() { _ = tx.Rollback() }
			}}
		},
		PauseReadsPass: true,
		// A unique lookup's bucket maps each value to its holder.
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			err := db.Handle.(*bbolt.DB).Update(func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(collection + "." + lookup)).Delete(value)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A BSON string whose length runs past the value.
			key := runtime.AppendString(boltstore.BlockPrefix(runtime.AppendString(nil, id)), entry)
			err := db.Handle.(*bbolt.DB).Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket([]byte(collection))
				if b == nil || b.Get(key) == nil {
					return fmt.Errorf("no entry %s of block %s", entry, id)
				}
				return b.Put(key, []byte{0x02, 0xff, 0xff, 0xff, 0x7f, 'x', 0})
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
}

// ---- Redis

// RedisCaps are the capabilities the Redis adapter declares on a single
// node (every write one script run) and on a cluster (the lookup
// protocol, AtomicLookups false).
func RedisCaps(cluster bool) runtime.Caps {
	return runtime.Caps{Name: "redis", System: "redis", OrderedScan: true, AtomicLookups: !cluster, MaxValueBytes: 512 << 20, MaxKeyBytes: 512 << 20, MaxIndexKeyBytes: 512<<20 - 1, MaxDepth: bsonval.MaxDepth}
}

// Redis is the harness of a single Redis node, shared by the tests of the
// package and flushed before each.
func Redis() storetest.Harness {
	return redisHarness("redis", false, func(t *testing.T) storetest.DB {
		needMain(t)
		return storetest.DB{Store: "redis", Handle: countRedis(redistest.Server(t))}
	})
}

// RedisCluster is the harness of a 3-master Redis Cluster, shared by the
// tests of the package and flushed before each: blocks, listings and
// index tables spread over the slots, with the lookup protocol.
func RedisCluster() storetest.Harness {
	return redisHarness("redis-cluster", true, func(t *testing.T) storetest.DB {
		needMain(t)
		return storetest.DB{Store: "redis", Handle: countRedis(redistest.Cluster(t))}
	})
}

// RedisPrivate is the harness of a single Redis node of each test's own,
// paused with SIGSTOP (DB.Pause): for Deadlines.
func RedisPrivate() storetest.Harness {
	return redisHarness("redis", false, func(t *testing.T) storetest.DB {
		c, p := redistest.PrivateServer(t)
		return storetest.DB{Store: "redis", Handle: countRedis(c), Pause: p.Pause}
	})
}

// RedisClusterPrivate is the harness of a 3-master Redis Cluster of each
// test's own, every master paused with SIGSTOP (DB.Pause): for Deadlines.
func RedisClusterPrivate() storetest.Harness {
	return redisHarness("redis-cluster", true, func(t *testing.T) storetest.DB {
		c, p := redistest.PrivateCluster(t)
		return storetest.DB{Store: "redis", Handle: countRedis(c), Pause: p.Pause}
	})
}

func redisHarness(name string, cluster bool, open func(t *testing.T) storetest.DB) storetest.Harness {
	mode := redislayout.Node
	if cluster {
		mode = redislayout.Cluster
	}
	return storetest.Harness{
		Name:        name,
		Caps:        RedisCaps(cluster),
		Concurrent:  true,
		Batches:     !cluster, // two pipelines; a cluster runs the single calls
		Open:        open,
		Declaration: redislayout.Store,
		Requests:    func() int { return int(redisRequests.n.Load()) },
		Mode:        mode,
		// A unique lookup's claims hash (keys.go) maps each value to its
		// holder.
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			if err := db.Handle.(redis.UniversalClient).HDel(context.Background(), "{"+collection+"."+lookup+"}:claims", string(value)).Err(); err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A BSON string whose length runs past the value.
			key := collection + ":{" + id + "}"
			if n, err := db.Handle.(redis.UniversalClient).HExists(context.Background(), key, entry).Result(); err != nil || !n {
				t.Fatalf("no entry %s of block %s: %v", entry, id, err)
			}
			if err := db.Handle.(redis.UniversalClient).HSet(context.Background(), key, entry, "\x02\xff\xff\xff\x7fx\x00").Err(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// redisRequests counts what the harnesses' clients send, as the
// declaration (runtime/redisstore/layout) counts it: one per command, one
// per pipeline (a script run is one command).
var redisRequests struct {
	n      atomic.Int64
	mu     sync.Mutex
	hooked map[redis.UniversalClient]bool
}

// countRedis adds the request counter to c once (the shared servers'
// clients are the same from test to test).
func countRedis(c redis.UniversalClient) redis.UniversalClient {
	redisRequests.mu.Lock()
	defer redisRequests.mu.Unlock()
	if redisRequests.hooked == nil {
		redisRequests.hooked = map[redis.UniversalClient]bool{}
	}
	if !redisRequests.hooked[c] {
		redisRequests.hooked[c] = true
		c.AddHook(redisCounter{})
	}
	return c
}

type redisCounter struct{}

func (redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		redisRequests.n.Add(1)
		return next(ctx, cmd)
	}
}
func (redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		redisRequests.n.Add(1)
		return next(ctx, cmds)
	}
}

// ---- DynamoDB

// DynamoCaps are the capabilities the DynamoDB adapter declares.
var DynamoCaps = runtime.Caps{Name: "dynamo", System: "aws.dynamodb", OrderedScan: false, AtomicLookups: false, MaxValueBytes: dynamostore.MaxItemBytes, MaxKeyBytes: dynamostore.MaxKeyBytes, MaxIndexKeyBytes: dynamostore.MaxIndexKeyBytes, MaxDepth: dynamostore.MaxDepth}

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
		c = srv.Client(CountDynamo)
		clients[srv] = c
	}
	return c
}

// Dynamo is the harness of DynamoDB: dynalite (or NOAM_DYNAMO_ENDPOINT)
// shared by the tests of the package, fresh tables (a new table-name
// prefix) per test. Writes of unique values run the protocol: dynalite
// has no transactions (Options.Transactions auto detects it), and on
// NOAM_DYNAMO_ENDPOINT transactions are off so that the protocol stays
// tested there (integration/dyntest runs them).
func Dynamo() storetest.Harness {
	return DynamoHarness(func(t *testing.T) storetest.DB {
		needMain(t)
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

// DynamoIndexTables is Dynamo with every lookup in the index table
// (dynamostore.Options.IndexTables): dynalite cannot add a global
// secondary index to a table that exists (it ignores UpdateTable's
// GlobalSecondaryIndexUpdates), which the evolution suite's added lookups
// need. With NOAM_DYNAMO_ENDPOINT set it is Dynamo.
func DynamoIndexTables() storetest.Harness {
	if os.Getenv(dynalitetest.EnvEndpoint) != "" {
		return Dynamo()
	}
	return DynamoHarness(func(t *testing.T) storetest.DB {
		needMain(t)
		srv := dynalitetest.Shared(t)
		return storetest.DB{Store: "dynamo", Handle: client(srv), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), IndexTables: true, Transactions: protocolTx()}}}
	})
}

// DynamoSingle is Dynamo in the single-table design
// (dynamostore.Options.SingleTable): every collection of a test, its
// index items, counters and schema records in the one table
// "<prefix>app". The table is made with SingleTableGSIs overloaded GSIs,
// the most any collection of the suite has, so that the first
// EnsureIndexes creates them all (dynalite cannot add a GSI to a table
// that exists).
func DynamoSingle() storetest.Harness {
	h := DynamoHarness(func(t *testing.T) storetest.DB {
		needMain(t)
		srv := dynalitetest.Shared(t)
		return storetest.DB{Store: "dynamo", Handle: client(srv), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), SingleTable: SingleTable, SingleTableGSIs: SingleTableGSIs, Transactions: protocolTx()}}}
	})
	h.Declaration = dynamolayout.SingleTableStore(SingleTable)
	return h
}

// SingleTable and SingleTableGSIs are DynamoSingle's single table (after
// the test's prefix) and its number of overloaded GSIs.
const (
	SingleTable     = "app"
	SingleTableGSIs = 2
)

// DynamoPrivate is the harness of a dynalite of each test's own, paused
// with SIGSTOP (DB.Pause): for Deadlines.
func DynamoPrivate() storetest.Harness {
	return DynamoHarness(func(t *testing.T) storetest.DB {
		srv := dynalitetest.Start(t)
		return storetest.DB{Store: "dynamo", Handle: srv.Client(CountDynamo), Options: []runtime.Option{dynamostore.Options{TablePrefix: srv.Prefix(t), Transactions: protocolTx()}}, Pause: srv.Pause}
	})
}

// DynamoHarness is the harness of the DynamoDB databases open opens (whose
// clients count their requests with CountDynamo), writing unique values
// with the protocol (Mode: set it to dynamolayout.Transactions for
// databases whose writes of unique values are transactions).
func DynamoHarness(open func(t *testing.T) storetest.DB) storetest.Harness {
	return storetest.Harness{
		Name: "dynamo",
		// Count: a Scan whose FilterExpression leaves the expired items out.
		ExpiringCounts: true,
		Caps:           DynamoCaps,
		Concurrent:     true, // every block write is one conditional request
		Open:           open,
		Declaration:    dynamolayout.Store,
		Mode:           dynamolayout.Protocol,
		Requests:       func() int { return int(dynamoRequests.Load()) },
		// An index item of a unique lookup is keyed by the lookup's name
		// and the value alone (lookups.go).
		DropClaim: func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			in := &dynamodb.DeleteItemInput{
				TableName: aws.String(DynamoPrefix(db) + dynamostore.IndexTable(collection)),
				Key: map[string]types.AttributeValue{
					"p": &types.AttributeValueMemberS{Value: lookup},
					"k": &types.AttributeValueMemberB{Value: value},
				},
			}
			if o := DynamoOptions(db); o.SingleTable != "" {
				in.TableName, in.Key = aws.String(o.TablePrefix+o.SingleTable), dynamostore.SingleIndexKey(collection, lookup, value)
			}
			_, err := db.Handle.(*dynamodb.Client).DeleteItem(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// An attribute of another type: a map where a string is.
			table, key := DynamoPrefix(db)+collection, map[string]types.AttributeValue{"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, id)}}
			if o := DynamoOptions(db); o.SingleTable != "" {
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

// CountDynamo is a client option that counts the client's requests.
func CountDynamo(o *dynamodb.Options) {
	next := o.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	o.HTTPClient = countingClient{next}
}
