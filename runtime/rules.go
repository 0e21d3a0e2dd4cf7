package runtime

import (
	"context"
	"errors"
	"fmt"
)

// The write rules every store keeps, written once: the version rule and
// its errors, the bound on attempts of a write that keeps losing races,
// and the allocation of counted block keys. Adapters decide with them and
// report with their errors; none keeps a copy.

// MaxAttempts bounds the attempts of one write that keeps losing races to
// concurrent writes of its block (a conditional write whose condition
// another write broke, read again and retried), on every store and in the
// lookup protocol. Past it the write fails with Contended's error.
const MaxAttempts = 64

// Contended is the error of a write of block id (nil: none yet, a key
// still to be allocated) that lost MaxAttempts races in a row: what names
// what kept changing ("block", "index item k0", "counter c").
func Contended(op, agg string, id any, what string) error {
	return Fail(op, agg, id, ErrConflict, fmt.Errorf("%s changed concurrently %d times in a row", what, MaxAttempts))
}

// CheckVersion is the version rule: a write of block id expecting version
// want (0: a block that does not exist yet) may go on when the block does
// not exist and want is 0, or exists at version want. A block without a
// version entry (written before the aggregate had a version) is at
// version 0: pass stored 0. Otherwise it returns VersionConflict's error.
func CheckVersion(op, agg string, id any, exists bool, stored, want int64) error {
	if (!exists && want == 0) || (exists && stored == want) {
		return nil
	}
	return VersionConflict(op, agg, id, exists, stored, want)
}

// VersionConflict is the ErrConflict of a write of block id expecting
// version want that found the block at version stored (exists false: no
// block). A store that checks the version in its own write (a condition,
// a script) reports a failed check with it.
func VersionConflict(op, agg string, id any, exists bool, stored, want int64) error {
	var detail string
	switch {
	case !exists:
		detail = fmt.Sprintf("(no block, expected version %d)", want)
	case want == 0:
		detail = fmt.Sprintf("(the block exists, at version %d)", stored)
	default:
		detail = fmt.Sprintf("(stored version %d, expected %d)", stored, want)
	}
	return FailAt(op, agg, id, detail, ErrConflict, nil)
}

// MaxAllocations bounds the numbers AllocateKey tries for one block: each
// one found in use is a block created earlier with an explicit number.
const MaxAllocations = 1000

// Allocation is what AllocateKey asks of a store to give a new block of a
// counted key its number.
type Allocation[K any] struct {
	// Op and Agg name the write, for errors; Counter names the scope's
	// counter (a key, a document id) in them.
	Op, Agg, Counter string
	// Next moves the counter on and returns its new number. Its error is
	// returned through CounterErr (an overflow at math.MaxInt64 may be any
	// error: Overflowed tells).
	Next func(ctx context.Context) (int64, error)
	// Overflowed reports whether the counter is at math.MaxInt64, after
	// Next failed (nil: Next's error says so itself, see ErrOverflow).
	Overflowed func(ctx context.Context) bool
	// With is the block key of the number n.
	With func(n int64) K
	// Number is the counted number of block key id (With's inverse).
	Number func(id K) int64
	// Try writes the block under key id. inUse reports a block that
	// already holds that key (taken by an explicit number): AllocateKey
	// tries the next number; any other error ends it.
	Try func(ctx context.Context, id K) (inUse bool, err error)
}

// AllocateKey gives a new block the next free number of its counter: it
// takes numbers from the counter and tries to write the block under each
// until one is free, at most MaxAllocations times. It returns the key the
// block was written under. The counter never hands out a number twice; a
// number that does not fit the block key, a counter at its largest
// number, and MaxAllocations numbers in use in a row are errors.
func AllocateKey[K any](ctx context.Context, a Allocation[K]) (K, error) {
	var zero K
	for range MaxAllocations {
		n, err := a.Next(ctx)
		if err != nil {
			if a.Overflowed != nil && a.Overflowed(ctx) {
				err = fmt.Errorf("%w: %w", ErrOverflow, err)
			}
			return zero, CounterErr(a.Op, a.Agg, a.Counter, err)
		}
		id := a.With(n)
		if a.Number(id) != n {
			return zero, Fail(a.Op, a.Agg, nil, nil, fmt.Errorf("counter %s: %d does not fit the block key", a.Counter, n))
		}
		inUse, err := a.Try(ctx, id)
		if !inUse {
			return id, err
		}
	}
	return zero, Fail(a.Op, a.Agg, nil, ErrDuplicate, fmt.Errorf("counter %s: %d numbers in use in a row", a.Counter, MaxAllocations))
}

// CounterErr is the error of a counter of scope counter that failed to
// move on with err: err itself when it is an *Error already, ErrOverflow's
// (the counter is at math.MaxInt64) when err matches it, else a plain
// failure naming the counter.
func CounterErr(op, agg, counter string, err error) error {
	var done *Error
	switch {
	case errors.As(err, &done):
		return err // the store's own, said already
	case errors.Is(err, ErrOverflow):
		return FailAt(op, agg, nil, "(counter "+counter+" is at the largest number)", ErrOverflow, err)
	}
	return Fail(op, agg, nil, nil, fmt.Errorf("counter %s: %w", counter, err))
}

// LookupTaken is the ErrDuplicate of a write of block id that would give
// value (encoded) of unique lookup name (as the store names it: the
// collection's and the lookup's) to a second block; cause is the store's
// error, if any.
func LookupTaken(op, agg string, id any, name string, value []byte, cause error) error {
	return FailAt(op, agg, id, "(lookup "+name+" "+FormatKey(value)+" is taken)", ErrDuplicate, cause)
}

// KeepCreated is the created-timestamp rule of a Put over a block that
// exists: the block keeps the created entry it holds, and t's created
// field is set to it. stored decodes that entry: nil when there is none
// (no block, or one written before the model had the entry: the Put gives
// it the repository's clock). An entry that does not decode is
// ErrUnreadable, naming block id; an aggregate without a created field
// has nothing to keep.
func (d *Desc[T, K]) KeepCreated(op string, id any, t *T, stored Decoder) error {
	if d.Created == nil || stored == nil {
		return nil
	}
	if err := d.Created.Decode(t, stored); err != nil {
		return Unreadable(op, d.Aggregate, id, err)
	}
	return nil
}
