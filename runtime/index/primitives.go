package index

import "context"

// Item is one index entry: index key Key of a lookup points at the block
// with encoded key Block. Stores without multi-item atomicity keep the
// protocol's fields with it; stores that write a block and its entries in
// one step (bbolt, Redis single node) may leave Inc, Seq and W zero.
type Item struct {
	// Key is the index key (Keys): the encoded value for a unique lookup,
	// the value followed by the encoded block key otherwise.
	Key []byte
	// Block is the encoded key (runtime.KeyCodec) of the block holding it.
	Block []byte
	// Inc is the incarnation of that block (Stamp.Inc) when it was written.
	Inc int64
	// Seq is the write sequence of the write that wrote it (about the time
	// in nanoseconds): an item older than StaleAfter whose block does not
	// hold it is stale.
	Seq int64
	// W marks the attempt that last wrote it (0: none), so that a failed
	// attempt undoes only what no later write has touched.
	W int64
}

// Stamp is the protocol's state kept in a block: every write that can
// change lookup values moves Seq above the one it read, on condition that
// the stamp is still the one it read; Inc is drawn when the block is
// created and kept by every later write. The zero Seq (or Inc) stands for
// "not set" (a block written before it had lookups, or by another tool).
type Stamp struct {
	Seq int64
	Inc int64
}

// Block is a block as the engine reads it.
type Block[T any] struct {
	Key   []byte // encoded block key
	Stamp Stamp
	// Value is the decoded aggregate; it may hold only the fields the
	// lookups read (the engine only derives index keys from it), except
	// for ReadBlocks, whose value a lookup read returns to its caller.
	Value T
	// Err, when not nil, says why the block does not decode (Value is then
	// the zero value): reads fail with it, Repair reports the block as
	// unreadable and leaves the entries pointing at it alone.
	Err error
}

// CondKind is what a conditional write of an index item requires of the
// item stored at its key.
type CondKind uint8

const (
	// Always writes the item whatever is stored (an upsert), except that
	// Seq becomes the larger of the stored one and the new one, so that an
	// older write never makes a newer write's entry look older.
	Always CondKind = iota
	// Absent requires that no item is stored at the key (a unique claim).
	Absent
	// Same requires the stored item to be Cond.Item as it was read: the
	// same Block, Seq and W (Inc need not be compared: it changes only with
	// Seq).
	Same
	// Marked requires the stored item's W to be Cond.W: the attempt that
	// wrote it has not been overtaken.
	Marked
	// Held requires the stored item to point at block Cond.Block with
	// incarnation Cond.Inc and, when Cond.Before is not 0, to be older than
	// it (Seq < Before): the entries a write of that incarnation may remove.
	Held
)

// Cond is the condition of a conditional write or delete of index items.
type Cond struct {
	Kind   CondKind
	Item   Item   // Same: the item as read
	W      int64  // Marked
	Block  []byte // Held
	Inc    int64  // Held
	Before int64  // Held: 0 for any Seq
}

// Primitives are the store operations the engine runs the lookup protocol,
// the verified reads and Repair over, for one aggregate collection and its
// index tables. A lookup is named by its position in Engine.Lookups.
// Every method is one command (or one batch) of the store; none retries a
// condition that does not hold. Errors are the store's own, unwrapped: the
// engine wraps them in *runtime.Error. A method may be called with a
// context that is already done and must then fail without sending anything.
type Primitives[T any] interface {
	// PutItem writes item it in lookup l on condition c (Always, Absent,
	// Same or Marked). It reports whether the condition held (the item was
	// written) and, for Always, the item stored before (nil when there was
	// none); the other kinds may return a nil prev.
	PutItem(ctx context.Context, l int, it Item, c Cond) (ok bool, prev *Item, err error)
	// GetItems reads the items of lookup l with the given keys (at most
	// MaxBatch, distinct): the ones that exist, in any order.
	GetItems(ctx context.Context, l int, keys [][]byte) ([]Item, error)
	// DeleteItems deletes the items of lookup l with the given keys (at
	// most MaxBatch, distinct) that satisfy c (Same with one key, Marked or
	// Held). Items that do not are left alone, which is not an error. It
	// returns how many it deleted.
	DeleteItems(ctx context.Context, l int, keys [][]byte, c Cond) (int, error)
	// ScanItems reads up to limit items of lookup l with from <= Key < to
	// (to nil: no upper bound), in key order (bytes.Compare); with desc,
	// the last limit of them, in descending key order.
	ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]Item, error)

	// ReadBlocks reads the blocks with the given encoded keys (at most
	// MaxBatch, distinct), with their stamps and values: the ones that
	// exist, in any order. A block that does not decode comes back with
	// Block.Err set, not as an error of the call.
	ReadBlocks(ctx context.Context, keys [][]byte) ([]Block[T], error)
	// FenceBlock sets the Seq of block key to seq on condition that its
	// stamp is still old, so that a write in flight that read old can no
	// longer land. It reports whether the condition held (false also when
	// the block does not exist).
	FenceBlock(ctx context.Context, key []byte, old Stamp, seq int64) (bool, error)
	// DeleteBlock deletes block key on condition that its stamp is st. It
	// reports whether it did.
	DeleteBlock(ctx context.Context, key []byte, st Stamp) (bool, error)
	// ScanBlocks reads up to limit blocks from scan position after (nil:
	// from the start), with their stamps and values (at least the fields
	// the lookups read), in the store's scan order: encoded key order
	// (bytes.Compare) where the store has one, else any order that pages
	// resume in (DynamoDB's hash order, Redis's SCAN order), so that
	// paging through visits every block that stays (a store without an
	// order may visit one twice). It returns the position the next page
	// starts from, nil at the end. A position is the store's own, kept
	// across processes (a lookup build resumes from it, see
	// runtime.RepairOptions): the last block's key where a key says where
	// the scan is (NextAfter), a SCAN cursor on Redis.
	ScanBlocks(ctx context.Context, after []byte, limit int) (page []Block[T], next []byte, err error)

	// Ambiguous reports whether err, returned by a write, leaves its
	// outcome unknown: the command may have been applied although its
	// reply did not arrive (a network error, a timeout, a cancelled
	// context while the command was in flight).
	Ambiguous(err error) bool
}

// FieldReader may be implemented by Primitives whose ReadBlocks reads
// whole blocks where a read of the lookups' fields would do (MongoDB
// documents): Repair, which only derives index keys from the blocks it
// reads, then reads them with ReadFields.
type FieldReader[T any] interface {
	// ReadFields is ReadBlocks, except that a value need hold only the
	// fields the lookups read (as ScanBlocks's values).
	ReadFields(ctx context.Context, keys [][]byte) ([]Block[T], error)
}

// HeldPutter may be implemented by the Primitives of a store that writes
// a block and its index items in one atomic step (bbolt's transactions,
// the scripts of a single Redis node), whose items carry none of the
// protocol's fields: a write of the block removes the items of the values
// it takes away whoever wrote them. Repair then writes an item only in one
// step with a check that its block still holds the value, so that a block
// written since Repair read it cannot be left with an item of a value it
// no longer holds. Without it, Repair writes the item and reads the block
// again after (the protocol's items tell Repair's own apart).
type HeldPutter[T any] interface {
	// PutHeld is PutItem (condition Absent or Same) of item it, applied
	// only if, in the same atomic step, block it.Block is still the block
	// b Repair read: the store compares its stamp with b.Stamp where its
	// blocks carry one, or reads it again and asks holds. It reports
	// whether the item was written (false: the item or the block
	// changed; Repair reads them again).
	PutHeld(ctx context.Context, l int, it Item, c Cond, b Block[T], holds func(Block[T]) bool) (bool, error)
}

// NextAfter is the next position of a page of ScanBlocks read with limit
// limit by a store whose positions are block keys: the last block's key,
// or nil when the page is short (the scan is done).
func NextAfter[T any](page []Block[T], limit int) []byte {
	if len(page) < limit || len(page) == 0 {
		return nil
	}
	return page[len(page)-1].Key
}
