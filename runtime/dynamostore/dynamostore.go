// Package dynamostore is the Amazon DynamoDB adapter of the store contract
// (runtime.Store), after NoAM's mapping to extensible record stores (paper
// Fig. 5): one table per collection, one item per block with the block key
// as the partition key (_id), one attribute per entry.
//
//   - Values are native attribute values (S, N, BOOL, M, L, B, NULL; see
//     Encode), so an item reads naturally in the AWS console.
//   - Block keys: integer keys are N, string and composite keys B holding
//     the order-preserving tuple encoding (runtime.KeyCodec): DynamoDB key
//     attributes cannot be empty strings, and the encoding keeps the
//     order of composite keys.
//   - EAO: the root entry is the attribute _root (an M).
//   - A partitioned field is a list attribute (rounds: L), its length in
//     the map attribute _len ({rounds: N}): AppendF is one UpdateItem that
//     sends only the new element (SET f[past the end], which appends) and
//     whose reply gives its index, SetFAt is SET f[i].
//   - The version entry is a number attribute; every write that changes a
//     block bumps and checks it in the write's ConditionExpression, in the
//     same request: a block write is atomic without transactions. An
//     update of a versioned block also writes a token (_w), so that a
//     request the SDK resends after a lost reply is not applied twice.
//   - Non-unique lookups of one value per block (no path through a slice)
//     without the table option are global secondary indexes of the block
//     table (gsi.go): the item carries _gk_<lookup> (B), the same
//     order-preserving index key the index table would hold (the value,
//     composite values in the tuple encoding, followed by the block
//     key), and _gp (S, the collection's name); the GSI gsi_<lookup> has
//     _gp as its partition key and _gk_<lookup> as its sort key and
//     projects ALL attributes. A block the lookup indexes no value of has
//     no _gk_<lookup> (a sparse index). Every write of the block sets the
//     attributes in the same request (one item: atomic, nothing to
//     repair); an entry-level update that sets some but not all fields
//     of such a lookup reads the block first and writes on condition that
//     the stored sort key is still the one read. ListBy, prefix and range
//     queries are one Query of the GSI in (value, block key) order, with
//     the index key as the keyset cursor, and the items are the blocks
//     themselves (no second read). GSIs are eventually consistent: a
//     block just written may be missing from a listing or listed as it
//     was (each item is checked to hold the sort key it is listed under);
//     CountBy declines and counts through the listing. noam:"lookup,table"
//     keeps the strongly consistent index table. EnsureIndexes creates the
//     GSIs (with the table, or one UpdateTable each on a table that exists)
//     and waits until they are ACTIVE; the build of a lookup new to the
//     data (runtime/evolve.go, Repair) writes the attributes on the blocks
//     written before, one conditional UpdateItem each, and the schema
//     record keeps the lookup's form (runtime.Caps.LookupForms), so that a
//     lookup moved from the index table to a GSI is built anew.
//     Hot partitions: all items of one lookup share one GSI partition key
//     value, as they share the index table's p today, so one lookup's
//     index writes land on one GSI partition key (DynamoDB throttles a key
//     at about 1,000 write units a second, and a throttled GSI throttles
//     the table's writes; it may split the key's items by sort key under
//     load, which it does not promise). Spreading them over N keys would
//     make every ordered read N Queries merged: not done.
//   - The other lookups live in one index table per collection, "<collection>__index",
//     with the lookup's name as the partition key (p, S) and the index key
//     (k, B: the value for a unique lookup, the value followed by the block
//     key otherwise) as the sort key, so that every lookup read is a Query
//     in (value, block key) order. The table is kept right without
//     transactions by the lookup engine, runtime/index (new index items
//     before the block, stale ones removed after, reads verify and skip
//     stale items, Repair), over the primitives of primitives.go: see
//     lookups.go and RELIABILITY.md. Where the endpoint has transactions
//     (Options.Transactions), a write that claims or releases unique
//     values is instead one TransactWriteItems of the block and its index
//     items (tx.go).
//   - Counters (noam:"id,counter") are items of the table "noam_counters",
//     bumped with UpdateItem ADD. The blocks of a scoped counter are also
//     index items (lookup ScopeLookup, sort key the block key), so that
//     ListBy<Scope> is one Query in number order whatever the gaps.
//   - Schema records (runtime/evolve.go): the layout EnsureIndexes
//     recorded for a collection is one item of the table "_noam_schema"
//     (after the prefix; SchemaTable), keyed by the collection name (_id,
//     S), the record in rec (B), replaced by a conditional PutItem.
//     Blocks written in another layout (ETF or EAO, a field whole or
//     partitioned) read right; an entry-level write checks the layout in
//     its own ConditionExpression and fails with runtime.ErrLayout, or
//     converts the block in the same request; MigrateBlocks rewrites them
//     (evolve.go).
//   - Limits: an item holds 400 KB (MaxItemBytes), an index key 1,024
//     bytes (MaxIndexKeyBytes); larger writes fail with runtime.ErrTooLarge
//     and change nothing.
//
// DynamoDB cannot order a table scan by partition key: List and All read
// every block once, in the table's own (hash) order (Caps.OrderedScan is
// false).
//
// Single-table design (Options.SingleTable, single.go): every collection
// opened with the option, their index items, counters and schema records
// are items of one table keyed by the generic attributes _pk and _sk (B).
// A block's _pk is the first component of its block key and its _sk the
// collection's name followed by the other components, so that the blocks
// whose keys start with another block's key (a post's comments, keyed by
// the post and a number) share its partition: one Query reads the post
// and its comments. Index items, counters and schema records have
// partition keys of their own (0x01 and a tuple: no block key is one).
// GSI lookups share the overloaded GSIs gsi1, gsi2, ... (_gsi<i>pk: the
// collection and the lookup; _gsi<i>sk: the index key). Every block
// carries _c, its collection's name: List, All, Count, Migrate and Repair
// Scan the whole table and keep the collection's items, so they read (and
// are billed for) every item of the table. The requests, their number and
// their atomicity are those of a table per collection.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
)

// Attribute names the adapter uses itself (entry keys cannot be these).
const (
	IDAttr   = "_id"
	RootAttr = "_root"
	LenAttr  = "_len"
	SeqAttr  = "_seq"
	IncAttr  = "_inc"
	// WriteAttr holds the token of the last write of a block (each
	// write records a fresh one), so that an update the SDK resent after
	// a lost reply is recognized as applied, not applied twice, and
	// Migrate's conditional rewrite finds any write since it read the
	// block.
	WriteAttr = layout.W
)

// MaxItemBytes is DynamoDB's item size limit.
const MaxItemBytes = 400 * 1024

// CountersTable names the table of the counters of enumerable keys.
const CountersTable = "noam_counters"

// SchemaTable names the table of the schema records (runtime.SchemaRecord,
// one item per collection: _id the collection name, rec the record), after
// Options.TablePrefix.
const SchemaTable = "_noam_schema"

// IndexTable names the index table of a collection.
func IndexTable(collection string) string { return collection + "__index" }

// Options configure an adapter. They are a runtime.Option, so that a
// generated constructor takes them in the one list of options it passes
// to Open and to runtime.NewRepo.
type Options struct {
	// TablePrefix is put before every table name ("prod_" makes
	// "prod_Game", "prod_Game__index", "prod_noam_counters").
	TablePrefix string
	// Transactions says whether a write that claims or releases unique
	// values is one TransactWriteItems (tx.go): TxAuto (the default)
	// where the endpoint has them, TxOn, TxOff (the protocol).
	Transactions Tx
	// IndexTables keeps every lookup in the index table, strongly
	// consistent, also those that are global secondary indexes by
	// default (gsi.go). Endpoints that cannot add a GSI to a table that
	// exists (dynalite ignores UpdateTable's GlobalSecondaryIndexUpdates)
	// need it for lookups added to a collection that holds data.
	IndexTables bool
	// SingleTable, when set, names the one table (after TablePrefix)
	// that holds every collection opened with these options, their
	// index items, counters and schema records, with the generic key
	// attributes _pk and _sk and overloaded GSIs (single.go): the
	// single-table design.
	SingleTable string
	// SingleTableGSIs is the least number of overloaded GSIs
	// EnsureIndexes creates the single table with (it creates as many as
	// the collection needs when it needs more, and adds those a table
	// that exists lacks, which dynalite cannot).
	SingleTableGSIs int
}

// RepoOption makes Options a runtime.Option.
func (Options) RepoOption() {}

// CheckTableName says why DynamoDB refuses the table name t ("" when it
// takes it): 3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'. The
// rule lives in the declaration package, which the generator links too.
func CheckTableName(t string) string { return layout.CheckTableName(t) }

// tooLarge reports DynamoDB's refusal of an item over 400 KB.
func tooLarge(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" {
		m := strings.ToLower(ae.ErrorMessage())
		return strings.Contains(m, "size") && strings.Contains(m, "exceeded")
	}
	return false
}

// invalidPath reports DynamoDB's refusal of an update expression whose
// document path the item does not have (SET f[i] where f is missing):
// the request wrote nothing.
func invalidPath(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" {
		return strings.Contains(strings.ToLower(ae.ErrorMessage()), "document path provided in the update expression is invalid")
	}
	return false
}

// condFailed reports a failed ConditionExpression.
func condFailed(err error) bool {
	var ce *types.ConditionalCheckFailedException
	return errors.As(err, &ce)
}

// ambiguous reports an error that leaves a write's outcome unknown: the
// request may have been applied though no reply came back.
func ambiguous(err error) bool {
	var ae smithy.APIError
	return !errors.As(err, &ae)
}

// tableExists reports CreateTable's refusal of an existing table.
func tableExists(err error) bool {
	var ae *types.ResourceInUseException
	return errors.As(err, &ae)
}

// wrap makes an *Error of a store failure, typed when it is a size limit.
func wrap(op, agg string, id any, err error) error {
	var re *runtime.Error
	if errors.As(err, &re) {
		return err
	}
	if tooLarge(err) {
		return runtime.FailAt(op, agg, id, fmt.Sprintf("(DynamoDB items hold at most %d bytes)", MaxItemBytes), runtime.ErrTooLarge, err)
	}
	return runtime.Fail(op, agg, id, nil, err)
}

// names and values build expression attribute names and values.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder of attribute name n.
func (e *expr) name(n string) string {
	for k, v := range e.names {
		if v == n {
			return k
		}
	}
	k := fmt.Sprintf("#n%d", len(e.names))
	e.names[k] = n
	return k
}

// value returns the placeholder of a value.
func (e *expr) value(v types.AttributeValue) string {
	k := fmt.Sprintf(":v%d", len(e.values))
	e.values[k] = v
	return k
}

func (e *expr) namesOrNil() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// keyKind is how block keys are stored.
type keyKind uint8

const (
	keyBytes keyKind = iota // B: the tuple encoding
	keyInt                  // N
	keyUint                 // N
)

func kindOf[K any]() keyKind {
	switch reflect.TypeFor[K]().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return keyInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return keyUint
	}
	return keyBytes
}

// attrType is the key attribute's type.
func (k keyKind) attrType() types.ScalarAttributeType {
	if k == keyBytes {
		return types.ScalarAttributeTypeB
	}
	return types.ScalarAttributeTypeN
}

// Ensure helpers.

// createTable creates a table (on-demand billing) unless it exists.
func createTable(ctx context.Context, c *dynamodb.Client, name string, keys ...types.AttributeDefinition) error {
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest, AttributeDefinitions: keys}
	for i, k := range keys {
		kt := types.KeyTypeHash
		if i > 0 {
			kt = types.KeyTypeRange
		}
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: k.AttributeName, KeyType: kt})
	}
	if _, err := c.CreateTable(ctx, in); err != nil && !tableExists(err) {
		return err
	}
	return waitActive(ctx, c, name)
}

// waitActive waits until table name is ACTIVE.
func waitActive(ctx context.Context, c *dynamodb.Client, name string) error {
	delay := 20 * time.Millisecond
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) {
				return err
			}
		} else if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// backoff sleeps before attempt i of a write that lost a race.
func backoff(ctx context.Context, i int) error {
	if i == 0 {
		return ctx.Err()
	}
	d := time.Duration(rand.Int64N(int64(min(i, 20))*int64(time.Millisecond)) + 1)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// NotReady names the tables EnsureIndexes creates when err is DynamoDB's
// ResourceNotFoundException (a request on a table that does not exist), so
// that runtime.Repo fails with runtime.ErrNotReady (runtime.ReadyChecker).
func (s *Store[T, K]) NotReady(err error) string {
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		return ""
	}
	tables := []string{s.table}
	for _, t := range []string{s.index, s.counters, s.schema} {
		if t != "" && t != s.table {
			tables = append(tables, t)
		}
	}
	if len(tables) == 1 {
		return "DynamoDB table " + tables[0]
	}
	return "a DynamoDB table of " + strings.Join(tables, ", ")
}
