package layout

import "github.com/noamgen/noamgen/runtime/access"

// sweep is the cost of Sweep (noam:"expires"): bbolt has no native
// expiry, so Sweep (and the writes that find an expired block in their
// way) is what removes expired blocks from the file.
var sweep = access.Cost{Methods: []access.Method{access.Sweep},
	Atomic: "each batch of blocks is read in one read transaction, each expired block removed in a write transaction of its own on condition that it has still expired (its expires entry read in that transaction); bbolt has no native expiry: Sweep frees the space of expired blocks, which every read hides from the moment they expire",
	Steps: []access.Step{
		{Op: "1 read transaction per batch of blocks (SweepOptions.Batch): scan bucket $coll in key order from the position"},
		{Op: "1 write transaction per expired block: get " + block + "/<expires> and the indexed entries, delete every key of the block's range"},
		{Op: "delete $index: the entries of its values", Each: true},
	}}
