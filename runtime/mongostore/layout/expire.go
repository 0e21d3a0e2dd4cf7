package layout

import "github.com/noamgen/noamgen/runtime/access"

// ExpiresIndex is the TTL index on the expires field
// (mongostore.ExpiresIndex).
const ExpiresIndex = "noam_expires"

// native is what the Sweep costs say of MongoDB's own expiry.
const native = "; EnsureIndexes makes the TTL index " + ExpiresIndex + " on the expires field (expireAfterSeconds 0, a partial filter leaving out the zero time), by which MongoDB deletes an expired document within about a minute with its native index entries; a server without partial indexes (FerretDB v1) gets none: Sweep removes expired blocks there, reads hide them from the moment they expire everywhere"

// sweepNative and sweep are the costs of Sweep (noam:"expires"), with
// native indexes only and with index tables.
var (
	sweepNative = access.Cost{Methods: []access.Method{access.Sweep}, When: access.NoWrites,
		Atomic: "each expired block: one deleteOne whose filter says it has expired" + native,
		Steps: []access.Step{
			{N: 1, Per: access.PerMigrateBatch, Op: "find $coll {_id > position} sorted by _id, limit the batch (SweepOptions.Batch)"},
			{N: 1, Per: access.PerExpired, Op: "deleteOne $coll {_id, <expires>: {$gt: the zero time, $lte: now}}"},
		}}
	sweep = access.Cost{Methods: []access.Method{access.Sweep},
		Atomic: "each expired block: the document delete is atomic, its filter says it has expired; its index-table entries are removed after it (the TTL index leaves them: reads skip them, Repair removes them)" + native,
		Steps: []access.Step{
			{N: 1, Per: access.PerMigrateBatch, Op: "find $coll {_id > position} sorted by _id, limit the batch (SweepOptions.Batch)"},
			{N: 1, Per: access.PerExpired, Op: "findOneAndDelete $coll {_id, <expires>: {$gt: the zero time, $lte: now}} projection {_inc}"},
			refusedProjection,
			{Each: true, N: 1, Per: access.PerExpired, Op: "deleteMany $index {id, inc}"},
		}}
)

// clearExpired is what DeleteExpired sends for a block that has not
// expired, which the writes of a block by key of an aggregate with an
// expires field send first (access.Store.ClearExpired).
var clearExpired = []access.Step{
	{N: 1, Op: "DeleteExpired: deleteOne $coll {_id: $block, $expires: {$gt: zero time, $lte: now}} (with index tables findOneAndDelete, which removes the block's entries after it): the block goes had it expired"},
}
