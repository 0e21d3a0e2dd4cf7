package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Expiry (noam:"expires"), written once for every store.
//
// From the moment an aggregate's expires time passes (by the repository's
// clock, WithClock), the repository treats its block as absent: reads
// drop it (Get and GetBy fail with ErrNotFound, GetMany leaves it out,
// listings, All and counts skip it), and a write that finds it in its way
// (a Create of its key, a Put that expects no block, a unique value it
// holds) removes it with the store's DeleteExpired, in one conditional
// write that removes its lookup entries with it, and is tried again once.
// Stores remove expired blocks on their own where they can (a MongoDB TTL
// index, DynamoDB's TTL, Redis PEXPIREAT); Sweep removes the rest, a
// bounded batch at a time, and Repair the index entries a store's native
// expiry leaves behind. A zero expires time means never.

// Expired reports whether t has expired at now: its expires time is set
// and not after now. An aggregate without an expires field never expires.
func (d *Desc[T, K]) Expired(t *T, now time.Time) bool {
	if d.Expires == nil || t == nil {
		return false
	}
	exp, _ := d.Expires.Value(t).(time.Time)
	return !exp.IsZero() && !exp.After(now)
}

// ExpiresAt returns t's expires time, the zero time when it has none (or
// the aggregate has no expires field).
func (d *Desc[T, K]) ExpiresAt(t *T) time.Time {
	if d.Expires == nil || t == nil {
		return time.Time{}
	}
	exp, _ := d.Expires.Value(t).(time.Time)
	return exp
}

// live reports whether t is a block the repository shows at now.
func (r Repo[T, K]) live(t *T, now time.Time) bool {
	return t != nil && !r.D.Expired(t, now)
}

// dropExpired removes the expired aggregates from items, in place.
func (r Repo[T, K]) dropExpired(items []*T) []*T {
	if r.D.Expires == nil {
		return items
	}
	now := r.Now()
	out := items[:0]
	for _, t := range items {
		if r.live(t, now) {
			out = append(out, t)
		}
	}
	clear(items[len(out):])
	return out
}

// expiredErr is the error of a read that found only an expired block.
func (r Repo[T, K]) expiredErr(op string, id any, t *T) error {
	return FailAt(op, r.D.Aggregate, id, fmt.Sprintf("(expired at %s)", r.D.ExpiresAt(t).UTC().Format(time.RFC3339Nano)), ErrNotFound, nil)
}

// fill reads a page of up to n live items with read, reading again after
// the last position while expired blocks left the page short and more
// follow, so that a page is short only at the end of the listing (or at
// an unreadable block).
func fill[T any, K comparable](r Repo[T, K], read func(after []byte, n int) ([]*T, []byte, bool, error)) func(after []byte, n int) ([]*T, []byte, bool, error) {
	if r.D.Expires == nil {
		return read
	}
	return func(after []byte, n int) ([]*T, []byte, bool, error) {
		var out []*T
		for {
			items, last, more, err := read(after, n-len(out))
			out = append(out, r.dropExpired(items)...)
			if err != nil || !more || len(out) >= n || last == nil {
				return out, last, more, err
			}
			after = last
		}
	}
}

// purgeable reports whether err, from a write, may come from an expired
// block in its way: a duplicate key or unique value, or a version
// conflict.
func (r Repo[T, K]) purgeable(err error) bool {
	return r.D.Expires != nil && (errors.Is(err, ErrDuplicate) || errors.Is(err, ErrConflict))
}

// purge removes what expired blocks hold that a write of t needs: the
// block with t's key and the holders of t's unique values, each with the
// store's conditional DeleteExpired. It reports whether it removed any.
func (r Repo[T, K]) purge(ctx context.Context, t *T) (bool, error) {
	now := r.Now()
	ids := []K{*r.D.ID(t)}
	for _, l := range r.D.Lookups {
		if !l.Unique {
			continue
		}
		for _, v := range l.Values(t) {
			if !l.Indexes(v) {
				continue
			}
			h, err := r.S.GetBy(ctx, "Create", l, v)
			if err != nil || h == nil || !r.D.Expired(h, now) {
				continue // no holder, a live one, or unreadable: the write's error stands
			}
			ids = append(ids, *r.D.ID(h))
		}
	}
	removed := false
	for _, id := range ids {
		ok, err := r.S.DeleteExpired(ctx, id, now)
		if err != nil {
			return removed, err
		}
		removed = removed || ok
	}
	return removed, nil
}

// retryExpired runs write, and when it fails in a way an expired block
// can cause, removes the expired blocks in the way of t and runs it once
// more.
func (r Repo[T, K]) retryExpired(ctx context.Context, t *T, write func() error) error {
	err := write()
	if err == nil || !r.purgeable(err) {
		return err
	}
	removed, perr := r.purge(ctx, t)
	if perr != nil || !removed {
		return err
	}
	return write()
}

// SweepOptions bound one Sweep call.
type SweepOptions struct {
	// Batch is how many blocks are read per store call (64 by default).
	Batch int
	// Limit stops the sweep after this many blocks were read (0: the
	// whole collection); Resume in the report goes on from there.
	Limit int
	// Resume is a position from an earlier SweepReport.Resume ("" from
	// the first block).
	Resume string
}

// SweepReport says what a Sweep did.
type SweepReport struct {
	// Scanned counts the blocks read, Deleted the expired ones removed.
	Scanned, Deleted int
	// Unreadable lists the blocks that could not be decoded (skipped).
	Unreadable []string
	// Resume is where the next Sweep goes on, "" after the last block.
	Resume string
}

// sweep removes the expired blocks, with their lookup entries, reading
// the collection a batch at a time from o.Resume on and stopping after
// o.Limit blocks.
func (r Repo[T, K]) sweep(ctx context.Context, o SweepOptions) (SweepReport, error) {
	var rep SweepReport
	if r.D.Expires == nil {
		return rep, nil
	}
	batch := o.Batch
	if batch <= 0 {
		batch = 64
	}
	var after []byte
	if o.Resume != "" {
		p, err := DecodeCursor(r.D.Aggregate+".Sweep", o.Resume)
		if err != nil {
			return rep, Fail("Sweep", r.D.Aggregate, nil, nil, err)
		}
		after = p
	}
	for {
		n := batch
		if o.Limit > 0 {
			n = min(n, o.Limit-rep.Scanned)
		}
		items, last, more, err := r.S.ReadBlocks(ctx, "Sweep", after, n)
		rep.Scanned += len(items)
		if err != nil {
			if !resumable(err, last) {
				return rep, r.ctxErr(ctx, "Sweep", err)
			}
			rep.Scanned++
			rep.Unreadable = append(rep.Unreadable, err.Error())
		}
		now := r.Now()
		for _, t := range items {
			if !r.D.Expired(t, now) {
				continue
			}
			ok, err := r.S.DeleteExpired(ctx, *r.D.ID(t), now)
			if err != nil {
				return rep, r.ctxErr(ctx, "Sweep", err)
			}
			if ok {
				rep.Deleted++
			}
		}
		if !more || last == nil {
			rep.Resume = ""
			return rep, nil
		}
		after = last
		if o.Limit > 0 && rep.Scanned >= o.Limit {
			rep.Resume = EncodeCursor(r.D.Aggregate+".Sweep", last)
			return rep, nil
		}
	}
}

// notExpired guards an update that writes the expires entry (keys are
// the entries it writes): an expired block is absent, so renewing it
// would bring back what had gone; the update fails with ErrNotFound
// instead, after removing the block. It costs one read, made only by
// updates of the expires entry.
func (r Repo[T, K]) notExpired(ctx context.Context, op string, id K, keys []string) error {
	if r.D.Expires == nil {
		return nil
	}
	for _, k := range keys {
		if k != r.D.Expires.Key {
			continue
		}
		t, err := r.S.Get(ctx, id)
		if err != nil || !r.D.Expired(t, r.Now()) {
			return nil // the update's own checks report a missing block
		}
		if _, err := r.S.DeleteExpired(ctx, id, r.Now()); err != nil {
			return r.ctxErr(ctx, op, err)
		}
		return r.expiredErr(op, id, t)
	}
	return nil
}
