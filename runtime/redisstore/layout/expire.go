package layout

import "github.com/noamgen/noamgen/runtime/access"

// sweep is the cost of Sweep (noam:"expires"). Every write that sets the
// expires entry gives the block's hash PEXPIREAT of it in its script run
// (PERSIST for the zero time): Redis removes the hash alone, leaving its
// listing member, index members and claims, which reads skip, a write
// that needs the claim frees, and Repair removes.
var sweep = access.Cost{Methods: []access.Method{access.Sweep},
	Atomic: "each expired block: node: one script run on condition that its expires entry is as read; cluster: the block's script is atomic, its listing and index entries are removed after it; Redis removes a hash itself at its expires time (PEXPIREAT, set by every write of the expires entry), leaving the listing and index members, which reads skip and Repair removes",
	Steps: []access.Step{
		{N: 1, Per: access.PerMigrateBatch, Op: "ZRANGE " + Listing + " from the position, up to the batch (SweepOptions.Batch)"},
		{N: 1, Per: access.PerMigrateBatch, Op: "pipeline: HGETALL of the batch's blocks"},
		{N: 1, Per: access.PerExpired, Op: "HGET " + Block + " $expires (DeleteExpired's check of the entry alone)"},
		{N: 1, Per: access.PerExpired, Op: "HGETALL " + Block + " (the block as stored)"},
		{Mode: Node, N: 1, Per: access.PerExpired, Op: "EVALSHA [check <expires> as read (and _seq); DEL " + Block + "; ZREM $indexes, HDEL their :meta and :claims for its values; ZREM " + Listing + "]"},
		{Mode: Cluster, N: 1, Per: access.PerExpired, Op: "EVALSHA " + Block + " [check <expires> as read (and _seq); DEL]"},
		{Mode: Cluster, N: 1, Per: access.PerExpired, Op: "ZREM " + Listing},
		{Mode: Cluster, Each: true, N: 1, Per: access.PerExpired, Op: "EVALSHA: remove its entries of $index (ZREM $index, HDEL $index:meta[?unique:, $index:claims])"},
	}}

// clearExpired is what DeleteExpired sends for a block that has not
// expired, which the writes of a block by key of an aggregate with an
// expires field send first (access.Store.ClearExpired).
var clearExpired = []access.Step{
	{N: 1, Op: "DeleteExpired: HGET " + Block + " $expires (the expires entry alone, the root entry under EAO; had it passed, the block is read whole and removed as Sweep removes it)"},
}
