// Package index is the lookup engine every store runs: it derives index
// keys from lookup values, runs the cross-item protocol of the stores
// without multi-item atomicity (MongoDB index tables, DynamoDB, Redis
// Cluster; RELIABILITY.md), verifies lookup reads against their blocks and
// rebuilds index tables (Repair), all over a store's Primitives.
//
// The protocol. A block with lookups carries a Stamp. A write reads the
// block, adds the index items its new values have and its old ones lack
// (claiming unique values first), writes the block on condition that its
// stamp is the one it read (moving Seq on), then removes the items of the
// old values (best effort). A failed attempt undoes the items it added; an
// attempt whose block write has an unknown outcome reads the block back.
// Reads verify every item against its block and skip stale ones (dropping
// them once older than StaleAfter); a unique claim whose holder does not
// hold the value is taken over once stale, after fencing the holder's write
// in flight. Repair removes what crashes left behind.
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
	// Attempts, when not 0, bounds the attempts of one write (Run) and of
	// one unique claim instead of MaxAttempts: a store whose reads back
	// off between attempts may allow more.
	Attempts int
	// Batch bounds the batched commands.
	Batch Limits
	// RepairBatch is how many blocks or items Repair reads per page
	// (0: 64).
	RepairBatch int
	// CheckUnmatched makes a block write whose condition failed read the
	// block back: a client that resends a request after a lost reply
	// (DynamoDB's SDK) may see its own first send as a failed condition.
	CheckUnmatched bool
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
