// Package layout declares, as data, how runtime/boltstore lays out blocks
// in a bbolt file and what each repository operation does there (package
// runtime/access). It imports no driver: the generator and `noamgen
// explain` read it; boltstore's tests check the names against the
// adapter's.
package layout

import "github.com/noamgen/noamgen/runtime/access"

// Names the adapter uses (boltstore.IndexBucket, boltstore.CountersBucket).
const (
	IndexBucket    = "$coll.$lookup"
	CountersBucket = "noam.counters"
)

// entry is the readable key of an entry of the example block.
const block = "/$coll/$key/-"

// readTx, writeTx are the transaction every operation is.
var (
	readTx  = access.Step{Op: "1 read transaction"}
	writeTx = access.Step{Op: "1 write transaction"}
)

// Store is the bbolt declaration.
var Store = &access.Store{
	Name: "bolt", Title: "bbolt", Embedded: true, KeyStyle: access.KeyPath,
	Names:    access.Names{Index: IndexBucket, Counter: "/$coll"},
	Elements: 2, Sorted: true,
	Summary: `Bucket "$coll" holds one key-value pair per entry (NoAM Fig. 4 and 9): the key is the block key (major key), the separator 0x01 (shown as -) and the entry key (minor key), each step encoded with the order-preserving key codec, so that a block is one contiguous key range that starts with its marker. Values are BSON values (runtime/bsonval).`,
	Containers: []access.Container{
		{When: access.ETF, Kind: "bucket", Name: "$coll", Role: "blocks", Key: "block key ‖ 0x01 ‖ entry key [‖ element index]", Value: "BSON value of the entry; the block marker (empty value)", Example: block},
		{When: access.EAO, Kind: "bucket", Name: "$coll", Role: "blocks", Key: "block key ‖ 0x01 ‖ entry key [‖ element index]", Value: "BSON value of the entry; the block marker, holding the root entry ε", Example: block},
		{Each: "lookup", Kind: "bucket", Name: "$index", Role: "index table of lookup $lookup", Key: "lookup value[?shared: ‖ block key]", Value: "[?unique:block key][?shared:empty]", Example: "$indexPath -> $holder"},
		{When: access.HasCounter | access.NotScoped, Kind: "bucket", Name: CountersBucket, Role: "counters", Key: "collection name", Value: "last number allocated or used (int64)", Example: "/$coll -> <n>"},
		{When: access.Scoped, Kind: "bucket", Name: CountersBucket, Role: "counters", Key: "collection name ‖ scope ($scope)", Value: "last number allocated or used (int64)", Example: "/$coll/$scopeKey -> <n>"},
	},
	Block: []access.Stored{
		{When: access.ETF, Key: block, Value: "(empty: the block marker)"},
		{When: access.EAO, Key: block, Entry: "ε", Value: "BSON document {$fields}"},
		{When: access.ETF, Each: "field", Key: block + "/$entry", Entry: "$entry", Value: "BSON $type"},
		{Each: "partition", Key: block + "/$entry", Entry: "$entry", Value: "int64 $n (the element count)"},
		{Each: "element", Key: block + "/$entry/$i", Entry: "$entry[$i]", Value: "BSON $elem"},
		{Each: "version", Key: block + "/$entry", Entry: "$entry", Value: "int64 (the version)"},
	},
	Notes: []access.Note{
		{Text: "Every repository method is one bbolt transaction: a write changes the block, its index entries and its counter together or not at all."},
		{When: access.HasPartitions, Text: "Appending an element writes two keys (the element and the count) plus the version, whatever the partition's size."},
		{Text: "A key (block marker, entry, index entry, counter) is at most 32768 bytes (runtime.Caps.MaxKeyBytes), a value at most 2147483646 (MaxValueBytes): a larger write fails with runtime.ErrTooLarge and its transaction changes nothing. Large values cost page writes."},
	},
	ClearExpired: clearExpired,
	Costs: []access.Cost{
		{Methods: []access.Method{access.Get}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{readTx, {Op: "scan " + block + "… (the block's key range)"}}},
		{Methods: []access.Method{access.GetMany}, Atomic: "all keys are read in one transaction (a consistent snapshot)",
			Steps: []access.Step{readTx, {Op: "scan the key range of each block"}}},
		{Methods: []access.Method{access.List}, Desc: "the same scan backwards, from the cursor (a reverse bbolt cursor)", Atomic: "the page is read in one transaction (a consistent snapshot)",
			Steps: []access.Step{readTx, {Op: "scan bucket $coll in key order from the cursor"}}},
		{Methods: []access.Method{access.All}, Atomic: "each page of 100 blocks is one read transaction",
			Steps: []access.Step{{Op: "1 read transaction per page"}, {Op: "scan bucket $coll in key order from the cursor"}}},
		{Methods: []access.Method{access.ListScope}, Desc: "the same range backwards, from the scope's end or the cursor (a reverse bbolt cursor)", Atomic: "the page is read in one transaction (a consistent snapshot)",
			Steps: []access.Step{readTx, {Op: "seek bucket $coll to the scope's key range (its blocks are contiguous, in number order) and scan from the cursor"}}},
		{Methods: []access.Method{access.GetBy}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{readTx, {Op: "get $index (the value's entry)"}, {Op: "scan the block's key range"}}},
		{Methods: []access.Method{access.ListBy}, Desc: "the same range of $index backwards, from its end or the cursor (a reverse bbolt cursor)", Atomic: "the page is read in one transaction (a consistent snapshot)",
			Steps: []access.Step{readTx, {Op: "seek $index to the query's key range"}, {Op: "scan the key range of each block found"}}},
		{Methods: []access.Method{access.Count}, Atomic: "one read transaction (a consistent snapshot); with an expires field, each block's expires entry is read too (that entry alone), in the same transaction, to leave the expired ones out",
			Steps: []access.Step{readTx, {Op: "seek bucket $coll from block marker to block marker (no block read)"}}},
		{Methods: []access.Method{access.CountBy}, Atomic: "one read transaction (a consistent snapshot); with an expires field, the expires entry of each entry's block is read too (that entry alone), in the same transaction, to leave the expired ones out",
			Steps: []access.Step{readTx, {Op: "count the keys of $index in the query's key range (no block read)"}}},
		{Methods: []access.Method{access.CountScope}, Atomic: "one read transaction (a consistent snapshot); with an expires field, each block's expires entry is read too (that entry alone), in the same transaction, to leave the expired ones out",
			Steps: []access.Step{readTx, {Op: "seek bucket $coll in the scope's key range from block marker to block marker (no block read)"}}},
		{Methods: []access.Method{access.ListElems}, Desc: "get the count, then seek /$coll/$key/-/$field/i and read n elements backwards (a reverse bbolt cursor; a first page from the last)", Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{readTx, {Op: "get " + block + "/$field"}, {Op: "seek " + block + "/$field/i and read n elements"}}},
		{Methods: []access.Method{access.Ensure}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{writeTx, {Op: "create the buckets of the blocks, index tables and counters if missing"}}},
		{Methods: []access.Method{access.Migrate}, Atomic: "each batch of blocks is one write transaction (a dry run: one read transaction); safe while the application writes",
			Steps: []access.Step{{Op: "1 write transaction per batch of blocks"}, {Op: "scan bucket $coll in key order from the position"}, {Op: "rewrite the entries of each block stored in an older layout (strategy, partitions) in the current one"}}},
		{Methods: []access.Method{access.Repair}, Atomic: "not atomic as a whole: each page of 64 blocks or index entries is read in one transaction and each fix is a transaction of its own (the shared Repair of runtime/index); run it while nothing else writes the collection",
			Steps: []access.Step{{Op: "1 read transaction per 64 blocks: their indexed entries"}, {Op: "1 read transaction per 64 entries of $indexes", When: access.HasLookups}, {Op: "1 write transaction per missing or stale entry of $indexes", When: access.HasLookups}}},
		sweep,
		{Methods: []access.Method{access.Create}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{writeTx,
				{Op: "get/put " + CountersBucket + " /$coll… (allocate the key when it is 0)", When: access.HasCounter},
				{Op: "put " + block + " (the marker)", When: access.ETF}, {Op: "put " + block + " (the root entry)", When: access.EAO},
				{Op: "put " + block + "/$entry", Entries: true},
				{Op: "put $index: the entries of its values", Each: true}}},
		{Methods: []access.Method{access.Put}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{writeTx,
				{Op: "get " + block + "/$version (the version check)", When: access.HasVersion},
				{Op: "get/put " + CountersBucket + " /$coll… (allocate the key when it is 0)", When: access.HasCounter},
				{Op: "get the indexed entries", When: access.HasLookups},
				{Op: "delete every key of the block's range"},
				{Op: "put " + block + " (the marker)", When: access.ETF}, {Op: "put " + block + " (the root entry)", When: access.EAO},
				{Op: "put " + block + "/$entry", Entries: true},
				{Op: "put/delete $index: the entries of the values gained/lost", Each: true}}},
		{Methods: []access.Method{access.Delete}, Atomic: "all of it: one bbolt transaction",
			Steps: []access.Step{writeTx,
				{Op: "get " + block + " (the marker: the block exists)"},
				{Op: "get the indexed entries", When: access.HasLookups},
				{Op: "delete every key of the block's range"},
				{Op: "delete $index: the entries of its values", Each: true}}},
		{Methods: []access.Method{access.CreateMany, access.PutMany, access.DeleteMany}, Atomic: "each item all or nothing; the batch is one bbolt transaction, in which a failed item writes nothing (it is checked before its first write, or the transaction runs again without it)",
			Steps: []access.Step{writeTx,
				{Op: "per item, in order: what its single call (create, put, delete) reads and writes, its index entries checked before its first write"}}},
		write(access.Set, "put "+block+"/$field"),
		write(access.Add, "get "+block+"/$field (none: 0; the sum checked against the field's range)", "put "+block+"/$field"),
		write(access.SetAt, "get "+block+"/$field (the element count)", "put "+block+"/$field/i"),
		write(access.Append, "get "+block+"/$field (the element count)", "put "+block+"/$field/n", "put "+block+"/$field (the new count)"),
		write(access.Update, "get "+block+"/<f> of each partition changed (the element count)", "put the entries given"),
	},
}

// write is the cost of an entry-level write: the block must exist, the
// method reads and puts ops, bumps the version and changes the index
// entries of the values gained and lost.
func write(m access.Method, ops ...string) access.Cost {
	steps := []access.Step{writeTx, {Op: "get " + block + " (the marker: the block exists)"}}
	steps = append(steps, access.Step{Op: "get the old values of the indexed entries", When: access.Writes})
	for _, op := range ops {
		steps = append(steps, access.Step{Op: op})
	}
	steps = append(steps,
		access.Step{Op: "put " + block + "/$version (bumped)", When: access.HasVersion},
		access.Step{Op: "put/delete $index: the entries of the values gained/lost", Each: true})
	return access.Cost{Methods: []access.Method{m}, Atomic: "all of it: one bbolt transaction", Steps: steps}
}

// IndexName is the bucket of lookup l of collection c (boltstore.IndexBucket).
func IndexName(c, l string) string { return c + "." + l }

// clearExpired is what DeleteExpired does to a block that has not
// expired, which the writes of a block by key of an aggregate with an
// expires field do first (access.Store.ClearExpired).
var clearExpired = []access.Step{
	{Op: "DeleteExpired, a read-write transaction of its own before the write's: it reads the block's expires entry and removes the block, with its index entries, had it expired"},
}
