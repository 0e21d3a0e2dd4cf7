// Package layout declares, as data, how runtime/redisstore lays out blocks
// in Redis and what each repository operation sends, on a single node and
// on a Redis Cluster (package runtime/access). It imports no driver: the
// generator and `noamgen explain` read it; the conformance suite counts
// the requests the adapter sends (a command, a script run or a pipeline
// each) and compares them with it.
package layout

import "github.com/noamgen/noamgen/runtime/access"

// Deployments.
const (
	Node    access.Mode = "node"
	Cluster access.Mode = "cluster"
)

// Names the adapter uses (keys.go).
const (
	Block   = "$coll:{$block}"
	Listing = "$coll:blocks"
	Index   = "{$coll.$lookup}"
	Counter = "$coll:counter[?scopeKey::{$scopeKey}]"
	Schema  = "noam:schema:{$coll}"
	Fence   = "noam:fence:{$coll}"
)

// Hidden hash fields.
const (
	Seq  = "_seq"
	Inc  = "_inc"
	Once = "_w"
)

// MaxValueBytes is the largest hash field, key name or index member
// (Redis's limit of one argument, proto-max-bulk-len).
const MaxValueBytes = 512 << 20

const (
	each     = "each block is read whole (not a snapshot across blocks)"
	script   = "all of it: one script run on the block's hash"
	listed   = "node: all of it, one script run; cluster: the block's script is atomic, the listing follows it"
	protocol = "node: all of it, one script run; cluster: the block's script is atomic, index entries are added before it and removed after it (a crash leaves stale entries, which reads skip and Repair removes)"
)

// The steps of writes.
var (
	allocate = access.Step{When: access.HasCounter, N: 1, Per: access.IfAllocates, Op: "INCR " + Counter + " when the key's number is 0 (again while numbers are in use)"}
	readHash = access.Step{N: 1, Op: "HGETALL " + Block + " (_seq, _inc, the indexed values)"}
	claim    = access.Step{Mode: Cluster, Each: true, When: access.UniqueLookup, N: 1, Per: access.PerValueGained, Op: "EVALSHA per new value of $index: claim it (check-and-set $index:claims), ZADD $index, HSET $index:meta"}
	add      = access.Step{Mode: Cluster, Each: true, When: access.OtherLookup, N: 1, Per: access.PerValueGained, Op: "EVALSHA per new value of $index: ZADD $index, HSET $index:meta"}
	remove   = access.Step{Mode: Cluster, Each: true, N: 1, Per: access.IfLoses, Op: "EVALSHA: remove the lost values' entries of this incarnation written before this write (ZREM $index, HDEL $index:meta[?unique:, $index:claims])"}
	nodeRun  = func(what string) access.Step { return access.Step{Mode: Node, N: 1, Op: "EVALSHA [" + what + "]"} }
	blockRun = func(what string) access.Step {
		return access.Step{Mode: Cluster, N: 1, Op: "EVALSHA " + Block + " [" + what + "]"}
	}
)

// Store is the Redis declaration.
var Store = &access.Store{
	Name: "redis", Title: "Redis", Modes: []access.Mode{Node, Cluster}, KeyStyle: access.KeyTag,
	Names:    access.Names{Index: Index, Counter: Counter},
	Elements: 2,
	Summary:  `One Redis hash per block (NoAM Fig. 4 and 9, the key-value mapping), named by the collection and the block key in a hash tag, "` + Block + `", so that a block is one key on one hash slot of a cluster; one hash field per entry ("" for the root entry of an EAO block, "f[i]" for an element). Values are BSON values (runtime/bsonval: the type byte and the BSON bytes); element counts and the version are decimal integers, which scripts bump with HINCRBY. The same keys serve a single node and a Redis Cluster.`,
	Containers: []access.Container{
		{Kind: "hash", Name: "$coll:{<block key>}", Role: "blocks (one hash each)", Key: "entry key, f[i] for an element", Value: "BSON value per entry; counts and version in decimal; _seq[?lookups:, _inc], _w", Example: Block},
		{Kind: "sorted set", Name: Listing, Role: "block listing (List, All, scopes, Repair)", Key: "member: encoded block key, score 0 (ZRANGE BYLEX)", Example: Listing + " ∋ $key"},
		{Each: "lookup", Kind: "sorted set", Name: Index, Role: "index table of lookup $lookup", Key: "member: encoded lookup value ‖ encoded block key, score 0", Example: Index + " ∋ $value ‖ $key"},
		{Each: "lookup", Kind: "hash", Name: Index + ":meta", Role: "bookkeeping of lookup $lookup (the lookup protocol)", Key: "field: a member of " + Index, Value: "<incarnation> <write sequence> of the write that added it", Example: Index + ":meta"},
		{Each: "unique", Kind: "hash", Name: Index + ":claims", Role: "claims of unique lookup $lookup", Key: "field: encoded lookup value", Value: "encoded block key of the holder", Example: Index + ":claims"},
		{When: access.HasCounter | access.NotScoped, Kind: "string", Name: "$coll:counter", Role: "counter", Key: "-", Value: "last number allocated (INCR) or used (decimal)", Example: Counter + " -> <n>"},
		{Kind: "string", Name: Schema, Role: "schema record (the layout EnsureIndexes recorded)", Key: "-", Value: "runtime.SchemaRecord as JSON", Example: Schema},
		{Kind: "string", Name: Fence, Role: "layout fence: set with the schema record in the same script run (one hash tag); every write run on a single node checks it", Key: "-", Value: "decimal", Example: Fence},
		{When: access.Scoped, Kind: "string", Name: "$coll:counter:{<$scope>}", Role: "counter", Key: "-", Value: "last number allocated (INCR) or used (decimal)", Example: Counter + " -> <n>"},
	},
	Block: []access.Stored{
		{When: access.EAO, Key: `""`, Entry: "ε", Value: "BSON document {$fields}"},
		{When: access.ETF, Each: "field", Key: "$entry", Entry: "$entry", Value: "BSON $type"},
		{Each: "element", Key: "$entry[$i]", Entry: "$entry[$i]", Value: "BSON $elem"},
		{Each: "partition", Key: "$entry", Entry: "$entry", Value: "decimal $n (the element count)"},
		{Each: "version", Key: "$entry", Entry: "$entry", Value: "decimal (the version)"},
		{When: access.HasLookups, Key: Inc, Value: "the block's incarnation, drawn at creation (the lookup protocol)"},
		{Key: Seq, Value: "the write sequence, 20 decimal digits (conditional writes compare it)"},
		{Key: Once, Value: "the last write's token and result (a script run go-redis resends after a lost reply is not applied twice)"},
	},
	Notes: []access.Note{
		{Text: "Every write is one run of one Lua script (EVALSHA) that checks its conditions (block exists or not, version, element index, unique claims, block unchanged since read) before it changes anything: a write of one block is atomic on a single node and on a cluster."},
		{When: access.NoLookups, Text: "Single node: the same script run changes the block and the block listing[?counted: (and the counter when a write raises it)], all or nothing. Redis Cluster: they live on other hash slots and change in runs of their own, after the block's, so they may lag behind the block after a crash; Repair rebuilds them."},
		{When: access.HasLookups, Text: "Single node: the same script run changes the block, the block listing and the index tables[?counted: (and the counter when a write raises it)], all or nothing. Redis Cluster: they live on other hash slots and change in runs of their own, after the block's (the listing[?counted:, the counter]) or around it (index tables: the lookup protocol below), so they may lag behind the block after a crash; Repair rebuilds them."},
		{When: access.HasLookups, Text: "The lookup protocol on a cluster (as runtime/mongostore's, RELIABILITY.md): unique values are claimed first (a check-and-set script on the :claims hash), the other new entries added, then the block written on condition that its _seq is the one read, then the entries of the old values removed, only those of this incarnation (_inc) written before this write. Reads verify every entry against its block and skip stale ones."},
		{When: access.HasPartitions, Text: "Appending an element sends the element only: the script bumps the count (HINCRBY) and writes f[n] (plus the version), whatever the partition's size."},
		{Text: "EnsureIndexes loads the script (SCRIPT LOAD, on every master of a cluster); otherwise the first write on a server costs one more round trip (EVALSHA answers NOSCRIPT, go-redis sends EVAL)."},
		{Text: "A hash field holds at most 536870912 bytes (512 MB, runtime.Caps.MaxValueBytes), and so does a key name or an index member (Redis's limit of one argument, proto-max-bulk-len): a larger one fails with runtime.ErrTooLarge before anything is sent; a write whose values together pass the limit sends them as several arguments. A block has no limit of its own, but it lives on one node."},
	},
	ClearExpired: clearExpired,
	Costs: []access.Cost{
		{Methods: []access.Method{access.Get}, Atomic: "the block: one hash on one slot, read whole", Steps: []access.Step{{N: 1, Op: "HGETALL " + Block}}},
		{Methods: []access.Method{access.GetMany}, Atomic: each, Steps: []access.Step{{N: 1, Per: access.PerPipeline, Op: "pipeline: HGETALL per key (on a cluster, one pipeline per node, sent together)"}}},
		{Methods: []access.Method{access.List, access.ListScope}, Desc: "ZRANGE " + Listing + " BYLEX REV, before the cursor", Atomic: each + "; a listed block that is gone (a cluster write in flight) is skipped and the next batch read",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "ZRANGE " + Listing + " BYLEX after the cursor (in the scope's range for a scope) LIMIT n+1"}, {N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.All}, Atomic: each + "; a listed block that is gone (a cluster write in flight) is skipped and the next batch read",
			Steps: []access.Step{{N: 1, Per: access.PerBlocks, Op: "ZRANGE " + Listing + " BYLEX after the cursor LIMIT 101"}, {N: 1, Per: access.PerBlocks, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.ListElems}, Desc: "HMGET " + Block + " _seq $field $field[i] $field[i-1] … $field[i-n]; a first page reads the count with an HMGET of its own first (one more request)", Atomic: "the page and the count are read from one state of the hash", Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "HMGET " + Block + " _seq $field $field[i] … $field[i+n]"}}},
		{Methods: []access.Method{access.ListBy}, Desc: "node: ZRANGE $index BYLEX REV, before the cursor; cluster: the script's ZREVRANGEBYLEX", Atomic: "not atomic: entries are read, then their blocks; every block is checked to hold the value (one a write changed in between, or on a cluster a stale entry's, is skipped and the next batch read)",
			Steps: []access.Step{{Mode: Node, N: 1, Per: access.PerPage, Op: "ZRANGE $index BYLEX in the query's range, after the cursor, LIMIT n+1"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "EVALSHA: ZRANGE $index BYLEX in the query's range, after the cursor, LIMIT n+1, with the entries' :meta"}, {N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per entry's block"}}},
		{Methods: []access.Method{access.Count}, When: access.NoExpires, Atomic: "node: one command, exact (the listing changes in the scripts that write blocks); cluster: as List, pages of 256 blocks (the listing may name a block a write in flight removed, which only the block tells)",
			Steps: []access.Step{{Mode: Node, N: 1, Op: "ZCARD " + Listing}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "ZRANGE " + Listing + " BYLEX after the last block counted LIMIT 257"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.CountScope}, When: access.NoExpires, Atomic: "node: one command, exact (the listing changes in the scripts that write blocks); cluster: as ListScope, pages of 256 blocks (the listing may name a block a write in flight removed, which only the block tells)",
			Steps: []access.Step{{Mode: Node, N: 1, Op: "ZLEXCOUNT " + Listing + " over the scope's range"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "ZRANGE " + Listing + " BYLEX in the scope's range after the last block counted LIMIT 257"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.CountScope}, Atomic: "as ListScope, pages of 256 blocks, on a node too: only a block's hash holds its expires time",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "ZRANGE " + Listing + " BYLEX in the scope's range after the last block counted LIMIT 257"}, {N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.Count}, Atomic: "as List, pages of 256 blocks, on a node too: only a block's hash holds its expires time (and on a cluster the listing may name a block a write in flight removed)",
			Steps: []access.Step{{N: 1, Per: access.PerPage, Op: "ZRANGE " + Listing + " BYLEX after the last block counted LIMIT 257"}, {N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per block"}}},
		{Methods: []access.Method{access.CountBy}, When: access.HasExpires, Atomic: "as ListBy, pages of 256 entries, every block checked to hold the value, on a node too: only a block's hash holds its expires time (on a cluster stale entries are not counted)",
			Steps: []access.Step{{Mode: Node, N: 1, Per: access.PerPage, Op: "ZRANGE $index BYLEX in the query's range, after the last entry counted, LIMIT 257"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "EVALSHA: ZRANGE $index BYLEX in the query's range, after the last entry counted, LIMIT 257, with the entries' :meta"}, {N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per entry's block"}}},
		{Methods: []access.Method{access.CountBy}, Atomic: "node: one command, exact (index members change in the scripts that write their blocks; one member per value and block, as ListBy lists them); cluster: as ListBy, pages of 256 entries, every block checked to hold the value (stale entries are not counted)",
			Steps: []access.Step{{Mode: Node, N: 1, Op: "ZLEXCOUNT $index over the query's range"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "EVALSHA: ZRANGE $index BYLEX in the query's range, after the last entry counted, LIMIT 257, with the entries' :meta"}, {Mode: Cluster, N: 1, Per: access.PerPage, Op: "pipeline: HGETALL per entry's block"}}},
		{Methods: []access.Method{access.GetBy}, Atomic: "not atomic: the claim, then the block, which is checked to hold the value",
			Steps: []access.Step{{Mode: Node, N: 1, Op: "HGET $index:claims <value>"}, {Mode: Cluster, N: 1, Op: "EVALSHA: HGET $index:claims <value> and its :meta"}, {N: 1, Op: "pipeline: HGETALL of the holder's block"}}},
		{Methods: []access.Method{access.Ensure}, Atomic: "safe to repeat",
			Steps: []access.Step{{Mode: Node, N: 2, Op: "SCRIPT LOAD the write script and the index script; Redis needs nothing else created"}, {Mode: Cluster, N: 2, Per: access.PerMaster, Op: "SCRIPT LOAD the write script and the index script on every master"}}},
		{Methods: []access.Method{access.Migrate}, Atomic: "each block: one script run on condition that it is unchanged since read (its _seq); safe while the application writes",
			Steps: []access.Step{{N: 1, Per: access.PerMigrateBatch, Op: "ZRANGE " + Listing + " from the position"}, {N: 1, Per: access.PerMigrateBlock, Op: "HGETALL $coll:{key}"}, {N: 1, Per: access.PerMigrated, Op: "EVALSHA $coll:{key} [check _seq; rewrite the hash in the current layout]"}}},
		{Methods: []access.Method{access.Repair}, Atomic: "not atomic: run it while nothing else writes the collection",
			Steps: []access.Step{{N: 1, Per: access.PerRepairBatch, Op: "SCAN $coll:{*} (on every master of a cluster)"}, {Op: "pipeline: HGETALL per 64 blocks"}, {Op: "ZRANGE " + Listing + ", ZADD/ZREM of its fixes"},
				{Op: "EVALSHA per 64 entries of $indexes: ZRANGE with their :meta (and :claims)", When: access.HasLookups}, {Op: "EVALSHA per missing or stale entry: put or delete it on condition", When: access.HasLookups}}},
		sweep,

		{Methods: []access.Method{access.CreateMany}, Atomic: "each item as its Create (on a cluster, the lookup protocol run phase by phase for the whole batch: runtime/index CommitMany; with Options.WaitReplicas on a cluster each item's Create, in order); the items are not atomic together (the failed ones are reported, the others written)[?counted:; each counter moves before the writes (a failed write leaves its number unused)]",
			Steps: []access.Step{{Mode: Node, When: access.HasCounter, N: 1, Per: access.IfAllocates, Op: "pipeline: INCR " + Counter + " per key to allocate"},
				{Mode: Node, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per item, in order [its Create's script], then WAIT with Options.WaitReplicas"},
				{Mode: Cluster, When: access.HasCounter, N: 1, Per: access.IfAllocates, Op: "pipeline: INCRBY " + Counter + " per counter scope, by its items to allocate, which take the numbers up to the result in slice order"},
				{Mode: Cluster, Each: true, N: 1, Per: access.IfGains, Op: "pipeline: EVALSHA per new entry of $index [claim it on condition absent] (the lookup's slot: one node); an entry already there: the single write's claim"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per item [its Create's block script] (go-redis sends it to each master it names)"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: ZADD " + Listing + " per item written"},
				{Mode: Cluster, When: access.HasCounter, Op: "in that pipeline, EVALSHA per scope whose items give numbers: raise " + Counter + " to the largest"},
				{Mode: Cluster, When: access.HasCounter, Op: "an item whose number is in use (given before) or whose counter cannot move: its single Create, after the batch"}}},
		{Methods: []access.Method{access.PutMany}, Atomic: "each item as its Put (on a cluster, the lookup protocol run phase by phase for the whole batch: runtime/index RunMany[?counted:, and CommitMany for the items whose number is allocated, as their Puts are Creates]; with Options.WaitReplicas on a cluster each item's Put, in order); the items are not atomic together (the failed ones are reported, the others written); an item an earlier one changed is read again and written by its own Put (on a cluster: in a later pass)[?counted:; on a cluster each counter moves before the writes (a failed write leaves its number unused)]",
			Steps: []access.Step{{Mode: Node, When: access.HasLookups, N: 1, Per: access.PerPipeline, Op: "pipeline: HGETALL " + Block + "[?created: and HGET $created] per item"},
				{Mode: Node, When: access.NoLookups | access.HasCreated, N: 1, Per: access.PerPipeline, Op: "pipeline: HGET " + Block + " $created per item"},
				{Mode: Node, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per item, in order [its Put's script], then WAIT with Options.WaitReplicas"},
				{Mode: Node, When: access.HasCounter, N: 1, Per: access.IfAllocates, Op: "an item whose key is to be allocated: its Put (a Create), between the pipelines of the items before and after it"},
				{Mode: Cluster, When: access.HasCounter, N: 1, Per: access.IfAllocates, Op: "pipeline: INCRBY " + Counter + " per counter scope, by its items whose number is zero (their Puts are Creates), which take the numbers up to the result in slice order"},
				{Mode: Cluster, When: access.HasCounter, Op: "then per run of consecutive items of one kind, in item order: the items allocated as CreateMany writes them (claims, block scripts, listing), the others as follows"},
				{Mode: Cluster, When: access.HasLookups, N: 1, Per: access.PerPipeline, Op: "pipeline: HGETALL " + Block + "[?created: and HGET $created] per item"},
				{Mode: Cluster, When: access.NoLookups | access.HasCreated, N: 1, Per: access.PerPipeline, Op: "pipeline: HGET " + Block + " $created per item"},
				{Mode: Cluster, Each: true, N: 1, Per: access.IfGains, Op: "pipeline: EVALSHA per new entry of $index [claim it on condition absent] (the lookup's slot: one node); an entry already there: the single write's claim"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per item [its Put's block script] (go-redis sends it to each master it names)"},
				{Mode: Cluster, Each: true, N: 1, Per: access.IfLoses, Op: "pipeline: EVALSHA per entry lost of $index [delete it on condition held]"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: ZADD " + Listing + " per item written"},
				{Mode: Cluster, When: access.HasCounter, Op: "in that pipeline, EVALSHA per scope whose items give numbers: raise " + Counter + " to the largest"},
				{Mode: Cluster, Op: "an item whose block changed since it was read: read and written again, in a later pass"},
				{Mode: Cluster, When: access.HasCounter, Op: "an item whose allocated number is in use (given before) or whose counter cannot move: its single Create, after the batch"}}},
		{Methods: []access.Method{access.DeleteMany}, Atomic: "each item as its Delete (on a cluster, phase by phase for the whole batch: runtime/index DeletedMany; with Options.WaitReplicas on a cluster each item's Delete, in order); the items are not atomic together (the failed ones are reported, the others removed)",
			Steps: []access.Step{{Mode: Node, When: access.HasLookups, N: 1, Per: access.PerPipeline, Op: "pipeline: HGETALL " + Block + " per item"},
				{Mode: Node, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per item, in order [its Delete's script], then WAIT with Options.WaitReplicas"},
				{Mode: Cluster, When: access.HasLookups, N: 1, Per: access.PerPipeline, Op: "pipeline: HGETALL " + Block + " per item"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: EVALSHA per block [its Delete's block script] (go-redis sends it to each master it names)"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: ZREM " + Listing + " per block deleted"},
				{Mode: Cluster, N: 1, Per: access.PerPipeline, Op: "pipeline: EXISTS " + Block + " per block deleted"},
				{Mode: Cluster, N: 1, Per: access.IfRecreated, Op: "pipeline: ZADD " + Listing + " per block created again meanwhile"},
				{Mode: Cluster, Each: true, N: 1, Per: access.IfLoses, Op: "pipeline: EVALSHA per entry of $index of the blocks deleted [delete it on condition held]"},
				{Mode: Cluster, Op: "a block changed since it was read, or a key given twice: the single Delete"}}},
		{Methods: []access.Method{access.Create}, When: access.NoWrites, Atomic: listed + "[?counted:; INCR is a command of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{allocate, nodeRun("check " + Block + " absent; DEL, HSET each entry, _seq; ZADD " + Listing + "[?counted:; raise the counter]"),
				blockRun("check absent; DEL, HSET each entry, _seq"), {Mode: Cluster, N: 1, Op: "ZADD " + Listing}, raise}},
		{Methods: []access.Method{access.Create}, Atomic: protocol + "[?counted:; INCR is a command of its own (a failed write leaves its number unused)]",
			Steps: []access.Step{allocate, nodeRun("check " + Block + " absent[?uniques: and the claims of $uniques]; DEL, HSET each entry, _inc, _seq; ZADD $indexes, HSET their :meta[?uniques: and :claims]; ZADD " + Listing + "[?counted:; raise the counter]"),
				claim, add, blockRun("check absent; DEL, HSET each entry, _inc, _seq"), {Mode: Cluster, N: 1, Op: "ZADD " + Listing}, raise}},
		{Methods: []access.Method{access.Put}, When: access.NoWrites, Atomic: listed,
			Steps: []access.Step{allocate, keepCreated, nodeRun("[?version:check $version as given (absent when 0); ][?created:check $created as read; ]DEL, HSET each entry, _seq; ZADD " + Listing + "[?counted:; raise the counter]"),
				blockRun("[?version:check $version as given; ][?created:check $created as read; ]DEL, HSET each entry, _seq"), {Mode: Cluster, N: 1, Op: "ZADD " + Listing}, raiseAlways}},
		{Methods: []access.Method{access.Put}, Atomic: protocol + "; the read and the script are retried while the block changes in between",
			Steps: []access.Step{allocate, keepCreated, readHash, nodeRun("check " + Block + " unchanged since read (_seq)[?version:, $version as given][?created:, $created as read][?uniques:, the claims of new values of $uniques]; DEL, HSET each entry, _inc, _seq; ZADD/ZREM $indexes and their :meta[?uniques: and :claims] for the values gained/lost; ZADD " + Listing + "[?counted:; raise the counter]"),
				claim, add, blockRun("check unchanged since read[?version:, $version as given]; DEL, HSET each entry, _inc, _seq"), {Mode: Cluster, N: 1, Op: "ZADD " + Listing}, raiseAlways, remove}},
		{Methods: []access.Method{access.Delete}, When: access.NoWrites, Atomic: listed,
			Steps: []access.Step{nodeRun("check " + Block + " exists; DEL " + Block + "; ZREM " + Listing), blockRun("check exists; DEL")}},
		{Methods: []access.Method{access.Delete}, Atomic: "node: all of it, one script run; cluster: the block's script is atomic, its listing and index entries are removed after it (a crash leaves stale entries, which reads skip and Repair removes)",
			Steps: []access.Step{readHash, nodeRun("check " + Block + " unchanged since read (_seq); DEL " + Block + "; ZREM $indexes, HDEL their :meta[?uniques: and :claims] for its values; ZREM " + Listing), blockRun("check unchanged since read (_seq); DEL"), unlist, exists, relist, remove}},

		{Methods: []access.Method{access.Set}, When: access.NoWrites, Atomic: script, Steps: []access.Step{{N: 1, Op: "EVALSHA " + Block + " [check exists; HSET $field" + bump + ", _seq]"}}},
		{Methods: []access.Method{access.Add}, Atomic: script, Steps: []access.Step{{N: 1, Op: "EVALSHA " + Block + " [check exists, $field (none: 0) within the range the sum needs; HSET $field to the sum (decoded and encoded in Lua)" + bump + ", _seq]"}}},
		{Methods: []access.Method{access.SetAt}, When: access.NoWrites, Atomic: script, Steps: []access.Step{{N: 1, Op: "EVALSHA " + Block + " [check exists, i < $field; HSET $field[i]" + bump + ", _seq]"}}},
		{Methods: []access.Method{access.Append}, When: access.NoWrites, Atomic: script, Steps: []access.Step{{N: 1, Op: "EVALSHA " + Block + " [check exists; HINCRBY $field 1, HSET $field[n]" + bump + ", _seq]"}}},
		{Methods: []access.Method{access.Update}, When: access.NoWrites, Atomic: script, Steps: []access.Step{{N: 1, Op: "EVALSHA " + Block + " [check exists[?version:, $version = IfVersion when set][?parts:, i < count per element]; HSET of the entries given" + bump + ", _seq]"}}},
		{Methods: []access.Method{access.Set}, Atomic: protocol,
			Steps: []access.Step{readHash, nodeRun("check " + Block + " exists, unchanged since read (_seq)[?uniques:, the claims of new values of $uniques]; HSET $field" + bump + ", _seq; ZADD/ZREM $indexes and their :meta[?uniques: and :claims] for the values gained/lost"),
				claim, add, blockRun("check exists, unchanged since read (_seq); HSET $field" + bump + ", _seq"), remove}},
		{Methods: []access.Method{access.SetAt}, Atomic: protocol,
			Steps: []access.Step{readHash, nodeRun("check " + Block + " exists, i < $field, unchanged since read (_seq)[?uniques:, the claims of new values of $uniques]; HSET $field[i]" + bump + ", _seq; ZADD/ZREM $indexes and their :meta[?uniques: and :claims] for the values gained/lost"),
				claim, add, blockRun("check exists, i < $field, unchanged since read (_seq); HSET $field[i]" + bump + ", _seq"), remove}},
		{Methods: []access.Method{access.Append}, Atomic: protocol,
			Steps: []access.Step{{N: 1, Op: "HMGET " + Block + " _inc _seq"}, nodeRun("check " + Block + " exists, _inc as read[?uniques:, the claims of new values of $uniques]; HINCRBY $field 1, HSET $field[n]" + bump + ", _seq; ZADD $indexes and their :meta[?uniques: and :claims] for the new values"),
				claim, add, blockRun("check exists, _inc as read; HINCRBY $field 1, HSET $field[n]" + bump + ", _seq")}},
		{Methods: []access.Method{access.Update}, Atomic: protocol + "; changes of no indexed field: one script run, atomic",
			Steps: []access.Step{{N: 1, Per: access.IfIndexedChange, Op: readHash.Op + " when the changes touch an indexed field"}, nodeRun("check " + Block + " exists[?version:, $version = IfVersion when set], unchanged since read (_seq)[?uniques:, the claims of new values of $uniques]; HSET of the entries given" + bump + ", _seq; ZADD/ZREM $indexes and their :meta[?uniques: and :claims] for the values gained/lost"),
				claim, add, blockRun("check exists[?version:, $version = IfVersion when set], unchanged since read (_seq); HSET of the entries given" + bump + ", _seq"), remove}},
	},
}

// keepCreated is Put's read of the created timestamp it keeps.
var keepCreated = access.Step{When: access.HasCreated, N: 1, Op: "HGET " + Block + " $created (a block that exists keeps it)"}

const bump = "[?updated:, HSET $updated][?version:, HINCRBY $version 1]"

var (
	unlist      = access.Step{Mode: Cluster, N: 1, Op: "ZREM " + Listing}
	exists      = access.Step{Mode: Cluster, N: 1, Op: "EXISTS " + Block}
	relist      = access.Step{Mode: Cluster, N: 1, Per: access.IfRecreated, Op: "ZADD " + Listing + " again if the block was created again meanwhile"}
	raise       = access.Step{Mode: Cluster, When: access.HasCounter, N: 1, Per: access.IfKeyGiven, Op: "EVALSHA: raise " + Counter + " to a given number"}
	raiseAlways = access.Step{Mode: Cluster, When: access.HasCounter, N: 1, Op: "EVALSHA: raise " + Counter}
)
