package layout

import "github.com/noamgen/noamgen/runtime/access"

// TTL is the attribute DynamoDB's TTL reads (dynamostore.TTLAttr).
const TTL = "_ttl"

// native is what the Sweep costs say of DynamoDB's own expiry.
const native = "; the item of a block whose expires entry is set holds " + TTL + " (its time in Unix seconds, rounded up) and the table has DynamoDB's TTL on it (UpdateTimeToLive in EnsureIndexes), which deletes the item within days, its index items left behind: Sweep removes expired blocks sooner, reads hide them from the moment they expire, Repair removes the index items"

// sweepIndexed and sweep are the costs of Sweep (noam:"expires"), with
// index items and without.
var (
	sweepIndexed = access.Cost{Methods: []access.Method{access.Sweep}, When: access.Indexed,
		Atomic: "each expired block: its item delete is atomic, on condition that it is as read (_seq, _inc); its index items are removed after it" + native,
		Steps: []access.Step{
			{N: 1, Per: access.PerMigrateBatch, Op: "Scan $coll from the position, up to the batch (SweepOptions.Batch)"},
			{N: 1, Per: access.PerExpired, Op: "GetItem $coll {_id} (ConsistentRead: the block as stored)"},
			{N: 1, Per: access.PerExpired, Op: "DeleteItem $coll {_id} on condition of _seq and _inc"},
			{N: 1, Per: access.PerEntry, Op: "DeleteItem " + Index + " per index item of each expired block"},
		}}
	sweep = access.Cost{Methods: []access.Method{access.Sweep},
		Atomic: "each expired block: one DeleteItem on condition that its expires entry is as read" + native,
		Steps: []access.Step{
			{N: 1, Per: access.PerMigrateBatch, Op: "Scan $coll from the position, up to the batch (SweepOptions.Batch)"},
			{N: 1, Per: access.PerExpired, Op: "GetItem $coll {_id} (ConsistentRead: the block as stored)"},
			{N: 1, Per: access.PerExpired, Op: "DeleteItem $coll {_id} on condition that <expires> is as read"},
		}}
)

// clearExpired is what DeleteExpired sends for a block that has not
// expired, which the writes of a block by key of an aggregate with an
// expires field send first (access.Store.ClearExpired).
var clearExpired = []access.Step{
	{N: 1, Op: "DeleteExpired: GetItem $coll {_id} (ConsistentRead: the block as stored; had it expired, the DeleteItem of Sweep's removes it)"},
}
