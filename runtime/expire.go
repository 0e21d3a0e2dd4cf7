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

// NotExpired fails with ErrNotFound when dec, the stored entry f of block
// id that holds the expires field (Expires, or the root entry of an EAO
// block), holds a time that has passed at now, and with ErrUnreadable
// when it does not decode: what a store's read of the block with its
// expires entry says.
func (d *Desc[T, K]) NotExpired(op string, id any, f *Field[T], dec Decoder, now time.Time) error {
	t := new(T)
	if err := f.Decode(t, dec); err != nil {
		return Unreadable(op, d.Aggregate, id, err)
	}
	if d.Expired(t, now) {
		return FailAt(op, d.Aggregate, id, "(expired)", ErrNotFound, nil)
	}
	return nil
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
	return r.deleteExpired(ctx, append([]K{*r.D.ID(t)}, r.expiredHolders(ctx, "Create", t, now)...), now)
}

// expiredHolders returns the keys of the blocks, expired at now, that
// hold a unique value of t (a block holding one of t's values is its own
// holder only when it is t's block, which is not among them).
func (r Repo[T, K]) expiredHolders(ctx context.Context, op string, t *T, now time.Time) []K {
	var ids []K
	for _, l := range r.D.Lookups {
		if !l.Unique {
			continue
		}
		for _, v := range l.Values(t) {
			if !l.Indexes(v) {
				continue
			}
			h, err := r.S.GetBy(ctx, op, l, v)
			if err != nil || h == nil || !r.D.Expired(h, now) || *r.D.ID(h) == *r.D.ID(t) {
				continue // no holder, a live one, or unreadable: the write's error stands
			}
			ids = append(ids, *r.D.ID(h))
		}
	}
	return ids
}

// deleteExpired removes the blocks ids that have expired at now, each
// with the store's conditional DeleteExpired; it reports whether it
// removed any.
func (r Repo[T, K]) deleteExpired(ctx context.Context, ids []K, now time.Time) (bool, error) {
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
	ctx, err := r.fence(ctx, "Sweep", false)
	if err != nil {
		return rep, err
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
		items, last, more, err := r.S.ReadBlocks(ctx, "Sweep", after, n, false)
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

// clearExpired removes block id, with the store's conditional
// DeleteExpired, if it has expired at now, before a write of the block
// by key (Put, and the entry-level writes): the write then finds no block
// where the expired one was, and does what it does over a missing block
// (a Put creates the block anew, created now, and one with a version
// fails with ErrConflict; an entry-level write fails with ErrNotFound and
// writes nothing). It reports whether it removed the block. It costs one
// store call, made only by writes of aggregates with an expires field.
func (r Repo[T, K]) clearExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	if r.D.Expires == nil {
		return false, nil
	}
	return r.S.DeleteExpired(ctx, id, now)
}

// clearExpiredMany is clearExpired for the blocks ids of a batch
// (PutMany, DeleteMany): one read of their keys (the store's GetMany),
// then the conditional DeleteExpired of each that has expired at now
// (none, usually), so that the batch writes over them as over missing
// blocks, as Put does, and DeleteMany finds them absent, as Delete does.
// removed[i] reports the items whose block it removed (a key given twice
// is removed once, at its first item).
func (r Repo[T, K]) clearExpiredMany(ctx context.Context, ids []K, now time.Time) (removed []bool, err error) {
	removed = make([]bool, len(ids))
	if r.D.Expires == nil || len(ids) == 0 {
		return removed, nil
	}
	stored, err := r.S.GetMany(ctx, ids)
	if err != nil {
		return removed, err
	}
	for i, id := range ids {
		t := stored[id]
		if t == nil || !r.D.Expired(t, now) {
			continue
		}
		delete(stored, id) // a key given twice is removed once
		if removed[i], err = r.S.DeleteExpired(ctx, id, now); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// liveWrite runs write, an entry-level write or a Delete (op) of block
// id, over the block as live at now: an expired block is removed first and the write
// fails with ErrNotFound without running, as for a missing block. When
// the write fails with ErrDuplicate (a unique value it writes), the
// expired blocks that hold the values the block would have after changes
// are removed and the write runs once more.
func (r Repo[T, K]) liveWrite(ctx context.Context, op string, id K, changes []Change[T], write func() error) error {
	if r.D.Expires == nil {
		return write()
	}
	now := r.Now()
	removed, err := r.clearExpired(ctx, id, now)
	if err != nil {
		return r.ctxErr(ctx, op, err)
	}
	if removed {
		return FailAt(op, r.D.Aggregate, id, "(expired)", ErrNotFound, nil)
	}
	err = write()
	if err == nil || !errors.Is(err, ErrDuplicate) || len(changes) == 0 {
		return err
	}
	t, gerr := r.S.Get(ctx, id)
	if gerr != nil || t == nil {
		return err
	}
	for _, c := range changes {
		if c.Apply(t) != nil {
			return err
		}
	}
	if ok, perr := r.deleteExpired(ctx, r.expiredHolders(ctx, op, t, now), now); perr != nil || !ok {
		return err
	}
	return write()
}
