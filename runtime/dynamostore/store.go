package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Store is the DynamoDB adapter of the store contract for aggregate class
// T with block keys K (see the package documentation for the mapping).
type Store[T any, K comparable] struct {
	// c is the client Open was given with the counting of round trips
	// (countTrips), which every request goes through; client is the one
	// Open was given.
	c, client *dynamodb.Client
	d         *runtime.Desc[T, K]
	table     string
	index     string // "" without lookups
	counters  string // "" without a counter
	prefix    string // Options.TablePrefix
	schema    string // the schema record table, SchemaTable after the prefix
	kind      keyKind
	// listy are the entry keys of the non-partitioned fields whose values
	// are lists (slices): fields an older layout may have partitioned.
	listy map[string]bool
	// lookups are the descriptor's lookups kept in the index table, and
	// for a scoped counter the scope index (scopeLookup); gsis are those
	// kept in global secondary indexes (gsi.go).
	lookups []*runtime.Lookup[T]
	gsis    []*runtime.Lookup[T]
	// forms are the GSI lookups' forms (runtime.Caps.LookupForms).
	forms map[string]string
	eng   *index.Engine[*T] // nil without lookups
	// now is the repository's clock (runtime.WithClock), for ReadElems of
	// an expired block.
	now func() time.Time
	tx  Tx // Options.Transactions
	// one is the single table's state (Options.SingleTable; nil: a
	// table per collection).
	one *single
}

// ScopeLookup names the index that lists the blocks of one counter scope
// (ListBy<Scope>) in number order: its index keys are the block keys, so
// that a scope is one range of sort keys. The name is no Go identifier,
// so no lookup of the model has it.
const ScopeLookup = "noam:scope"

var _ runtime.Store[struct{}, string] = (*Store[struct{}, string])(nil)

// Open returns the adapter of aggregate class d over client c: table
// d.Collection (after the prefix of the last Options in opts), its index
// table and the counters table. Of the runtime's options it takes the
// clock (runtime.WithClock).
func Open[T any, K comparable](c *dynamodb.Client, d *runtime.Desc[T, K], opts ...runtime.Option) *Store[T, K] {
	var o Options
	for _, x := range opts {
		if x, ok := x.(Options); ok {
			o = x
		}
	}
	s := &Store[T, K]{c: countTrips(c), client: c, d: d, table: o.TablePrefix + d.Collection, prefix: o.TablePrefix, schema: o.TablePrefix + SchemaTable, kind: kindOf[K](), now: runtime.NowFunc(opts), tx: o.Transactions}
	for _, l := range d.Lookups {
		if GSILookup(l) && !o.IndexTables {
			s.gsis = append(s.gsis, l)
			if s.forms == nil {
				s.forms = map[string]string{}
			}
			s.forms[l.Name] = layout.GSIForm
		} else {
			s.lookups = append(s.lookups, l)
		}
	}
	s.listy = d.Slices()
	if d.Counter != nil {
		var zero K
		// In the single table the blocks of a scope share a partition,
		// in number order (readScope): no scope items.
		if scope, _ := d.Counter.Split(zero); scope != nil && o.SingleTable == "" {
			s.lookups = append(slices.Clip(s.lookups), &runtime.Lookup[T]{
				Name: ScopeLookup, Parts: 0,
				Values: func(*T) [][]byte { return [][]byte{{}} },
			})
		}
	}
	if len(s.lookups) > 0 {
		s.index = o.TablePrefix + IndexTable(d.Collection)
		s.eng = s.engine()
	}
	if d.Counter != nil {
		s.counters = o.TablePrefix + CountersTable
	}
	if o.SingleTable != "" {
		s.one = &single{coll: runtime.AppendString(nil, d.Collection), gsis: o.SingleTableGSIs}
		s.table, s.schema = o.TablePrefix+o.SingleTable, o.TablePrefix+o.SingleTable
		if s.index != "" {
			s.index = s.table
		}
		if s.counters != "" {
			s.counters = s.table
		}
	}
	return s
}

// Client returns the DynamoDB client.
func (s *Store[T, K]) Client() *dynamodb.Client { return s.client }

// Table returns the name of the aggregate table.
func (s *Store[T, K]) Table() string { return s.table }

// Caps declares what DynamoDB promises: its item, partition key and sort
// key limits, checked before every write, and the lookups kept in global
// secondary indexes (gsi.go).
func (s *Store[T, K]) Caps() runtime.Caps {
	return runtime.Caps{Name: "dynamo", System: "aws.dynamodb", OrderedScan: false, AtomicLookups: false, MaxValueBytes: MaxItemBytes, MaxKeyBytes: MaxKeyBytes, MaxIndexKeyBytes: MaxIndexKeyBytes, MaxDepth: MaxDepth, LookupForms: s.forms}
}

// MaxDepth is the deepest nesting of documents and arrays of an entry's
// value (runtime.Caps.MaxDepth): DynamoDB nests attribute values at most
// 32 levels, an element of a partition lies in a list attribute, and a
// value kept as raw BSON (a NaN, say) is one map more (32 - 2). Deeper
// writes fail with runtime.ErrTooLarge before anything is sent, also on
// dynalite, which has no limit.
const MaxDepth = 30

// Ensure creates the tables (on-demand billing), the schema record table
// among them, and waits until they are active; tables that exist are left
// as they are.
func (s *Store[T, K]) Ensure(ctx context.Context) error {
	if s.one != nil {
		return s.ensureSingle(ctx)
	}
	for _, t := range []string{s.table, s.index, s.counters, s.schema} {
		if why := CheckTableName(t); t != "" && why != "" {
			return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(table %q: %s; choose a longer collection=NAME or set Options.TablePrefix)", t, why), runtime.ErrInvalid, nil)
		}
	}
	err := s.ensureBlockTable(ctx)
	if err == nil && s.index != "" {
		err = createTable(ctx, s.c, s.index,
			types.AttributeDefinition{AttributeName: aws.String("p"), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeB})
	}
	if err == nil && s.counters != "" {
		err = createTable(ctx, s.c, s.counters, types.AttributeDefinition{AttributeName: aws.String(IDAttr), AttributeType: types.ScalarAttributeTypeS})
	}
	if err == nil {
		err = createTable(ctx, s.c, s.schema, types.AttributeDefinition{AttributeName: aws.String(IDAttr), AttributeType: types.ScalarAttributeTypeS})
	}
	if err == nil {
		err = s.ensureTTL(ctx)
	}
	if err == nil && hasUnique(s.lookups) {
		// Whether writes of unique values are transactions (tx.go).
		_, err = s.Transactions(ctx)
	}
	if err != nil {
		return wrap("EnsureIndexes", s.d.Aggregate, nil, err)
	}
	return nil
}

// ---- keys

// KeyAttr is the partition key attribute of block id.
func (s *Store[T, K]) KeyAttr(id K) types.AttributeValue {
	if s.one != nil {
		return s.singleKeyAttr(id)
	}
	switch s.kind {
	case keyInt:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(reflect.ValueOf(id).Int(), 10)}
	case keyUint:
		return &types.AttributeValueMemberN{Value: strconv.FormatUint(reflect.ValueOf(id).Uint(), 10)}
	}
	return &types.AttributeValueMemberB{Value: s.d.Keys.Bytes(id)}
}

// keyOf decodes a partition key attribute.
func (s *Store[T, K]) keyOf(av types.AttributeValue) (K, error) {
	var k K
	switch a := av.(type) {
	case *types.AttributeValueMemberN:
		v := reflect.ValueOf(&k).Elem()
		switch s.kind {
		case keyInt:
			n, err := strconv.ParseInt(a.Value, 10, 64)
			if err != nil || v.OverflowInt(n) {
				return k, fmt.Errorf("block key %q: not a key of this table", a.Value)
			}
			v.SetInt(n)
			return k, nil
		case keyUint:
			n, err := strconv.ParseUint(a.Value, 10, 64)
			if err != nil || v.OverflowUint(n) {
				return k, fmt.Errorf("block key %q: not a key of this table", a.Value)
			}
			v.SetUint(n)
			return k, nil
		}
	case *types.AttributeValueMemberB:
		if s.kind == keyBytes || s.one != nil {
			return s.readKey(a.Value)
		}
	}
	return k, fmt.Errorf("block key %v: not a key of this table", av)
}

// readKey decodes an encoded block key, all of it.
func (s *Store[T, K]) readKey(b []byte) (K, error) {
	r := runtime.NewKeyReader(b)
	k, err := s.d.Keys.Read(r)
	if err == nil && !r.Done() {
		err = errors.New("trailing bytes")
	}
	return k, err
}

func (s *Store[T, K]) key(id K) map[string]types.AttributeValue {
	return s.keyAt(s.KeyAttr(id))
}

// ---- items

// item is the item of block t with the given version (and, for an
// aggregate with lookups, stamp st).
func (s *Store[T, K]) item(t *T, version int64, st *index.Stamp) (map[string]types.AttributeValue, error) {
	item := s.key(*s.d.ID(t))
	if s.one != nil {
		item[CollAttr] = &types.AttributeValueMemberS{Value: s.d.Collection}
	}
	if s.d.EAO {
		v, err := Encode(s.d.Root.Value(t))
		if err != nil {
			return nil, fmt.Errorf("root entry: %w", err)
		}
		item[RootAttr] = v
	}
	lens := map[string]types.AttributeValue{}
	for _, f := range s.d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			n := f.Len(t)
			l := make([]types.AttributeValue, n)
			for i := range n {
				v, err := Encode(f.Elem(t, i))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.ElemKey(i), err)
				}
				l[i] = v
			}
			item[f.Key] = &types.AttributeValueMemberL{Value: l}
			lens[f.Key] = num(int64(n))
		case !s.d.EAO:
			v, err := Encode(f.Value(t))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Key, err)
			}
			item[f.Key] = v
		}
	}
	if len(lens) > 0 {
		item[LenAttr] = &types.AttributeValueMemberM{Value: lens}
	}
	if s.d.Version != nil {
		item[s.d.Version.Key] = num(version)
	}
	if s.d.Expires != nil {
		if v := ttl(s.d.ExpiresAt(t)); v != nil {
			item[TTLAttr] = v
		}
	}
	if st != nil {
		item[SeqAttr] = num(st.Seq)
		item[IncAttr] = num(st.Inc)
	}
	// A fresh write token: every write of a block changes it (see
	// MigrateBlocks).
	item[WriteAttr] = &types.AttributeValueMemberS{Value: token.New()}
	s.gsiAttrs(item, t)
	return item, nil
}

// decode turns an item into an aggregate; attributes of removed entries
// and the adapter's own are skipped. It reads every layout (README
// "Changing a model"): under ETF, the members of a root entry (an EAO
// block) are decoded into the fields by key, before the entries of their
// own; under EAO, fields stored as entries of their own (an ETF block) are
// decoded as such; a partition stored whole (no count, or inside a root
// entry) is decoded whole, and a field partitioned (a list with a count)
// is decoded as the list it is.
func (s *Store[T, K]) decode(item map[string]types.AttributeValue) (*T, error) {
	id, err := s.keyOf(s.idAttr(item))
	if err != nil {
		return nil, err
	}
	t := s.d.New(id)
	var dec decoder
	rav, hasRoot := item[RootAttr]
	root, _ := rav.(*types.AttributeValueMemberM)
	if hasRoot && s.d.Root != nil {
		// First: it sets every field it holds, present or not.
		dec.av = rav
		if err := s.d.Root.Decode(t, &dec); err != nil {
			return nil, err
		}
	} else if root != nil {
		for k, av := range root.Value {
			if _, own := item[k]; own {
				continue // an entry of its own too: it is read below
			}
			if f := s.d.Field(k); f != nil {
				dec.av = av
				if err := f.Decode(t, &dec); err != nil {
					return nil, err
				}
			}
		}
	}
	for k, av := range item {
		dec.av = av
		switch k {
		case IDAttr, LenAttr, SeqAttr, IncAttr, WriteAttr, RootAttr, TTLAttr:
			continue
		}
		if s.ownAttr(k) {
			continue
		}
		f := s.d.Field(k)
		if f == nil {
			continue
		}
		if f.Kind != runtime.KindPartition {
			if s.d.Root != nil && root != nil && root.Value[k] != nil {
				continue // in the root entry too, which is the layout's
			}
			if err := f.Decode(t, &dec); err != nil {
				return nil, err
			}
			continue
		}
		l, ok := av.(*types.AttributeValueMemberL)
		if !ok {
			// A whole slice of another layout (null for a nil slice).
			if err := f.Decode(t, &dec); err != nil {
				return nil, err
			}
			continue
		}
		f.Reset(t, len(l.Value))
		for _, e := range l.Value {
			dec.av = e
			if err := f.AppendDecoded(t, &dec); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range s.d.Partitions() {
		if _, ok := item[f.Key]; ok {
			continue
		}
		if root != nil && s.d.Root != nil { // (under ETF: read above)
			if av, ok := root.Value[f.Key]; ok {
				// Whole inside the root entry of an EAO block.
				dec.av = av
				if err := f.Decode(t, &dec); err != nil {
					return nil, err
				}
				continue
			}
		}
		if root == nil || s.d.Root != nil || root.Value[f.Key] == nil {
			f.Reset(t, 0)
		}
	}
	return t, nil
}

// checkSize fails with ErrTooLarge before writing an item DynamoDB would
// refuse.
func (s *Store[T, K]) checkSize(op string, id K, item map[string]types.AttributeValue) error {
	if n := itemSize(item); n > MaxItemBytes {
		return runtime.FailAt(op, s.d.Aggregate, id, fmt.Sprintf("(the item would hold %d bytes; DynamoDB items hold at most %d)", n, MaxItemBytes), runtime.ErrTooLarge, nil)
	}
	return nil
}

// getItem reads block id's item (nil if there is none), strongly
// consistent.
func (s *Store[T, K]) getItem(ctx context.Context, id K, proj string, e *expr) (map[string]types.AttributeValue, error) {
	in := &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: s.key(id), ConsistentRead: aws.Bool(true)}
	if proj != "" {
		in.ProjectionExpression = aws.String(proj)
		in.ExpressionAttributeNames = e.namesOrNil()
	}
	out, err := s.c.GetItem(ctx, in)
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Get reads block id.
func (s *Store[T, K]) Get(ctx context.Context, id K) (*T, error) {
	item, err := s.getItem(ctx, id, "", nil)
	if err != nil {
		return nil, wrap("Get", s.d.Aggregate, id, err)
	}
	if item == nil {
		return nil, runtime.Fail("Get", s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	t, err := s.decode(item)
	if err != nil {
		return nil, runtime.Unreadable("Get", s.d.Aggregate, id, err)
	}
	return t, nil
}

// GetMany reads the blocks with the given keys with BatchGetItem, 100
// keys a request, retrying unprocessed keys.
func (s *Store[T, K]) GetMany(ctx context.Context, ids []K) (map[K]*T, error) {
	out, err := s.getMany(ctx, "GetMany", ids)
	if err != nil {
		return nil, wrap("GetMany", s.d.Aggregate, nil, err)
	}
	return out, nil
}

func (s *Store[T, K]) getMany(ctx context.Context, op string, ids []K) (map[K]*T, error) {
	out := make(map[K]*T, len(ids))
	seen := make(map[K]bool, len(ids))
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, s.key(id))
		}
	}
	for len(keys) > 0 {
		n := min(len(keys), MaxBatch)
		items, err := s.batchGet(ctx, s.table, keys[:n])
		if err != nil {
			return nil, err
		}
		keys = keys[n:]
		for _, item := range items {
			t, err := s.decode(item)
			if err != nil {
				id, _ := s.keyOf(s.idAttr(item))
				return nil, runtime.Unreadable(op, s.d.Aggregate, id, err)
			}
			out[*s.d.ID(t)] = t
		}
	}
	return out, nil
}

// ---- counters

func (s *Store[T, K]) counterKey(id K) (map[string]types.AttributeValue, int64) {
	scope, n := s.d.Counter.Split(id)
	key, _ := s.counterItem(scope)
	return key, n
}

// allocate bumps the counter of id's scope with an atomic ADD and returns
// the number (allocateMany of one).
func (s *Store[T, K]) allocate(ctx context.Context, op string, id K) (int64, error) {
	return s.allocateMany(ctx, op, id, 1)
}

// raise moves the counter of id's scope up to id's number.
func (s *Store[T, K]) raise(ctx context.Context, op string, id K) error {
	key, n := s.counterKey(id)
	if n <= 0 {
		return nil
	}
	_, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.counters), Key: key,
		UpdateExpression:          aws.String("SET #n = :n"),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(n)},
	})
	if err != nil && !condFailed(err) {
		return wrap(op, s.d.Aggregate, id, err)
	}
	return nil
}

// fitsBeforeCounter checks what write will check of t's sizes (the
// counter's item name, the item, the index keys) before its counter moves,
// so that a write too large changes no counter either. Numbers encode in
// a fixed width: number 1 stands for the one to be allocated.
func (s *Store[T, K]) fitsBeforeCounter(op string, t *T) error {
	id := *s.d.ID(t)
	if err := s.checkCounter(op, id); err != nil {
		return err
	}
	c := *t
	if _, n := s.d.Counter.Split(id); n == 0 {
		*s.d.ID(&c) = s.d.Counter.With(id, 1)
	}
	item, err := s.item(&c, 1, nil)
	if err != nil {
		return nil // write reports it
	}
	if err := s.checkSize(op, id, item); err != nil {
		return err
	}
	return s.checkValues(op, *s.d.ID(&c), &c)
}

// withCounter runs write for a counter-keyed aggregate: with a zero
// counted number, on numbers allocated from the scope's counter until one
// is free (write fails with ErrDuplicate); with an explicit number, after
// raising the counter to it.
func (s *Store[T, K]) withCounter(ctx context.Context, op string, t *T, write func(*T) error) error {
	id := *s.d.ID(t)
	if err := s.fitsBeforeCounter(op, t); err != nil {
		return err
	}
	if _, n := s.d.Counter.Split(id); n != 0 {
		if err := s.raise(ctx, op, id); err != nil {
			return err
		}
		return write(t)
	}
	scope, _ := s.d.Counter.Split(id)
	_, err := runtime.AllocateKey(ctx, runtime.Allocation[K]{
		Op: op, Agg: s.d.Aggregate, Counter: runtime.FormatKey(scope),
		Next:   func(ctx context.Context) (int64, error) { return s.allocate(ctx, op, id) },
		With:   func(n int64) K { return s.d.Counter.With(id, n) },
		Number: func(id K) int64 { _, n := s.d.Counter.Split(id); return n },
		Try: func(ctx context.Context, id K) (bool, error) {
			c := *t
			*s.d.ID(&c) = id
			if err := write(&c); err != nil {
				// In use by a block with an explicit number: the next one.
				return errors.Is(err, runtime.ErrDuplicate) && s.exists(ctx, id), err
			}
			*t = c
			return false, nil
		},
	})
	return err
}

// exists reports whether block id exists (false when it cannot tell).
func (s *Store[T, K]) exists(ctx context.Context, id K) bool {
	e := newExpr()
	item, err := s.getItem(ctx, id, e.name(s.keyName()), e)
	return err == nil && item != nil
}
