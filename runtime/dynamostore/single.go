package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
)

// Single-table design (Options.SingleTable; package doc). Every
// collection of the options, its index items, counters and schema
// records are items of one table whose primary key is the generic pair
// _pk (partition key, B) and _sk (sort key, B):
//
//   - a block: _pk the first component of its block key in the tuple
//     encoding (runtime.KeyCodec), _sk the collection's name (a string
//     component) followed by the other components; so a Hotel keyed h1 is
//     (h1, "Hotel") and a Room keyed (h1, 3) is (h1, "Room" 3), and one
//     Query of _pk = h1 reads the hotel and its rooms. It also carries _c
//     (S, the collection's name): List, All, Count, Migrate and Repair
//     Scan the whole table and keep the items whose _c is the
//     collection's (the server reads, and bills, every item of the
//     table). The blocks of one counter scope (a key (post, n)) share
//     their scope's partition in number order, so ListBy<scope> is one
//     strongly consistent Query of it (readScope) and the single table
//     holds no scope items.
//   - the adapter's own items have a _pk that starts with the byte 0x01,
//     which starts no tuple component (0x02 to 0x04), so that no block
//     key can name them: an index item is (0x01 ‖ tuple("index",
//     collection, lookup), the index key), a counter (0x01 ‖
//     tuple("counter", collection) ‖ scope, 0x01), a schema record
//     (0x01 ‖ tuple("schema"), tuple(collection)).
//   - GSI lookups share overloaded GSIs gsi1, gsi2, ...: the i-th GSI
//     lookup of a collection is the i-th GSI, its partition key _gsi<i>pk
//     (B: tuple(collection, lookup)) and its sort key _gsi<i>sk (B: the
//     index key, as _gk_<lookup> holds it in the table of a collection).
//     The table has as many as the collection with the most needs, or
//     Options.SingleTableGSIs when more: EnsureIndexes creates the table
//     with them, or adds those it lacks with UpdateTable (which dynalite
//     ignores: there, give SingleTableGSIs the number the package needs,
//     so that the first EnsureIndexes creates them all).

// Attributes of the single table.
const (
	// PKAttr and SKAttr are the table's partition and sort key (B).
	PKAttr = layout.SinglePK
	SKAttr = layout.SingleSK
	// CollAttr holds the collection's name on every block item.
	CollAttr = layout.SingleColl
)

// SingleGSIName names the i-th (from 1) overloaded GSI of the single
// table; SingleGSIAttrs are its partition and sort key attributes.
func SingleGSIName(i int) string { return layout.SingleGSIName(i) }

// SingleGSIAttrs returns the key attributes of the i-th overloaded GSI.
func SingleGSIAttrs(i int) (pk, sk string) { return layout.SingleGSIAttrs(i) }

// own is the partition key of an item of the adapter's own: 0x01 and the
// tuple of parts.
func own(parts ...string) []byte {
	b := []byte{1}
	for _, p := range parts {
		b = runtime.AppendString(b, p)
	}
	return b
}

// firstLen is the length of the first component of an encoded tuple
// (len(b) when it cannot tell: a key of one component).
func firstLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case 0x02: // string: up to the 0x00 not followed by 0xFF
		for i := 1; i < len(b); i++ {
			if b[i] != 0 {
				continue
			}
			if i+1 < len(b) && b[i+1] == 0xFF {
				i++
				continue
			}
			return i + 1
		}
	case 0x03, 0x04: // integers: 8 bytes
		if len(b) >= 9 {
			return 9
		}
	}
	return len(b)
}

// SingleBlockKey returns the primary key, in the single table, of the
// block of collection whose encoded block key (runtime.KeyCodec) is blk.
func SingleBlockKey(collection string, blk []byte) map[string]types.AttributeValue {
	n := firstLen(blk)
	sk := runtime.AppendString(make([]byte, 0, len(collection)+2+len(blk)-n), collection)
	return map[string]types.AttributeValue{
		PKAttr: &types.AttributeValueMemberB{Value: blk[:n:n]},
		SKAttr: &types.AttributeValueMemberB{Value: append(sk, blk[n:]...)},
	}
}

// SingleIndexKey returns the primary key, in the single table, of index
// item k (the index key) of lookup of collection.
func SingleIndexKey(collection, lookup string, k []byte) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PKAttr: &types.AttributeValueMemberB{Value: own("index", collection, lookup)},
		SKAttr: &types.AttributeValueMemberB{Value: k},
	}
}

// single is the state of a store in the single table.
type single struct {
	coll []byte // the collection's name, a string component: _sk's prefix
	gsis int    // Options.SingleTableGSIs
}

// keyAt is the primary key of the block whose KeyAttr is av.
func (s *Store[T, K]) keyAt(av types.AttributeValue) map[string]types.AttributeValue {
	if s.one == nil {
		return map[string]types.AttributeValue{IDAttr: av}
	}
	b, _ := av.(*types.AttributeValueMemberB)
	if b == nil {
		return map[string]types.AttributeValue{}
	}
	return SingleBlockKey(s.d.Collection, b.Value)
}

// idAttr is the KeyAttr of the block whose item is item (nil when it has
// none, or when it is not a block of the collection).
func (s *Store[T, K]) idAttr(item map[string]types.AttributeValue) types.AttributeValue {
	if s.one == nil {
		return item[IDAttr]
	}
	pk, _ := item[PKAttr].(*types.AttributeValueMemberB)
	sk, _ := item[SKAttr].(*types.AttributeValueMemberB)
	if pk == nil || sk == nil || len(sk.Value) < len(s.one.coll) || string(sk.Value[:len(s.one.coll)]) != string(s.one.coll) {
		return nil
	}
	return &types.AttributeValueMemberB{Value: append(append(make([]byte, 0, len(pk.Value)+len(sk.Value)), pk.Value...), sk.Value[len(s.one.coll):]...)}
}

// keyName is the name of a key attribute every item of the block table
// has (attribute_exists: the item exists).
func (s *Store[T, K]) keyName() string {
	if s.one == nil {
		return IDAttr
	}
	return PKAttr
}

// indexKey is the primary key of index item k of the lookup named name.
func (s *Store[T, K]) indexKey(name string, k []byte) map[string]types.AttributeValue {
	if s.one == nil {
		return map[string]types.AttributeValue{
			"p": &types.AttributeValueMemberS{Value: name},
			"k": &types.AttributeValueMemberB{Value: k},
		}
	}
	return SingleIndexKey(s.d.Collection, name, k)
}

// indexPart returns the partition key attribute of the index items and
// its value for the lookup named name; indexSort the sort key attribute.
func (s *Store[T, K]) indexPart(name string) (string, types.AttributeValue) {
	if s.one == nil {
		return "p", &types.AttributeValueMemberS{Value: name}
	}
	return PKAttr, &types.AttributeValueMemberB{Value: own("index", s.d.Collection, name)}
}

func (s *Store[T, K]) indexSort() string {
	if s.one == nil {
		return "k"
	}
	return SKAttr
}

// counterItem is the key of the counter of scope, and the length of its
// partition key.
func (s *Store[T, K]) counterItem(scope []byte) (map[string]types.AttributeValue, int) {
	if s.one == nil {
		v := fmt.Sprintf("%s:%x", s.d.Collection, scope)
		return map[string]types.AttributeValue{IDAttr: &types.AttributeValueMemberS{Value: v}}, len(v)
	}
	pk := append(own("counter", s.d.Collection), scope...)
	return map[string]types.AttributeValue{PKAttr: &types.AttributeValueMemberB{Value: pk}, SKAttr: &types.AttributeValueMemberB{Value: []byte{1}}}, len(pk)
}

// schemaKey is the key of the collection's schema record.
func (s *Store[T, K]) schemaKey() map[string]types.AttributeValue {
	if s.one == nil {
		return map[string]types.AttributeValue{IDAttr: &types.AttributeValueMemberS{Value: s.d.Collection}}
	}
	return map[string]types.AttributeValue{
		PKAttr: &types.AttributeValueMemberB{Value: own("schema")},
		SKAttr: &types.AttributeValueMemberB{Value: s.one.coll},
	}
}

// gsiNumber is the position (from 1) of GSI lookup l among the store's.
func (s *Store[T, K]) gsiNumber(l *runtime.Lookup[T]) int {
	for i, x := range s.gsis {
		if x == l || x.Name == l.Name {
			return i + 1
		}
	}
	return 0
}

// gsiPart returns the partition key attribute of GSI lookup l's index and
// its value.
func (s *Store[T, K]) gsiPart(l *runtime.Lookup[T]) (string, types.AttributeValue) {
	if s.one == nil {
		return GSIPartAttr, &types.AttributeValueMemberS{Value: s.d.Collection}
	}
	pk, _ := SingleGSIAttrs(s.gsiNumber(l))
	return pk, &types.AttributeValueMemberB{Value: runtime.AppendString(runtime.AppendString(nil, s.d.Collection), l.Name)}
}

// gsiSort is the sort key attribute of GSI lookup l's index, which holds
// the block's index key.
func (s *Store[T, K]) gsiSort(l *runtime.Lookup[T]) string {
	if s.one == nil {
		return GSIKeyPrefix + l.Name
	}
	_, sk := SingleGSIAttrs(s.gsiNumber(l))
	return sk
}

// gsiIndex names the GSI of lookup l.
func (s *Store[T, K]) gsiIndex(l *runtime.Lookup[T]) string {
	if s.one == nil {
		return GSIName(l.Name)
	}
	return SingleGSIName(s.gsiNumber(l))
}

// ownAttr reports whether attribute a is the adapter's own key or GSI
// attribute of the table layout (not an entry).
func (s *Store[T, K]) ownAttr(a string) bool {
	if s.one == nil {
		return false
	}
	switch a {
	case PKAttr, SKAttr, CollAttr:
		return true
	}
	for i := range s.singleGSIs() {
		if pk, sk := SingleGSIAttrs(i + 1); a == pk || a == sk {
			return true
		}
	}
	return false
}

// singleGSIs is the number of overloaded GSIs the table has.
func (s *Store[T, K]) singleGSIs() int { return max(len(s.gsis), s.one.gsis) }

// scan limits a Scan of the block table to the collection's blocks, in
// the single table (FilterExpression _c = the collection, after the
// filter in has).
func (s *Store[T, K]) scan(in *dynamodb.ScanInput) *dynamodb.ScanInput {
	if s.one == nil {
		return in
	}
	if in.ExpressionAttributeNames == nil {
		in.ExpressionAttributeNames = map[string]string{}
	}
	if in.ExpressionAttributeValues == nil {
		in.ExpressionAttributeValues = map[string]types.AttributeValue{}
	}
	in.ExpressionAttributeNames["#noamc"] = CollAttr
	in.ExpressionAttributeValues[":noamc"] = &types.AttributeValueMemberS{Value: s.d.Collection}
	f := "#noamc = :noamc"
	if in.FilterExpression != nil {
		f += " AND (" + *in.FilterExpression + ")"
	}
	in.FilterExpression = aws.String(f)
	return in
}

// checkSingleKey fails with runtime.ErrTooLarge, before anything is
// sent, when block id's sort key in the single table (the collection's
// name and the key components after the first) would exceed DynamoDB's
// 1,024-byte sort key limit.
func (s *Store[T, K]) checkSingleKey(op string, id K) error {
	if s.one == nil {
		return nil
	}
	blk := s.d.Keys.Bytes(id)
	if n := len(s.one.coll) + len(blk) - firstLen(blk); n > MaxIndexKeyBytes {
		return runtime.TooLarge(op, s.d.Aggregate, id, fmt.Sprintf("a sort key of %d bytes in the single table", n), fmt.Sprintf("DynamoDB's %d-byte sort key limit", MaxIndexKeyBytes))
	}
	return nil
}

// pageLimit is the Limit of a Scan of List and All that wants n more
// blocks: n, but none in the single table, whose other collections' items
// would use it up (Limit counts the items read, not those the filter
// keeps), so that a page stays one request: the server reads up to 1 MB
// of the table, and the blocks past the page are dropped.
func (s *Store[T, K]) pageLimit(n int) *int32 {
	if s.one != nil {
		return nil
	}
	return aws.Int32(int32(n))
}

// keyDefs are the block table's key attributes and its key schema.
func (s *Store[T, K]) keyDefs() ([]types.AttributeDefinition, []types.KeySchemaElement) {
	if s.one == nil {
		return []types.AttributeDefinition{{AttributeName: aws.String(IDAttr), AttributeType: s.kind.attrType()}},
			[]types.KeySchemaElement{{AttributeName: aws.String(IDAttr), KeyType: types.KeyTypeHash}}
	}
	return []types.AttributeDefinition{{AttributeName: aws.String(PKAttr), AttributeType: types.ScalarAttributeTypeB}, {AttributeName: aws.String(SKAttr), AttributeType: types.ScalarAttributeTypeB}},
		[]types.KeySchemaElement{{AttributeName: aws.String(PKAttr), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(SKAttr), KeyType: types.KeyTypeRange}}
}

// gsiDefs are the attribute definitions and GSIs the block table has.
func (s *Store[T, K]) gsiDefs() ([]types.AttributeDefinition, []types.GlobalSecondaryIndex) {
	gsi := func(name, pk, sk string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	var defs []types.AttributeDefinition
	var gsis []types.GlobalSecondaryIndex
	if s.one == nil {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(GSIPartAttr), AttributeType: types.ScalarAttributeTypeS})
		for _, l := range s.gsis {
			defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(GSIKeyPrefix + l.Name), AttributeType: types.ScalarAttributeTypeB})
			gsis = append(gsis, gsi(GSIName(l.Name), GSIPartAttr, GSIKeyPrefix+l.Name))
		}
		return defs, gsis
	}
	for i := range s.singleGSIs() {
		pk, sk := SingleGSIAttrs(i + 1)
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeB},
			types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeB})
		gsis = append(gsis, gsi(SingleGSIName(i+1), pk, sk))
	}
	return defs, gsis
}

// ensureSingle is Ensure in the single table: the table, with its GSIs,
// and its time to live.
func (s *Store[T, K]) ensureSingle(ctx context.Context) error {
	if why := CheckTableName(s.table); why != "" {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(table %q: %s; choose another Options.SingleTable)", s.table, why), runtime.ErrInvalid, nil)
	}
	if n := s.singleGSIs(); n > MaxSingleGSIs {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(%d global secondary indexes: a DynamoDB table has at most %d)", n, MaxSingleGSIs), runtime.ErrInvalid, nil)
	}
	if err := s.refuseTablePerCollection(ctx); err != nil {
		return err
	}
	err := s.ensureBlockTable(ctx)
	if err == nil {
		err = s.ensureTTL(ctx)
	}
	if err == nil && hasUnique(s.lookups) {
		_, err = s.Transactions(ctx)
	}
	if err != nil {
		return wrap("EnsureIndexes", s.d.Aggregate, nil, err)
	}
	return nil
}

// MaxSingleGSIs is DynamoDB's limit of global secondary indexes a table.
const MaxSingleGSIs = 20

// singleKeyAttr is KeyAttr in the single table: the tuple encoding of
// every key, integers too (B), so that its first component is _pk.
func (s *Store[T, K]) singleKeyAttr(id K) types.AttributeValue {
	return &types.AttributeValueMemberB{Value: s.d.Keys.Bytes(id)}
}

// readScope is ReadScope in the single table. The blocks of one counter
// scope share a partition (_pk: the scope's first component) and their
// sort keys are the collection's name, the scope's other components and
// the number, so the scope is one range of the partition in number
// order: one strongly consistent Query from number after+1 to the scope's
// end, whose items are the blocks themselves. No scope items are written
// in the single table (Open), so nothing can be stale and there is no
// second read.
func (s *Store[T, K]) readScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) ([]*T, int64, bool, error) {
	prefix, _ := s.d.Counter.Split(scope)
	from := s.d.Keys.Bytes(s.d.Counter.With(scope, max(after+1, 1)))
	p := firstLen(prefix)
	to := runtime.TupleEnd(prefix)[p:]
	if desc {
		// From the highest number, or the one below after: BETWEEN is
		// inclusive, and numbers are whole.
		from = s.d.Keys.Bytes(s.d.Counter.With(scope, 1))
		if after == 1 {
			return nil, 0, false, nil
		}
		if after > 1 {
			to = s.d.Keys.Bytes(s.d.Counter.With(scope, after-1))[p:]
		}
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": PKAttr, "#sk": SKAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberB{Value: prefix[:p:p]},
			":lo": &types.AttributeValueMemberB{Value: append(slices.Clip(s.one.coll), from[p:]...)},
			":hi": &types.AttributeValueMemberB{Value: append(slices.Clip(s.one.coll), to...)},
		},
		ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(!desc),
	}
	var items []*T
	number := func(t *T) int64 {
		_, k := s.d.Counter.Split(*s.d.ID(t))
		return k
	}
	for {
		in.Limit = aws.Int32(int32(min(n+1-len(items), 1000)))
		out, err := s.c.Query(ctx, in)
		if err != nil {
			return nil, 0, false, wrap(op, s.d.Aggregate, nil, err)
		}
		for _, item := range out.Items {
			t, err := s.decode(item)
			if err != nil {
				if len(items) == n {
					return items, number(items[n-1]), true, nil // the next page's
				}
				// The blocks before it, and its number to resume after.
				id, _ := s.keyOf(s.idAttr(item))
				_, k := s.d.Counter.Split(id)
				return items, k, true, runtime.Unreadable(op, s.d.Aggregate, id, err)
			}
			items = append(items, t)
		}
		if len(items) > n || len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last int64
	if len(items) > 0 {
		last = number(items[len(items)-1])
	}
	return items, last, more, nil
}

// refuseTablePerCollection fails with runtime.ErrLayout when the
// collection's blocks are in the table a table-per-collection deployment
// keeps them in (Options without SingleTable: the table named after the
// collection, after TablePrefix) and that table holds an item: the single
// table would serve the collection as empty while they stay there. One
// Scan of one item; a missing or empty table is no error. Moving is the
// application's step, said in the error.
func (s *Store[T, K]) refuseTablePerCollection(ctx context.Context) error {
	own := s.prefix + s.d.Collection
	if own == s.table {
		return nil
	}
	out, err := s.c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(own), Limit: aws.Int32(1)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(looking for blocks in table %s, the collection's table without Options.SingleTable)", own), nil, err)
	}
	if len(out.Items) == 0 && len(out.LastEvaluatedKey) == 0 {
		return nil
	}
	return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf(
		"(collection %s holds blocks in table %s, a table per collection, and this repository keeps it in the single table %s (Options.SingleTable), which would serve it as empty: nothing was created. Keep serving without SingleTable, or move the collection: with both repositories over the client, page through the old one's List and write each page with the new one's PutMany (blocks keep their keys and versions; run EnsureIndexes of the new one first with a prefix where %s does not exist, or empty it), then delete tables %s and %s)",
		s.d.Collection, own, s.table, own, own, IndexTable(s.d.Collection)), runtime.ErrLayout, nil)
}
