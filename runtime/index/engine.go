// Package index is the lookup engine every store runs: it derives index
// keys from lookup values (IndexKey: the value for a unique lookup, the
// value followed by the encoded block key otherwise), runs the cross-item
// protocol of the stores without multi-item atomicity (MongoDB index
// tables, DynamoDB, Redis Cluster), verifies lookup reads against their
// blocks and rebuilds index tables (Repair), all over a store's
// Primitives. It is tested once, against the in-memory primitives of
// runtime/storetest/memindex with a crash, a lost reply and a
// cancellation injected at every call; runtime/storetest/indextest checks
// a store's primitives behave like those.
//
// # The protocol
//
// A block with lookups carries a Stamp: its write sequence Seq and its
// incarnation Inc, drawn at random when the block is created. An index
// item records the block it points at, that block's incarnation, the
// sequence of the write that wrote it and the mark of that write's
// attempt. A write (Run, Commit):
//
//  1. reads the block and picks its sequence S above the block's
//     (NextSeq) and a random attempt mark;
//  2. adds the items of the values it gives the block, unique ones first:
//     a non-unique item is upserted (its Seq only moves up); a unique one
//     is claimed by creating it. A claim held by another block that holds
//     the value fails with runtime.ErrDuplicate; one whose block does not
//     hold it is stale once older than StaleAfter, and is then taken over,
//     after fencing its holder (see I4);
//  3. writes the block on condition that its stamp is the one read (the
//     store's block command). If that matches nothing the attempt is
//     undone (the items it created go, those it overwrote go back: as
//     the block's current state's where the block, read then, holds the
//     value) and the write starts again, up to runtime.MaxAttempts times;
//  4. removes the items of the values the block no longer holds, on
//     condition that they are of the same incarnation and older than S.
//
// Delete removes the block first, then the items of the incarnation it
// removed (Deleted).
//
// # Invariants
//
// Kept also when a reply is lost, a context is cancelled while a command
// is in flight, the process crashes between commands, or a write stalls
// for longer than StaleAfter:
//
//   - I1 (no missing item): every value a stored block holds has its item,
//     pointing at the block and its incarnation. Items are added before the
//     block write and only removed (a) after it, for values the block no
//     longer holds, (b) by an undo, which runs only when the block write
//     definitely did not happen (its condition failed, a claim failed, the
//     store refused it, or the context ended before it was sent:
//     runtime.NotSent), and removes only items still bearing the attempt's
//     mark, or (c) by reads and Repair once the block does not hold them.
//   - I2 (ambiguous outcomes keep items): when the block write's outcome
//     is unknown (Primitives.Ambiguous), the block is read back on a
//     detached context (runtime.Detach): with the attempt's stamp the write
//     is done; otherwise its items stay and the error is
//     runtime.ErrUnknownOutcome.
//   - I3 (reads verify): a read returns a block only if the block, read
//     after the item, holds the item's value; anything else is skipped, and
//     dropped once older than StaleAfter.
//   - I4 (one holder per unique value): a claim held by another block is
//     taken over only if that block does not hold the value and the claim
//     is older than StaleAfter, and only after fencing the holder: its Seq
//     is moved on (on condition of the stamp read), so that a stalled write
//     of the holder can no longer land. A creating write (which no stamp can
//     fence) that took longer than StaleAfter/2 checks after its insert that
//     it still owns its claims, and deletes its block and fails with
//     runtime.ErrDuplicate if not (runtime.ErrUnknownOutcome if it cannot
//     tell).
//   - I5 (bounded commands): batched commands name at most Limits keys and
//     bytes, and Repair holds one page of RepairBatch blocks or items.
//
// The one window left: a creating write that stalls past StaleAfter, loses
// its unique claim to a takeover, and then lands while its process crashes
// or loses the reply, leaves two blocks holding one unique value. Reads
// return the one the item names; Repair reports the conflict.
package index

import (
	"context"
	"time"
)

// Lookup is one index table of an aggregate with values of type T.
type Lookup[T any] struct {
	// Name names the lookup in errors and repair reports, as the store
	// calls it ("Hotel.name").
	Name string
	// Unique lookups map each value to at most one block.
	Unique bool
	// Values returns the encoded values v holds.
	Values func(v T) [][]byte
}

// Keys are a block's index keys, per lookup of Engine.Lookups, each
// sorted and distinct (Engine.Keys). Nil stands for no block.
type Keys [][][]byte

// Limits bound one batched command (GetItems, DeleteItems, ReadBlocks).
type Limits struct {
	Keys  int // keys per command (0: 500)
	Bytes int // bytes of keys per command (0: 4 MiB); a larger key goes alone
}

// Engine runs the lookups of one aggregate collection over a store's
// primitives. Its fields are set once, before use.
type Engine[T any] struct {
	Agg     string // aggregate type name, for errors
	Lookups []Lookup[T]
	P       Primitives[T]
	// ID renders an encoded block key as the block key errors name (nil:
	// runtime.FormatKey).
	ID func(block []byte) any
	// StaleAfter returns the protocol's grace period (nil: 30s): an item
	// that does not match its block is stale (dropped by reads, taken over
	// by unique claims) only once it is older than this.
	StaleAfter func() time.Duration
	// Now, when set, is the clock (nanoseconds) staleness is judged by
	// (nil: time.Now), for tests.
	Now func() int64
	// Batch bounds the batched commands.
	Batch Limits
	// RepairBatch is how many blocks or items Repair reads per page
	// (0: 64).
	RepairBatch int
	// CheckUnmatched makes a block write whose condition failed read the
	// block back: a client that resends a request after a lost reply
	// (DynamoDB's SDK) may see its own first send as a failed condition.
	CheckUnmatched bool
	// Atomic says that the store changes a block and its items in one
	// atomic step (Redis on a single node), so that no item is ever
	// stale: Get and Range read items without the protocol's fields
	// (through P's ItemReader methods when it has them) and never drop
	// one. They still check that each block they read holds the value
	// its item names, since a write may land between the two reads; a
	// block that does not is skipped.
	Atomic bool
}

// Attempt is what one attempt of a write (Run) read of its block and what
// it will write.
type Attempt struct {
	Found  bool  // the block exists
	Stamp  Stamp // its stamp as read (zero if !Found)
	Before Keys  // its index keys as read (nil if !Found)
	After  Keys  // its index keys once written (nil: Delete, see Deleted)
	// Write sends the block command: on condition that the block is as
	// read (its stamp is Stamp; for !Found, that it does not exist), it
	// writes it with stamp st. It reports whether the condition held. A
	// definite refusal it returns as a *runtime.Error stops the write.
	Write func(ctx context.Context, st Stamp) (bool, error)
}
