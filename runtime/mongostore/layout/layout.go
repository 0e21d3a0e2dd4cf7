// Package layout declares, as data, how runtime/mongostore lays out blocks
// in MongoDB and what each repository operation sends (package
// runtime/access). It imports no driver: the generator and `noamgen
// explain` read it; the conformance suite checks it against the commands
// the adapter sends.
//
// Lookups follow the default mapping: a lookup without the table
// option is a native secondary index of the aggregate's own collection,
// kept by the server in the write of the document; one with it
// (noam:"lookup,table") is an index-table collection kept by the lookup
// protocol.
package layout

import (
	"strings"

	"github.com/noamgen/noamgen/runtime/access"
)

// Names the adapter uses (mongostore.TableName, CountersCollection,
// LenKey, SeqKey, IncKey).
const (
	Table    = "$coll__$lookup"
	Counters = "noam_counters"
	Len      = "_len"
	Seq      = "_seq"
	Inc      = "_inc"
)

// MaxDocumentBytes is the largest document (runtime.Caps.MaxValueBytes).
const MaxDocumentBytes = 16 << 20

const one = "one document: the block is read or written whole, atomically"

const each = "each block is read whole (not a snapshot across blocks)"

const protocol = "the document write is atomic; index-table entries are added before it and removed after it (not atomic with it: a crash leaves stale entries, which reads skip and Repair removes)"

// batchProtocol is what is atomic in a batch write with index tables.
const batchProtocol = "each item as its single call's lookup protocol, run phase by phase for the whole batch (runtime/index CommitMany): each document write atomic, its index-table entries added before it and removed after it; the items are not atomic together (the failed ones are reported, the others written)"

var counter = access.Step{When: access.HasCounter, N: 1, Op: "findAndModify " + Counters + " {$inc n} when the key is 0 (again while numbers are in use), else update {$max n}"}

// Store is the MongoDB declaration.
var Store = &access.Store{
	Name: "mongo", Title: "MongoDB", Native: true, KeyStyle: access.KeyDocument,
	Names:    access.Names{Index: Table, Counter: Counters},
	Elements: 2,
	Summary:  `Collection "$coll" holds one document per block (NoAM Fig. 10): _id is the block key and every entry is a top-level field; a partitioned field is an array written element by element ($push, $set "f.i"), its length kept in _len.`,
	Containers: []access.Container{
		{Kind: "collection", Name: "$coll", Role: "blocks", Key: "{_id: <block key>, $allFields[?parts:, _len][?tables:, _seq, _inc]}", Example: "{_id: $block, ...}"},
		{Each: "lookup", Kind: "collection", Name: Table, Role: "index table of lookup $lookup", Key: "{_id: hex(lookup value[?shared: ‖ block key]), id: <block key>, inc: <incarnation>, s: <write sequence>, w: <attempt>}", Example: "{_id: hex($indexKey), id: $block, ...}"},
		{When: access.HasCounter | access.NotScoped, Kind: "collection", Name: Counters, Role: "counters", Key: "{_id: <collection>, n: <last number allocated>}", Example: `{_id: "$coll", n: <n>}`},
		{When: access.Scoped, Kind: "collection", Name: Counters, Role: "counters", Key: "{_id: <collection>:hex(scope), n: <last number allocated>}", Example: `{_id: "$coll:<hex of the scope>", n: <n>}`},
	},
	Block: []access.Stored{
		{Key: "_id", Value: "$block"},
		{When: access.ETF, Each: "field", Key: "$entry", Entry: "$entry", Value: "<$type>"},
		{When: access.EAO, Each: "field", Key: "$entry", Entry: "ε (part)", Value: "<$type>"},
		{Each: "partition", Key: "$entry", Entry: "$entry[0], $entry[1]", Value: "[<$elem>, <$elem>]"},
		{Each: "version", Key: "$entry", Entry: "$entry", Value: "int64 (the version)"},
		{Each: "partition", Key: Len + ".$entry", Entry: "$entry", Value: "$n (the element count)"},
		{When: access.HasTables, Key: Seq, Value: "int64 (write sequence of the lookup protocol)"},
		{When: access.HasTables, Key: Inc, Value: "int64 (incarnation of the lookup protocol)"},
	},
	NativeIndex: nativeIndex,
	NativeName:  "a native secondary index",
	Notes: []access.Note{
		{Text: "A write of one block is one command on one document, which MongoDB applies atomically (native index entries included)."},
		{When: access.EAO, Text: "Under EAO the root entry ε is the document's top-level fields, written together by Put."},
		{When: access.HasTables, Text: `Index tables (noam:"lookup,table") are other collections: without transactions a write adds the entries its new state gains before the document write and removes the lost ones after it; reads verify entries, Repair rebuilds them (RELIABILITY.md).`},
		{When: access.HasNative, Text: "Lookups without the table option are native secondary indexes (the default mapping): the server keeps them in the document's write."},
		{Text: "A document (the whole block) is at most 16777216 bytes (16 MiB, runtime.Caps.MaxValueBytes)."},
	},
	ClearExpired: clearExpired,
	Costs: []access.Cost{
		{Methods: []access.Method{access.Get}, Atomic: one, Steps: []access.Step{{N: 1, Op: "find $coll {_id: $block}"}}},
		{Methods: []access.Method{access.GetMany}, Atomic: each, Steps: []access.Step{{N: 1, Op: "find $coll {_id: {$in: ids}} (one batch)"}}},
		{Methods: []access.Method{access.List}, Desc: "find $coll {_id: {$lt: cursor}} sort {_id: -1}", Atomic: each, Steps: []access.Step{{N: 1, Op: "find $coll {_id: {$gt: cursor}} sort {_id: 1} limit n+1 (one batch)"}}},
		{Methods: []access.Method{access.All}, Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerBlocks, Op: "find $coll sort {_id: 1}, one find per 100 blocks"}}},
		{Methods: []access.Method{access.Count}, When: access.NoExpires, Atomic: "one command", Steps: []access.Step{{N: 1, Op: "countDocuments $coll {}"}}},
		{Methods: []access.Method{access.Count}, Atomic: "one command; the filter leaves out the documents whose expires time is set and not after the repository's clock",
			Steps: []access.Step{{N: 1, Op: "countDocuments $coll {$or: [{$expires: {$not: {$lte: now}}}, {$expires: zero time}]}"}}},
		{Methods: []access.Method{access.CountScope}, When: access.NoExpires, Atomic: "one command", Steps: []access.Step{{N: 1, Op: "countDocuments $coll {_id.<scope parts>: ..., _id.<counted part>: {$gt: 0}}"}}},
		{Methods: []access.Method{access.CountScope}, Atomic: "one command; the filter leaves out the documents whose expires time is set and not after the repository's clock",
			Steps: []access.Step{{N: 1, Op: "countDocuments $coll {$and: [{_id.<scope parts>: ..., _id.<counted part>: {$gt: 0}}, {$or: [{$expires: {$not: {$lte: now}}}, {$expires: zero time}]}]}"}}},
		{Methods: []access.Method{access.ListScope}, Desc: "{_id.<counted part>: {$lt: cursor}}, sorted by the counted part -1", Atomic: each, Steps: []access.Step{{N: 1, Op: "find $coll {_id.<scope parts>: ..., _id.<counted part>: {$gt: cursor}} sort by the counted part"}}},
		{Methods: []access.Method{access.ListElems}, Desc: "the same find with {$slice: [i-n, n+1]}, or {$slice: -(n+1)} on a first page", Atomic: "the page is read from one document version", Steps: []access.Step{{N: 1, Op: "find $coll {_id} projection {" + Len + ".$field, $field: {$slice: [i, n+1]}}"},
			{N: 1, Per: access.IfSliceRefused, Op: "on a server without $slice projections (FerretDB v1): find $coll {_id} projection {$field}, sliced by the adapter"}}},

		{Methods: []access.Method{access.CreateMany}, When: access.NoTables, Atomic: "each insert is atomic (native index entries included); the items are not atomic together (the failed ones are reported, the others written)" + countedMany,
			Steps: []access.Step{allocateMany, raiseMany, {N: 1, Op: "bulkWrite $coll ordered: insert {the whole document} per item (the driver splits it at the server's message size)"},
				{Op: "per item the server refuses (a key in use, a unique value taken): what names the value taken, as Create's, then a bulkWrite of the items after it"}, singleCreate}},
		{Methods: []access.Method{access.PutMany}, When: access.NoTables | access.HasCounter | access.HasVersion, Atomic: singlePuts + countedMany, Steps: countedPuts},
		{Methods: []access.Method{access.PutMany}, When: access.NoTables | access.HasCounter | access.HasCreated, Atomic: singlePuts + countedMany, Steps: countedPuts},
		{Methods: []access.Method{access.PutMany}, When: access.NoTables | access.HasVersion, Atomic: singlePuts,
			Steps: []access.Step{{N: 1, Per: access.PerItemCall, Op: "each item's Put, in order (a version, whose condition a bulkWrite of updates cannot report item by item on FerretDB v1)"}}},
		{Methods: []access.Method{access.PutMany}, When: access.NoTables | access.HasCreated, Atomic: singlePuts,
			Steps: []access.Step{{N: 1, Per: access.PerItemCall, Op: "each item's Put (it reads $created first), in order"}}},
		{Methods: []access.Method{access.PutMany}, When: access.NoTables, Atomic: "each replacement is atomic (native index entries included); the items are not atomic together (the failed ones are reported, the others written)" + countedMany,
			Steps: []access.Step{allocateMany, raiseMany, {N: 1, Op: "bulkWrite $coll ordered: replaceOne {_id} {the whole document} upsert per item[?counted:, insert per item whose number the counter gave] (the driver splits it at the server's message size)"},
				{Op: "per item the server refuses (a unique value taken): what names the value taken, as Put's, then a bulkWrite of the items after it"}, singleCreate}},
		{Methods: []access.Method{access.DeleteMany}, When: access.NoTables, Atomic: "one deleteMany, each document's delete atomic; the items are not atomic together; a block deleted by another writer between the two commands counts as deleted",
			Steps: []access.Step{{N: 1, Op: "find $coll {_id: {$in: ids}} projection {_id} (one batch): a block missing fails with ErrNotFound"},
				{N: 1, Op: "deleteMany $coll {_id: {$in: the blocks found}}"}}},
		{Methods: []access.Method{access.CreateMany}, When: access.HasTables, Atomic: batchProtocol + countedMany,
			Steps: []access.Step{allocateMany, raiseMany, {Each: true, N: 1, Per: access.IfGains, Op: "bulkWrite $index unordered: insert per new entry (an entry already there: the single write's claim)"},
				{N: 1, Op: "bulkWrite $coll unordered: insert {the whole document, stamped with _seq and _inc} per item"}, singleCreate}},
		{Methods: []access.Method{access.PutMany}, When: access.HasTables | access.NoCounter, Atomic: batchProtocol,
			Steps: []access.Step{{N: 1, Op: "find $coll {_id: {$in: ids}} projection {_seq, _inc[?version:, $version], the lookup fields}"},
				{Each: true, N: 1, Per: access.IfGains, Op: "bulkWrite $index unordered: insert per new entry (an entry already there: the single write's claim)"},
				{N: 1, Op: "bulkWrite $coll unordered: insert, or replaceOne {_id, _seq, _inc[?version:, $version]}, per item (read back with a find when fewer matched)"},
				{Each: true, N: 1, Per: access.IfLoses, Op: "bulkWrite $index unordered: deleteOne per entry lost"},
				{Op: "an item whose block changed since it was read: read and written again, in a later pass"}}},
		{Methods: []access.Method{access.DeleteMany}, When: access.HasTables, Atomic: batchProtocol,
			Steps: []access.Step{{N: 1, Op: "find $coll {_id: {$in: ids}} projection {_seq, _inc, the lookup fields}: a block missing fails with ErrNotFound"},
				{N: 1, Op: "bulkWrite $coll unordered: deleteOne {_id, _seq, _inc} per block found"},
				{Each: true, N: 1, Per: access.IfLoses, Op: "bulkWrite $index unordered: deleteOne per entry of the blocks deleted"},
				{Op: "a block changed since it was read, or a key given twice: the single Delete"}}},
		{Methods: []access.Method{access.PutMany}, When: access.HasTables | access.HasCounter, Atomic: batchProtocol + countedMany,
			Steps: []access.Step{allocateMany, raiseMany, {Op: "per run of items of one kind in slice order: the new blocks with numbers from the counter as CreateMany's (the index tables' inserts, then one bulkWrite of the documents' inserts), the others as PutMany's (a find, the index tables' inserts, one bulkWrite of the documents, the entries lost)"}, singleCreate}},
		{Methods: []access.Method{access.Create}, When: access.NoWrites, Atomic: one + "[?counted:; the counter increment is a command of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{counter, {N: 1, Op: "insert $coll {the whole document}"}}},
		{Methods: []access.Method{access.Create}, Atomic: protocol + "[?counted:; the counter increment is a command of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{counter, gained, {N: 1, Op: "insert $coll (stamped with _seq and _inc)"}}},
		{Methods: []access.Method{access.Put}, When: access.NoWrites | access.HasVersion, Atomic: one,
			Steps: []access.Step{counter, keepCreated, {N: 1, Op: "replaceOne $coll {_id, $version: v[?created:, $created as read]} (insert when v is 0)"}}},
		{Methods: []access.Method{access.Put}, When: access.NoWrites | access.NoVersion, Atomic: one,
			Steps: []access.Step{counter, keepCreated, {N: 1, Op: "replaceOne $coll {_id[?created:, $created as read]} upsert"}}},
		{Methods: []access.Method{access.Put}, Atomic: protocol,
			Steps: []access.Step{counter, read, gained, {N: 1, Op: "replaceOne $coll {_id[?version:, $version: v]} (on condition of _seq and _inc)"}, lost}},
		{Methods: []access.Method{access.Delete}, When: access.NoWrites, Atomic: one, Steps: []access.Step{{N: 1, Op: "deleteOne $coll {_id}"}}},
		{Methods: []access.Method{access.Delete}, Atomic: "the document delete is atomic; its index-table entries are removed after it",
			Steps: []access.Step{{N: 1, Op: "findOneAndDelete $coll {_id} projection {_inc}"}, refusedProjection, {Each: true, N: 1, Op: "deleteMany $index {id, inc}"}}},

		{Methods: []access.Method{access.Set}, When: access.NoWrites, Atomic: one, Steps: []access.Step{{N: 1, Op: "updateOne $coll {_id} {$set $field" + bump + "}"}}},
		{Methods: []access.Method{access.Add}, Atomic: one, Steps: []access.Step{
			{N: 1, Op: "findAndModify $coll {_id, $field within the range the sum needs (or missing)} {$inc $field" + bump + "} returning the new $field"},
			{N: 1, Per: access.IfProjectionRefused, Op: "findAndModify again, without the projection"}}},
		{Methods: []access.Method{access.SetAt}, When: access.NoWrites, Atomic: one, Steps: []access.Step{{N: 1, Op: "updateOne $coll {_id, $field.i: {$exists}} {$set $field.i" + bump + "}"}}},
		{Methods: []access.Method{access.Update}, When: access.NoWrites, Atomic: one, Steps: []access.Step{{N: 1, Op: "updateOne $coll {_id[?version:, $version][?parts:, f.i: {$exists} for each element given]} {$set of the entries given" + bump + "}"}}},
		{Methods: []access.Method{access.Append}, When: access.NoWrites, Atomic: one, Steps: []access.Step{{N: 1, Op: "findAndModify $coll {_id, " + Len + ".$field: {$exists}} {$push $field, $inc " + Len + ".$field" + bump + "} returning " + Len + ".$field"},
			refusedProjection, {N: 1, Per: access.IfNoProjection, Op: "on a server without projections in findAndModify (FerretDB v1) instead: find " + Len + ".$field, then updateOne on condition of it"}}},
		{Methods: []access.Method{access.Set, access.SetAt, access.Append}, Atomic: protocol,
			Steps: []access.Step{read, gained, {N: 1, Op: "updateOne $coll {_id, _seq, _inc} (the change" + bump + ")"}, lost}},
		{Methods: []access.Method{access.Update}, Atomic: protocol + "; an update that changes no field of an index table is one updateOne, atomic",
			Steps: []access.Step{{N: 1, Per: access.IfIndexedChange, Op: read.Op}, gained, {N: 1, Op: "updateOne $coll {_id, _seq, _inc} {$set of the entries given" + bump + "}"}, lost}},

		{Methods: []access.Method{access.GetBy}, When: access.ByNative, Atomic: one, Steps: []access.Step{{N: 1, Op: "findOne $coll {$paths} (native index)"}}},
		{Methods: []access.Method{access.ListBy}, When: access.ByNative, Desc: "before the cursor, sort {$paths: -1, _id: -1} (the native index backwards)", Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "find $coll {$paths in the query's range} sort {$paths, _id} limit n+1 (native index)"}}},
		{Methods: []access.Method{access.CountBy}, When: access.ByNative | access.NoExpires, Atomic: "one command (the index is kept with the documents)",
			Steps: []access.Step{{N: 1, Op: "countDocuments $coll {$paths in the query's range} (native index; a document once, as ListBy lists it)"}}},
		{Methods: []access.Method{access.CountBy}, When: access.ByNative, Atomic: "one command (the index is kept with the documents); the filter also leaves out the documents whose expires time is set and not after the repository's clock",
			Steps: []access.Step{{N: 1, Op: "countDocuments $coll {$and: [{$paths in the query's range}, {$or: [{$expires: {$not: {$lte: now}}}, {$expires: zero time}]}]} (native index; a document once, as ListBy lists it)"}}},
		{Methods: []access.Method{access.GetBy}, Atomic: "not atomic: the entry is read, then its block, which must hold the value (a stale entry is skipped)",
			Steps: []access.Step{{N: 1, Op: "find $index {_id: hex(value)}"}, {N: 1, Op: "find $coll {_id: the entry's id}"}}},
		{Methods: []access.Method{access.ListBy}, Atomic: "not atomic: entries are read, then their blocks, and every block is checked to hold the value (stale entries are skipped)", Desc: "find $index before the cursor, sort {_id: -1}",
			Steps: []access.Step{{N: 2, Per: access.PerBatch, Op: "find $index {_id in the query's hex range} sort {_id: 1}"}, {Op: "find $coll {_id: {$in: the entries' ids}}"}, {N: 1, Per: access.PerStale, Op: "deleteOne $index per stale entry older than 30 s"}}},
		{Methods: []access.Method{access.CountBy}, Atomic: "not atomic: as ListBy, batches of 256 entries, every block checked to hold the value (entries may be stale, so their number alone is not the count)",
			Steps: []access.Step{{N: 2, Per: access.PerBatch, Op: "find $index {_id in the query's hex range} sort {_id: 1}"}, {Op: "find $coll {_id: {$in: the entries' ids}}"}, {N: 1, Per: access.PerStale, Op: "deleteOne $index per stale entry older than 30 s"}}},

		{Methods: []access.Method{access.Migrate}, Atomic: "each block: one updateOne on condition that its counts are as read; safe while the application writes",
			Steps: []access.Step{{N: 1, Per: access.PerMigrateBatch, Op: "find $coll {_id > position} sorted by _id, limit the batch"}, {N: 1, Per: access.PerMigrated, Op: "updateOne $coll {_id, _len and array lengths as read}: add or remove the partition counts"}}},
		{Methods: []access.Method{access.Repair}, When: access.NoTables, Atomic: "-", Steps: []access.Step{{Op: "nothing to do: native indexes are kept by the server"}}},
		{Methods: []access.Method{access.Repair}, Atomic: "not atomic: each batch is a command of its own",
			Steps: []access.Step{{N: 1, Per: access.PerRepairBatch, Op: "find $coll (indexed fields, cursor)"}, {Op: "find $indexes (cursor)"}, {Op: "insert/delete the missing and stale entries in batches"}}},
		sweepNative, sweep,
		{Methods: []access.Method{access.Ensure}, Atomic: "each command on its own; safe to repeat",
			Steps: []access.Step{{When: access.HasLookups, Op: "listCollections: which of the lookups' index tables exist"}, {N: 1, Per: access.PerCollection, Op: "create the collections that do not exist"}, {When: access.HasNative, Op: "listIndexes $coll, then createIndexes $coll: the native index of each lookup that is missing or was made for another version of the lookup (dropIndexes first)"}, {When: access.HasTables, Op: "createIndexes {id: 1} on $indexes"}}},
	},
}

// The counter steps of CreateMany with a counter (counterbatch.go):
// each counter scope moves once for the batch; the items it cannot
// number are left to the single Create.
var (
	allocateMany = access.Step{When: access.HasCounter, N: 1, Per: access.PerScope, Op: "findAndModify " + Counters + " {$inc n: the scope's items to allocate}, which take the numbers up to the result in slice order"}
	raiseMany    = access.Step{When: access.HasCounter, N: 1, Per: access.IfKeyGiven, Op: "bulkWrite " + Counters + " unordered: update {$max n} upsert per scope whose items give numbers"}
	singleCreate = access.Step{When: access.HasCounter, Op: "an item whose number is in use (given before) or whose counter cannot move: its single call, after the batch"}
	// countedPuts: a PutMany with a counter of an aggregate whose Puts
	// are single: the new blocks, numbered by the counter, are batched.
	countedPuts = []access.Step{allocateMany, raiseMany,
		{N: 1, Per: access.IfAllocates, Op: "bulkWrite $coll ordered: insert {the whole document} per run of items whose numbers the counter gave"},
		{N: 1, Per: access.PerItemWrite, Op: "each item whose number is given: its Put, in order"}, singleCreate}
)

// singlePuts is the Atomic of a PutMany made of single Puts.
const singlePuts = "each item as its Put; the items are not atomic together (the failed ones are reported, the others written)"

// countedMany is what CreateMany with a counter adds to Atomic.
const countedMany = "[?counted:; each counter moves by a command of its own before the writes (a failed write leaves its number unused)]"

// refusedProjection is the resend of a findAndModify whose projection the
// server refused (once per client).
var refusedProjection = access.Step{N: 1, Per: access.IfProjectionRefused}

// The steps of the lookup protocol around a document write.
var (
	read   = access.Step{N: 1, Op: "find $coll {_id} (indexed fields, version, _seq, _inc)"}
	gained = access.Step{Each: true, N: 1, Per: access.PerValueGained, Op: "insert or findAndModify $index: one per index entry the block gains"}
	lost   = access.Step{Each: true, N: 1, Per: access.IfLoses, Op: "deleteMany $index: the entries it lost"}
)

// bump is the version's increment in an update, when there is a version.
// keepCreated is Put's read of the created timestamp it keeps.
var keepCreated = access.Step{When: access.HasCreated, N: 1, Op: "findOne $coll {_id} projection {$created} (a block that exists keeps it)"}

const bump = "[?updated:, $set $updated][?version:, $inc $version]"

// nativeIndex is the native index of lookup l (the default mapping).
func nativeIndex(l access.Lookup) access.Index {
	var ix access.Index
	var conds []string
	for _, p := range l.Paths {
		dotted := strings.ReplaceAll(p, "[]", "")
		ix.Keys = append(ix.Keys, dotted+": 1")
		conds = append(conds, dotted+" not its zero value")
	}
	if len(l.Paths) > 1 {
		ix.Keys = append(ix.Keys, "_id: 1")
	}
	if l.Multi {
		ix.Options = append(ix.Options, "multikey (one index key per element)")
	}
	if l.Unique {
		ix.Options = append(ix.Options, "unique: true")
		if !l.Zeros {
			ix.Options = append(ix.Options, "partialFilterExpression: "+strings.Join(conds, " and ")+" (zero values are not indexed)")
		}
	}
	return ix
}

// TableName is the index-table collection of lookup l of collection c
// (mongostore.TableName).
func TableName(c, l string) string { return c + "__" + l }

// The lookup mapping a collection's schema record document holds (field
// Mapping beside the record, "rec"): how its lookups are kept, decided at
// its first EnsureIndexes and followed by every repository over it.
const (
	Mapping = "lookups"
	// MappingNative: a lookup on native indexes of the collection, those
	// noam:"lookup,table" marks (and composite lookups over a slice) in
	// index tables.
	MappingNative = "native"
	// MappingUniqueTables: unique lookups in index tables too (a server
	// without partial indexes or per-element unique multikey indexes).
	MappingUniqueTables = "unique-tables"
	// MappingIndexTables: every lookup in an index table.
	MappingIndexTables = "index-tables"
)
