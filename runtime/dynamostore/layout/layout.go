// Package layout declares, as data, how runtime/dynamostore lays out
// blocks in DynamoDB and what each repository operation sends (package
// runtime/access). It imports no driver: the generator and `noamgen
// explain` read it; the conformance suite counts the requests the adapter
// sends and compares them with it.
package layout

import (
	"fmt"

	"github.com/noamgen/noamgen/runtime/access"
)

// Names the adapter uses (dynamostore.IndexTable, CountersTable,
// ScopeLookup and the attributes).
const (
	Index    = "$coll__index"
	Counters = "noam_counters"
	Schema   = "_noam_schema"
	Scope    = "noam:scope"
	ID       = "_id"
	Root     = "_root"
	Len      = "_len"
	Seq      = "_seq"
	Inc      = "_inc"
	// W holds the token of a block's last write (each write records a
	// fresh one).
	W = "_w"
	// GSIPart and GSIKeyPrefix+lookup are the key attributes of the
	// global secondary index of a non-unique lookup (GSIName); GSIForm
	// is the form the schema record gives such a lookup
	// (runtime.LookupLayout.Native).
	GSIPart      = "_gp"
	GSIKeyPrefix = "_gk_"
	GSIForm      = "gsi"
)

// GSIName names the global secondary index of lookup l.
func GSIName(l string) string { return "gsi_" + l }

// The single table's key attributes and the collection attribute of its
// blocks (dynamostore.Options.SingleTable).
const (
	SinglePK   = "_pk"
	SingleSK   = "_sk"
	SingleColl = "_c"
)

// SingleGSIName names the i-th (from 1) overloaded GSI of the single
// table.
func SingleGSIName(i int) string { return fmt.Sprintf("gsi%d", i) }

// SingleGSIAttrs returns the partition and sort key attributes of the
// i-th overloaded GSI of the single table.
func SingleGSIAttrs(i int) (pk, sk string) {
	return fmt.Sprintf("_gsi%dpk", i), fmt.Sprintf("_gsi%dsk", i)
}

// Limits (runtime.Caps): an item, a partition key, a sort key of the
// index table; AppendPast is the element index a single-request append
// writes past.
const (
	MaxItemBytes     = 400 * 1024
	MaxKeyBytes      = 2048
	MaxIndexKeyBytes = 1024
	AppendPast       = 1 << 16
)

// The deployments whose requests differ (access.Store.Modes): writes of
// unique values run the lookup protocol (an endpoint without
// transactions: dynalite; or dynamostore.TxOff), or are one
// TransactWriteItems (dynamostore.Options.Transactions).
const (
	Protocol     access.Mode = "protocol"
	Transactions access.Mode = "transactions"
)

const (
	one      = "one item: the block is read or written whole, atomically"
	each     = "each block is read whole (not a snapshot across blocks)"
	protocol = "the block write is atomic; index items are added before it and removed after it (not atomic with it: a crash leaves stale items, which reads skip and Repair removes)"
	bump     = "[?updated:, $updated][?version:, ADD $version 1]"
)

var (
	counter = access.Step{When: access.HasCounter, N: 1, Op: "UpdateItem " + Counters + " {ADD n 1} when the key is 0, else {SET n = max} (a request of its own)"}
	read    = access.Step{N: 1, Op: "GetItem $coll {_id} (ConsistentRead: indexed attributes, version, _seq, _inc)"}
	gained  = access.Step{N: 1, Per: access.PerGained, Op: "PutItem " + Index + " per index item the block gains (attribute_not_exists(k) for a unique value)"}
	lost    = access.Step{N: 1, Per: access.PerLost, Op: "DeleteItem " + Index + " per index item the block loses"}
	guarded = " (on condition of _seq and _inc)"
	// nativeRead is Update's read of a block whose GSI lookup it changes
	// in part (in both deployments: no index item is involved).
	nativeRead = access.Step{N: 1, When: access.WritesNative, Per: access.IfNativePartial, Op: "GetItem $coll {_id} (ConsistentRead) when they touch no indexed entry but set some, not all, fields of a GSI lookup"}
	// txAtomic is what a write of unique values does atomically.
	txAtomic = "transactions: the block and its index items together, all or nothing (the protocol for a write of more than 100 items, or one that meets a stale claim); protocol: "
	// tx is the one request of a write of unique values with transactions.
	tx = func(block string) access.Step {
		return access.Step{Mode: Transactions, N: 1, Op: "TransactWriteItems [" + block + "; Put " + Index + " per index item the block gains (a unique value on condition attribute_not_exists(k) or that it is this block's); Delete " + Index + " per index item it loses (a unique value on condition that it is this block's or gone)] with a ClientRequestToken"}
	}
)

// batchTx is the transactions' step of a batch write of an aggregate
// without a counter (runtime/dynamostore/txbatch.go): what each item
// writes, then its reads (after the transaction of the items it follows)
// where one cannot tell why it failed.
func batchTx(item string) access.Step {
	return access.Step{Mode: Transactions, N: 1, Per: access.Per100Actions, Op: "TransactWriteItems of the items' writes, each " + item + ", up to 100 actions a request with a ClientRequestToken (a key given twice, or two items writing one index item, go in later requests in slice order; the items of a cancelled transaction that did not fail go again in a new one; an item failed for a reason its condition cannot tell is then its single call)"}
}

// countersMoved are the counter requests of a CreateMany or PutMany
// with a counter: each scope moved once for the batch.
var countersMoved = []access.Step{
	{N: 1, Per: access.PerScope, Op: "UpdateItem " + Counters + " {ADD n by the scope's items to allocate} on condition it stays within the largest number; they take the numbers up to the result in slice order"},
	{N: 1, Per: access.PerScopeGiven, Op: "UpdateItem " + Counters + " {SET n = max} per scope whose items give numbers"}}

// putRead and putTx are the requests of a PutMany in transactions.
var (
	putRead = access.Step{Mode: Transactions, N: 1, Per: access.Per100Keys, Op: "BatchGetItem $coll (the blocks, 100 keys a request), as the single calls read them, with index tables or a created timestamp"}
	putTx   = batchTx("its Put's: Put $coll {the whole item} on its Put's condition (the version, the created timestamp as read; with index tables _seq and _inc as read), with the Puts and Deletes of the index items it gains and loses (claims on condition attribute_not_exists(k) or that they are this block's)")
)

// batchRead is the read of the blocks of a batch that replaces or
// removes them, with transactions.
var batchRead = access.Step{Mode: Transactions, N: 1, Per: access.Per100Keys, Op: "BatchGetItem $coll (the blocks, 100 keys a request), as the single calls read them"}

// inProtocol limits steps to the protocol deployment.
func inProtocol(steps ...access.Step) []access.Step {
	out := make([]access.Step, len(steps))
	for i, p := range steps {
		p.Mode = Protocol
		out[i] = p
	}
	return out
}

// both is the steps of a write of unique values: common, then the
// protocol's steps or the transaction.
func both(common []access.Step, protocol []access.Step, block string) []access.Step {
	out := append(append([]access.Step{}, common...), inProtocol(protocol...)...)
	return append(out, tx(block))
}

// Store is the DynamoDB declaration.
var Store = &access.Store{
	Name: "dynamo", Title: "DynamoDB", KeyStyle: access.KeyAttribute, ScopeItems: true, Modes: []access.Mode{Protocol, Transactions},
	Names:    access.Names{Index: Index, Counter: Counters},
	Elements: 2,
	// Non-unique lookups of one value per block, without the table
	// option, are global secondary indexes of the block table.
	NativeLookup: func(l access.Lookup) bool { return !l.Unique && !l.Table && !l.Multi },
	NativeName:   "a global secondary index", NativeEventual: true,
	NativeIndex: func(l access.Lookup) access.Index {
		return access.Index{Keys: []string{GSIPart, GSIKeyPrefix + l.Name}, Options: []string{"global secondary index " + GSIName(l.Name), "projection ALL", "sparse", "eventually consistent"}}
	},
	Summary: `Table "$coll" (after the optional dynamostore.Options.TablePrefix) holds one item per block (NoAM Fig. 5): the partition key _id is the block key (N for an integer key, B holding the order-preserving encoding of a string or composite key), and every entry is an attribute of its own in native attribute values (S, N, BOOL, M, L, NULL); a partitioned field is a list attribute written element by element, its length in the map _len.`,
	Containers: []access.Container{
		{When: access.ETF, Kind: "table", Name: "$coll", Role: "blocks", Key: "partition key _id; item {_id: <block key>, $allFields[?parts:, _len: M][?indexed:, _seq, _inc]}", Example: "{_id: $block, ...}"},
		{When: access.EAO, Kind: "table", Name: "$coll", Role: "blocks", Key: "partition key _id; item {_id: <block key>, _root: M[?ownFields:, $ownFields][?parts:, _len: M][?indexed:, _seq, _inc]}", Example: "{_id: $block, ...}"},
		{Each: "lookup", Kind: "table", Name: Index, Role: "index table of lookup $lookup", Key: "partition key p = \"$lookup\", sort key k = B(lookup value[?shared: ‖ block key]); item {p, k, id: <block key>, inc, s, w}", Example: "{p: \"$lookup\", k: B($indexKey), id: $block, ...}"},
		{When: access.Scoped, Kind: "table", Name: Index, Role: "scope items of the counter (ListBy<scope>)", Key: "partition key p = \"" + Scope + "\", sort key k = B(block key)", Example: "{p: \"" + Scope + "\", k: B($key), id: $block}"},
		{When: access.HasCounter, Kind: "table", Name: Counters, Role: "counters", Key: "partition key _id = <collection>[:scope]; item {_id, n: <last number allocated>}", Example: "{_id: \"$coll\", n: <n>}"},
		{Kind: "table", Name: Schema, Role: "schema records (the layout EnsureIndexes recorded)", Key: "partition key _id = <collection>; item {_id, rec: B (runtime.SchemaRecord as JSON)}", Example: "{_id: \"$coll\", rec: B(...)}"},
	},
	Block: []access.Stored{
		{Key: ID, Value: "$block"},
		{When: access.EAO, Key: Root, Entry: "ε", Value: "M {$fields}"},
		{When: access.ETF, Each: "field", Key: "$entry", Entry: "$entry", Value: "<$type>"},
		{Each: "partition", Key: "$entry", Entry: "$entry[0], $entry[1]", Value: "L [<$elem>, <$elem>]"},
		{Each: "version", Key: "$entry", Entry: "$entry", Value: "N (the version)"},
		{Each: "partition", Key: Len + ".$entry", Entry: "$entry", Value: "N $n (the element count)"},
		{When: access.Indexed, Key: Seq, Value: "N (write sequence of the lookup protocol)"},
		{When: access.Indexed, Key: Inc, Value: "N (incarnation of the lookup protocol)"},
		{Key: W, Value: "S (token of the block's last write: a resent update finds it applied, Migrate's rewrite finds any write since it read the block)"},
	},
	Notes: []access.Note{
		{Text: "A write of one block is one request on one item (PutItem, UpdateItem, DeleteItem) whose ConditionExpression checks the version (and the element index or count) and bumps it: atomic without transactions."},
		{When: access.Indexed, Text: "Index items live in another table: without transactions a write adds the items its new state gains before the block write (conditional PutItem, attribute_not_exists(k) for unique values) and removes the lost ones after it; reads verify items against their blocks and skip stale ones, Repair rebuilds them (RELIABILITY.md). All items of one lookup share the partition key p: one lookup's traffic is one partition's (README, hot partitions)."},
		{When: access.Indexed, Text: "Where the endpoint has transactions (dynamostore.Options.Transactions: auto, the default, detects them once per client with a TransactGetItems; dynalite has none), a write that claims or releases unique values is one TransactWriteItems of the block write (its usual condition) and its index items (claims on condition attribute_not_exists(k)), with a ClientRequestToken so that a resend is not applied twice: no stale items, nothing to verify or repair. A write of more than 100 items, or one that meets a stale claim left by the protocol, runs the protocol."},
		{When: access.HasNative, Text: "Non-unique lookups of one value per block (no path through a slice, no table option) are global secondary indexes gsi_<lookup> of the block table: the item carries " + GSIPart + " (S, the collection's name; the GSI's partition key) and " + GSIKeyPrefix + "<lookup> (B, lookup value ‖ block key; the sort key), written in the block's own request (atomic with it), left out when the lookup indexes no value (sparse). GSIs are eventually consistent: a ListBy may miss a block just written or return it as it was. One lookup's entries share one partition key value, so its writes land on one GSI partition (hot partition: see the package doc). noam:\"lookup,table\" keeps a strongly consistent index table."},
		{Text: "An item (the whole block: attribute names and values) is at most 409600 bytes (400 KB); a block key (the partition key) at most 2048 bytes; an index key (the sort key: the value, and the block key for a non-unique lookup) at most 1024 bytes. Larger writes fail with runtime.ErrTooLarge before anything is sent."},
		{Text: "List and All read every block once in the table's own (hash) order, not in block-key order (Caps.OrderedScan false)."},
		{Text: "A block written in another layout (ETF or EAO, a field whole or partitioned) reads right. Put rewrites the item whole in the current layout; an entry-level write checks the layout in its own ConditionExpression (attribute_not_exists(_root) for an ETF field, _len for a partition's elements) and fails with runtime.ErrLayout writing nothing, or converts the block in the same request (an EAO root write REMOVEs the ETF attributes, a partition written whole gets its count). Migrate rewrites old blocks, each with one PutItem on condition that the item still holds the write token (_w) it read (a block written before tokens existed gets one first)."},
	},
	ClearExpired: clearExpired,
	Costs: []access.Cost{
		{Methods: []access.Method{access.Get}, Atomic: one, Steps: []access.Step{{N: 1, Op: "GetItem $coll {_id: $block} (ConsistentRead)"}}},
		{Methods: []access.Method{access.GetMany}, Atomic: each, Steps: []access.Step{{N: 1, Per: access.Per100Keys, Op: "BatchGetItem $coll (100 keys per request, unprocessed keys retried)"}, {N: 1, Per: access.PerRetry}}},
		{Methods: []access.Method{access.List}, Desc: "refused with runtime.ErrUnsupported: a Scan has no key order (runtime.Caps.OrderedScan is false)", Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Scan $coll {ExclusiveStartKey: the cursor's block key, Limit: n+1} (table order, not block-key order; the server may stop a Scan at 1 MB)"}}},
		{Methods: []access.Method{access.All}, Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Scan $coll page by page"}}},
		{Methods: []access.Method{access.ListScope}, Desc: "the Query with ScanIndexForward: false, below the cursor", Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + Index + " {p = \"" + Scope + "\", k between the scope's keys}"}, {N: 1, Per: access.PerPage, Op: "BatchGetItem $coll (the page's blocks)"}}},
		{Methods: []access.Method{access.CountScope}, Atomic: "not atomic: as ListScope, pages of 256 blocks, every block read (index items may be stale, so their number alone is not the count)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + Index + " {p = \"" + Scope + "\", k between the scope's keys} after the last block counted"}, {N: 1, Per: access.PerPage, Op: "BatchGetItem $coll (the page's blocks)"}}},
		{Methods: []access.Method{access.ListElems}, Desc: "the same GetItem projecting $field[i], $field[i-1], …; a first page reads the count with a GetItem of its own first (one more request)", Atomic: "each request reads one item version", Steps: []access.Step{{N: 1, Per: access.Per100Elements, Op: "GetItem $coll {_id} ProjectionExpression " + Len + ".$field, $field[i], ..., $field[i+n] (100 elements per request)"}}},

		{Methods: []access.Method{access.CreateMany}, When: access.NoCounter, Atomic: "each item as its Create; the items are not atomic together (the failed ones are reported, the others written)",
			Steps: append(inProtocol(access.Step{N: 1, Per: access.PerItemCall, Op: "each item's Create (a conditional write, which BatchWriteItem cannot send), 8 at a time when the order cannot matter (distinct keys, no unique lookup), in order otherwise"}),
				batchTx("its Create's: Put $coll {the whole item} attribute_not_exists(_id), with the Puts of its index items (claims on condition attribute_not_exists(k))"))},
		{Methods: []access.Method{access.CreateMany}, Atomic: "each item as its Create; the items are not atomic together (the failed ones are reported, the others written); each counter moves by a request of its own before the writes (a failed write leaves its number unused)",
			Steps: append(append([]access.Step{}, countersMoved...),
				append(inProtocol(access.Step{N: 1, Per: access.PerItemWrite, Op: "each item's Create with its key (a conditional write, which BatchWriteItem cannot send), 8 at a time when the order cannot matter (distinct keys, no unique lookup), in order otherwise"}),
					batchTx("its Create's: Put $coll {the whole item} attribute_not_exists(_id), with the Puts of its index items (claims on condition attribute_not_exists(k))"),
					access.Step{Op: "an item whose number is in use (given before) or whose counter cannot move: its single Create, after the batch"})...)},
		{Methods: []access.Method{access.PutMany}, When: access.NotIndexed | access.NoVersion | access.NoCounter | access.HasCreated, Atomic: "each item as its Put; the items are not atomic together (the failed ones are reported, the others written)",
			Steps: append(inProtocol(access.Step{N: 1, Per: access.PerItemCall, Op: "each item's Put (it reads $created first), 8 at a time when the keys are distinct, in order otherwise"}),
				batchRead, batchTx("its Put's: Put $coll {the whole item} on condition of $created as read"))},
		{Methods: []access.Method{access.PutMany}, When: access.NotIndexed | access.NoVersion | access.NoCounter, Atomic: "each item is one put request; the items are not atomic together (the failed ones are reported, the others written)",
			Steps: []access.Step{{N: 1, Per: access.Per25Items, Op: "BatchWriteItem $coll: PutRequest {the whole item} per item, 25 a request (a key at most once per request: a key given again goes in a later one)"},
				{N: 1, Per: access.PerRetry, Op: "BatchWriteItem of the unprocessed items, with backoff, until the context ends"}}},
		{Methods: []access.Method{access.PutMany}, When: access.NoCounter, Atomic: "each item as its Put; the items are not atomic together (the failed ones are reported, the others written)",
			Steps: append(inProtocol(access.Step{N: 1, Per: access.PerItemCall, Op: "each item's Put (a conditional write or the index protocol, which BatchWriteItem cannot send), 8 at a time when the order cannot matter (distinct keys, no unique lookup), in order otherwise"}),
				putRead, putTx)},
		{Methods: []access.Method{access.PutMany}, Atomic: "each item as its Put; the items are not atomic together (the failed ones are reported, the others written); each counter moves by a request of its own before the writes (a failed write leaves its number unused)",
			Steps: append(append([]access.Step{}, countersMoved...),
				append(inProtocol(access.Step{N: 1, Per: access.PerItemWrite, Op: "each item's Put with its key, the number allocated to a zero one (a conditional write or the index protocol, which BatchWriteItem cannot send), 8 at a time when the order cannot matter (distinct keys, no unique lookup), in order otherwise"}),
					putRead, putTx,
					access.Step{Op: "an item whose allocated number is in use (given before) or whose counter cannot move: its single Put, after the batch"})...)},
		{Methods: []access.Method{access.DeleteMany}, When: access.NotIndexed, Atomic: "each item is one delete request; the items are not atomic together; a block deleted by another writer between the two requests counts as deleted",
			Steps: []access.Step{{N: 1, Per: access.Per100Keys, Op: "BatchGetItem $coll (the keys, 100 a request): a block missing fails with ErrNotFound"},
				{N: 1, Per: access.Per25Items, Op: "BatchWriteItem $coll: DeleteRequest {_id} per block found, 25 a request"},
				{N: 1, Per: access.PerRetry, Op: "BatchGetItem or BatchWriteItem of the unprocessed keys and items, with backoff, until the context ends"}}},
		{Methods: []access.Method{access.DeleteMany}, When: access.NoCounter, Atomic: "each item as its Delete; the items are not atomic together (the failed ones are reported, the others removed)",
			Steps: append(inProtocol(access.Step{N: 1, Per: access.PerItemCall, Op: "each item's Delete (it reads the block's index items first), 8 at a time when the keys are distinct, in order otherwise"}),
				batchRead, batchTx("its Delete's: Delete $coll {_id} on condition of _seq and _inc as read, with the Deletes of its index items"))},
		{Methods: []access.Method{access.DeleteMany}, Atomic: "each item as its Delete; the items are not atomic together (the failed ones are reported, the others removed)",
			Steps: []access.Step{{N: 1, Per: access.PerItemCall, Op: "each item's Delete (it reads the block's index items first), 8 at a time when the keys are distinct, in order otherwise"}}},
		{Methods: []access.Method{access.Create}, When: access.Indexed | access.WritesUnique, Atomic: txAtomic + protocol + "[?counted:; the counter's increment is a request of its own (a failed write leaves its number unused)]",
			Steps: both([]access.Step{counter}, []access.Step{gained, {N: 1, Op: "PutItem $coll {the whole item} attribute_not_exists(_id)" + guarded}}, "Put $coll {the whole item} attribute_not_exists(_id)")},
		{Methods: []access.Method{access.Create}, When: access.Indexed, Atomic: protocol + "[?counted:; the counter's increment is a request of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{counter, gained, {N: 1, Op: "PutItem $coll {the whole item} attribute_not_exists(_id)" + guarded}}},
		{Methods: []access.Method{access.Create}, Atomic: one + "[?counted:; the counter's increment is a request of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{counter, {N: 1, Op: "PutItem $coll {the whole item} attribute_not_exists(_id)"}}},
		{Methods: []access.Method{access.Put}, When: access.Writes | access.WritesUnique, Atomic: txAtomic + protocol,
			Steps: both([]access.Step{counter, read}, []access.Step{gained, {N: 1, Op: "PutItem $coll {the whole item}[?version: on condition $version = v (attribute_not_exists(_id) when v is 0)]" + guarded}, lost}, "Put $coll {the whole item}[?version: on condition $version = v (attribute_not_exists(_id) when v is 0)]"+guarded)},
		{Methods: []access.Method{access.Put}, When: access.Writes, Atomic: protocol,
			Steps: []access.Step{counter, read, gained, {N: 1, Op: "PutItem $coll {the whole item}[?version: on condition $version = v (attribute_not_exists(_id) when v is 0)]" + guarded}, lost}},
		{Methods: []access.Method{access.Put}, Atomic: one + "[?created:; the read of $created is retried while the block's changes in between]",
			Steps: []access.Step{counter, {When: access.HasCreated, N: 1, Op: "GetItem $coll {_id} ProjectionExpression $created (a block that exists keeps it)"}, {N: 1, Op: "PutItem $coll {the whole item}[?version: on condition $version = v (attribute_not_exists(_id) when v is 0)][?created: and $created as read]"}}},
		{Methods: []access.Method{access.Delete}, When: access.Indexed | access.WritesUnique, Atomic: "transactions: the item and its index items together, all or nothing (the protocol past 100 items); protocol: the item delete is atomic; its index items are removed after it",
			Steps: both([]access.Step{{N: 1, Op: "GetItem $coll {_id} (indexed attributes, _inc)"}}, []access.Step{{N: 1, Op: "DeleteItem $coll {_id} attribute_exists(_id)"}, {N: 1, Per: access.PerEntry, Op: "DeleteItem " + Index + " per index item of the block"}}, "Delete $coll {_id} attribute_exists(_id)"+guarded)},
		{Methods: []access.Method{access.Delete}, When: access.Indexed, Atomic: "the item delete is atomic; its index items are removed after it",
			Steps: []access.Step{{N: 1, Op: "GetItem $coll {_id} (indexed attributes, _inc)"}, {N: 1, Op: "DeleteItem $coll {_id} attribute_exists(_id)"}, {N: 1, Per: access.PerEntry, Op: "DeleteItem " + Index + " per index item of the block"}}},
		{Methods: []access.Method{access.Delete}, Atomic: one, Steps: []access.Step{{N: 1, Op: "DeleteItem $coll {_id} attribute_exists(_id)"}}},

		{Methods: []access.Method{access.Set}, When: access.Writes | access.WritesUnique, Atomic: txAtomic + protocol,
			Steps: both([]access.Step{read}, []access.Step{gained, {N: 1, Op: "UpdateItem $coll {SET $field" + bump + "} attribute_exists(_id)" + guarded}, lost}, "Update $coll {SET $field"+bump+"} attribute_exists(_id)"+guarded)},
		{Methods: []access.Method{access.SetAt}, When: access.Writes | access.WritesUnique, Atomic: txAtomic + protocol,
			Steps: both([]access.Step{read}, []access.Step{gained, {N: 1, Op: "UpdateItem $coll {SET $field[i]" + bump + "} on condition i < " + Len + ".$field" + guarded}, lost}, "Update $coll {SET $field[i]"+bump+"} on condition i < "+Len+".$field"+guarded)},
		{Methods: []access.Method{access.Update}, When: access.Writes | access.WritesUnique, Atomic: txAtomic + protocol + "; an update that changes no indexed entry is one UpdateItem, atomic",
			Steps: both([]access.Step{{N: 1, Per: access.IfIndexedChange, Op: read.Op + " when the changes touch an indexed entry"}, nativeRead}, []access.Step{gained, {N: 1, Op: "UpdateItem $coll {SET of the entries given" + bump + "} on condition the block exists[?version:, $version = v][?parts:, i < _len.f]" + guarded}, lost}, "Update $coll {SET of the entries given"+bump+"} on condition the block exists[?version:, $version = v][?parts:, i < _len.f]"+guarded)},
		{Methods: []access.Method{access.Append}, When: access.Writes | access.WritesUnique, Atomic: txAtomic + protocol,
			Steps: both([]access.Step{read}, []access.Step{gained, {N: 1, Op: "UpdateItem $coll {SET $field = list_append($field, [the new element]), " + Len + ".$field = n+1" + bump + "} on condition " + Len + ".$field = n (retried when another append came first)" + guarded}, lost}, "Update $coll {SET $field = list_append($field, [the new element]), "+Len+".$field = n+1"+bump+"} on condition "+Len+".$field = n"+guarded)},
		{Methods: []access.Method{access.Set}, When: access.Writes, Atomic: protocol, Steps: []access.Step{read, gained, {N: 1, Op: "UpdateItem $coll {SET $field" + bump + "} attribute_exists(_id)" + guarded}, lost}},
		{Methods: []access.Method{access.SetAt}, When: access.Writes, Atomic: protocol, Steps: []access.Step{read, gained, {N: 1, Op: "UpdateItem $coll {SET $field[i]" + bump + "} on condition i < " + Len + ".$field" + guarded}, lost}},
		{Methods: []access.Method{access.Update}, When: access.Writes, Atomic: protocol + "; an update that changes no indexed entry is one UpdateItem, atomic",
			Steps: []access.Step{{N: 1, Per: access.IfIndexedChange, Op: read.Op + " when the changes touch an indexed entry"}, nativeRead, gained, {N: 1, Op: "UpdateItem $coll {SET of the entries given" + bump + "} on condition the block exists[?version:, $version = v][?parts:, i < _len.f]" + guarded}, lost}},
		{Methods: []access.Method{access.Append}, When: access.Writes, Atomic: protocol,
			Steps: []access.Step{read, gained, {N: 1, Op: "UpdateItem $coll {SET $field = list_append($field, [the new element]), " + Len + ".$field = n+1" + bump + "} on condition " + Len + ".$field = n (retried when another append came first)" + guarded}, lost}},
		{Methods: []access.Method{access.Add}, Atomic: one, Steps: []access.Step{{N: 1, Op: "UpdateItem $coll {SET $field = if_not_exists($field, 0) + :delta" + bump + "} attribute_exists(_id) and $field (none: 0) within the range the sum needs, ReturnValues UPDATED_NEW"}}},
		{Methods: []access.Method{access.Set}, Atomic: one, Steps: []access.Step{{N: 1, When: access.WritesNative, Per: access.IfNativePartial, Op: "GetItem $coll {_id} (ConsistentRead) when a GSI lookup reads $field and other fields (its new sort key needs their values)"}, {N: 1, Op: "UpdateItem $coll {SET $field[?writesNative:, the GSI sort keys of the lookups of $field]" + bump + "} attribute_exists(_id)[?writesNative: and, after a read, the sort keys as read]"}}},
		{Methods: []access.Method{access.SetAt}, Atomic: one, Steps: []access.Step{{N: 1, Op: "UpdateItem $coll {SET $field[i]" + bump + "} on condition i < " + Len + ".$field"}}},
		{Methods: []access.Method{access.Update}, Atomic: one, Steps: []access.Step{{N: 1, When: access.WritesNative, Per: access.IfNativePartial, Op: "GetItem $coll {_id} (ConsistentRead) when the changes set some but not all fields of a GSI lookup"}, {N: 1, Op: "UpdateItem $coll {SET of the entries given[?writesNative:, the GSI sort keys of the lookups they change]" + bump + "} on condition the block exists[?version:, $version = v][?parts:, i < _len.f][?writesNative:, after a read the sort keys as read]"}}},
		{Methods: []access.Method{access.Append}, Atomic: "one conditional item write; a block written before the partition existed, or with more than 65536 elements, fails it and is appended to after a read of its count",
			Steps: []access.Step{{N: 1, Op: "UpdateItem $coll {SET $field[65536] = the new element (past the end: appended), " + Len + ".$field = " + Len + ".$field+1" + bump + "} on condition size($field) = " + Len + ".$field <= 65536, ReturnValues UPDATED_NEW (the new count: the index is one less)"},
				{N: 2, Per: access.IfAppendFallback, Op: "when refused: GetItem $coll (the count), then UpdateItem with list_append on condition of the count"}}},

		{Methods: []access.Method{access.GetBy}, Atomic: "not atomic: the index item is read, then its block, which must hold the value (a stale item is skipped)",
			Steps: []access.Step{{N: 1, Op: "GetItem " + Index + " {p: \"$lookup\", k: B(value)} (ConsistentRead)"}, {N: 1, Op: "GetItem $coll {_id: the item's id} (verifies that the block holds the value)"}}},
		{Methods: []access.Method{access.ListBy}, When: access.ByNative, Desc: "the Query with ScanIndexForward: false, before the cursor", Atomic: "eventually consistent (a GSI): each page is one Query, whose items are the blocks as the GSI has them; a block written just before may be missing or as it was, and each item is checked to hold its sort key",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query $coll IndexName " + GSIName("$lookup") + " {" + GSIPart + " = \"$coll\", " + GSIKeyPrefix + "$lookup in the query's range} (sort-key order: value, block key; projection ALL: the blocks themselves)"}}},
		{Methods: []access.Method{access.CountBy}, When: access.ByNative, Atomic: "eventually consistent, as ListBy: the count declines (a GSI's number of items may lag its blocks) and reads the matching blocks as ListBy does, in pages of 256",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query $coll IndexName " + GSIName("$lookup") + " {" + GSIPart + " = \"$coll\", " + GSIKeyPrefix + "$lookup in the query's range} after the last item counted"}}},
		{Methods: []access.Method{access.ListBy}, Desc: "the Query with ScanIndexForward: false, before the cursor", Atomic: "not atomic: items are read, then their blocks, and every block is checked to hold the value (stale items are skipped)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + Index + " {p = \"$lookup\", k in the query's range} (sort-key order: value, block key)"}, {N: 1, Per: access.PerPage, Op: "BatchGetItem $coll (the blocks of the page's items)"}, {N: 1, Per: access.PerStale, Op: "DeleteItem " + Index + " per stale item older than dynamostore.StaleAfter"}}},
		{Methods: []access.Method{access.Count}, When: access.NoExpires, Atomic: "each page on its own (a Scan is not a snapshot)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Scan $coll {Select: COUNT, ConsistentRead} per 1 MB of items (the server reads, and bills, the items; it returns their number)"}}},
		{Methods: []access.Method{access.Count}, Atomic: "each page on its own (a Scan is not a snapshot); the FilterExpression leaves out the items whose expires entry is set and not after the repository's clock (the server still reads them)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Scan $coll {Select: COUNT, ConsistentRead, FilterExpression: $expires not set, zero or after now} per 1 MB of items (the server reads, and bills, the items; it returns the number it keeps)"}}},
		{Methods: []access.Method{access.CountBy}, Atomic: "not atomic: as ListBy, pages of 256 items, every block checked to hold the value (index items may be stale, so their number alone is not the count)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + Index + " {p = \"$lookup\", k in the query's range} after the last item counted"}, {N: 1, Per: access.Per100Keys, Op: "BatchGetItem $coll (the blocks of the page's items)"}, {N: 1, Per: access.PerStale, Op: "DeleteItem " + Index + " per stale item older than dynamostore.StaleAfter"}}},
		{Methods: []access.Method{access.Migrate}, Atomic: "each block: one PutItem on condition that the item is unchanged since read; safe while the application writes",
			Steps: []access.Step{{N: 1, Per: access.PerMigrateBatch, Op: "Scan $coll from the position, up to the batch"}, {N: 1, Per: access.PerMigrated, Op: "PutItem $coll in the current layout on condition that every attribute is as read"}}},
		{Methods: []access.Method{access.Repair}, Atomic: "not atomic: each item is a request of its own",
			Steps: []access.Step{{N: 1, Per: access.PerRepairBatch, Op: "Scan $coll (the blocks' indexed attributes)"}, {Op: "Query " + Index + " per lookup", When: access.HasLookups}, {Op: "PutItem / DeleteItem " + Index + " for the missing and stale items", When: access.HasLookups}}},
		sweepIndexed, sweep,
		{Methods: []access.Method{access.Ensure}, Atomic: "each request on its own; safe to repeat",
			Steps: []access.Step{{N: 2, Per: access.PerTable, Op: "CreateTable $coll (on-demand billing[?native:, with the GSIs of the lookups that are GSIs]) when it does not exist, then DescribeTable until ACTIVE[?native: with its GSIs; on a table without them, one UpdateTable per GSI (GlobalSecondaryIndexUpdates Create) and DescribeTable until it is ACTIVE]"}, {When: access.HasLookups, Op: "the same for " + Index + " (partition key p: S, sort key k: B)"}, {When: access.HasCounter, Op: "the same for " + Counters}, {Op: "the same for " + Schema + " (partition key _id: S)"}, {When: access.HasLookups, Op: "with a unique lookup and dynamostore.Options.Transactions auto: once per client, a TransactGetItems of " + Schema + " (whether the endpoint has transactions)"}, {Op: "then (runtime.Repo) a GetItem of the collection's schema record and, when the layout changed, a PutItem of it on condition that it is still the one read"}}},
	},
}

// IndexTable is the index table of collection c (dynamostore.IndexTable).
func IndexTable(c string) string { return c + "__index" }

// CheckTableName says why DynamoDB refuses the table name t ("" when it
// takes it): 3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'
// (dynamostore.CheckTableName).
func CheckTableName(t string) string {
	if len(t) < 3 || len(t) > 255 {
		return fmt.Sprintf("DynamoDB table names have 3 to 255 characters, this one %d", len(t))
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("DynamoDB table names hold only a-z, A-Z, 0-9, '_', '-' and '.', not %q", r)
		}
	}
	return ""
}
