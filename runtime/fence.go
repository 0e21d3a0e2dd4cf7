package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// This file is the layout fence, written once for every store: two builds
// of an application, with two versions of a model, writing one collection
// during a rolling deploy. The newer build's EnsureIndexes records its
// layout (SchemaRecord) with a fence number one above the record's; a
// write of a repository whose layout lacks something the recorded one has
// (a lookup, or another way of laying out blocks) would leave it
// incomplete (a block missing from a lookup, a unique value claimed by no
// one), so it fails with ErrLayout and writes nothing.
//
// How a write knows the record it checked is still the recorded one is the
// store's primitive:
//
//   - A store that implements LayoutFencer (bbolt, a Redis node) keeps the
//     fence number beside the record, written in the same atomic write as
//     the record (SaveSchema, RecordFence), and checks it in the atomic
//     write of every block against the number the write carries
//     (WriteFence): a write that finds another number fails with an error
//     of FenceMoved, writes nothing, and the repository reads the record
//     again. No window: a write either comes before the record changed
//     (and the build that follows sees its block) or fails.
//   - Other stores (MongoDB, DynamoDB, a Redis Cluster, whose blocks are
//     on other documents, items or slots than the record) cannot check
//     another key in a block's write without a transaction or a read per
//     write. A repository there holds a lease on the record it checked: it
//     reads it again before a write once its check is older than the lease
//     (WithLayoutLease, DefaultLayoutLease), and EnsureIndexes, after
//     recording a new layout, waits out two leases before it builds the
//     new lookups or returns, so that every write checked against the old
//     record has been sent and lands before the build reads the blocks.
//     The window left: a write that takes longer than a lease from its
//     check to the store applying it.

// DefaultLayoutLease is how long a repository on a store without fenced
// writes trusts the schema record it checked before a write reads it
// again, unless WithLayoutLease sets another.
const DefaultLayoutLease = 2 * time.Second

// WithLayoutLease sets how long a repository trusts the schema record it
// checked (stores without fenced writes: see LayoutFencer) before a write
// reads it again; EnsureIndexes that records a new layout waits twice
// the longer of it and the lease recorded before. 0 or less keeps
// DefaultLayoutLease.
func WithLayoutLease(d time.Duration) Option {
	return runtimeOption(func(c *config) {
		if d > 0 {
			c.lease = d
		}
	})
}

// LayoutFencer is implemented by stores that check the layout fence in
// the atomic write of every block: SaveSchema stores RecordFence(rec)
// with the record in one atomic write, and every write (Create, Put,
// Update, Append, Delete, DeleteExpired, the batches, MigrateBlocks) whose
// context carries a fence (WriteFence) compares it with the stored one
// (none stored: 0) in its atomic write, failing with FenceMoved and
// writing nothing when they differ. FencesWrites reports whether this
// store does (a Redis store does on a single node, not on a cluster).
type LayoutFencer interface {
	FencesWrites() bool
}

type fenceKey struct{}

// WithWriteFence returns a context carrying the fence number a write
// expects the collection's record to have.
func WithWriteFence(ctx context.Context, fence int64) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// WriteFence returns the fence number a write expects (ok false: the
// write is not fenced, e.g. a write of EnsureIndexes itself).
func WriteFence(ctx context.Context) (fence int64, ok bool) {
	fence, ok = ctx.Value(fenceKey{}).(int64)
	return fence, ok
}

// RecordFence returns the fence number of a stored schema record (0: none,
// or a record written before fences existed), for SaveSchema to store
// beside it.
func RecordFence(rec []byte) int64 {
	r, err := DecodeSchema(rec)
	if err != nil || r == nil {
		return 0
	}
	return r.Fence
}

// errFenceMoved is what FenceMoved wraps: the repository reads the record
// again and, if its layout still fits, makes the write again.
var errFenceMoved = errors.New("the collection's layout fence moved")

// FenceMoved is the error of a fenced write (of operation op on aggregate
// agg and block key id) that found fence stored beside the schema record
// where it expected want: nothing was written.
func FenceMoved(op, agg string, id any, stored, want int64) error {
	return FailAt(op, agg, id, fmt.Sprintf("(the collection's recorded layout changed: fence %d, this write expected %d; nothing written)", stored, want), ErrLayout, errFenceMoved)
}

// fenceView is what a repository last found in the schema record: the
// fence of a record its layout fits, when, and the lease it holds.
type fenceView struct {
	fence int64
	at    time.Time
	lease time.Duration
}

// fenceState is a repository's fence: shared by the copies of a Repo.
type fenceState struct {
	view atomic.Pointer[fenceView]
}

func (r Repo[T, K]) lease() time.Duration {
	if r.cfg != nil && r.cfg.lease > 0 {
		return r.cfg.lease
	}
	return DefaultLayoutLease
}

// fencesWrites reports whether the store checks the fence in its writes.
func (r Repo[T, K]) fencesWrites() bool {
	f, ok := r.S.(LayoutFencer)
	return ok && f.FencesWrites()
}

// fence returns ctx carrying the fence of the recorded layout, after
// checking (when the store does not fence its writes, at most once per
// lease; when it does, once, and again after a write found the fence
// moved: fresh) that the repository's layout fits it. A layout that does
// not fit fails with ErrLayout.
func (r Repo[T, K]) fence(ctx context.Context, op string, fresh bool) (context.Context, error) {
	if r.st == nil {
		return ctx, nil
	}
	exact := r.fencesWrites()
	if v := r.st.fence.view.Load(); v != nil && !fresh && (exact || time.Since(v.at) < v.lease) {
		return WithWriteFence(ctx, v.fence), nil
	}
	at := time.Now()
	raw, err := r.S.LoadSchema(ctx)
	if errors.Is(notReady(r.S, op, r.D.Aggregate, err), ErrNotReady) {
		return ctx, nil // no table for a record yet: the write itself fails so
	}
	if err != nil {
		return ctx, r.ctxErr(ctx, op, err)
	}
	rec, err := DecodeSchema(raw)
	if err != nil {
		return ctx, Fail(op, r.D.Aggregate, nil, ErrUnreadable, err)
	}
	v := &fenceView{at: at, lease: r.lease()}
	if rec != nil {
		cur := LayoutIn(r.D, r.S)
		if why := misfits(rec.Layout, cur); len(why) > 0 {
			return ctx, FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("(collection %s is recorded in a newer layout than this build's: %s; this build's writes would leave it incomplete, so it writes nothing: run the build whose model has that layout, or run this build's EnsureIndexes to record its layout again (a rollback))", cur.Collection, strings.Join(why, "; ")), ErrLayout, nil)
		}
		v.fence = rec.Fence
		if l := time.Duration(rec.LeaseMS) * time.Millisecond; l > 0 && l < v.lease {
			v.lease = l
		}
	}
	r.st.fence.view.Store(v)
	return WithWriteFence(ctx, v.fence), nil
}

// fenced runs write with the fence of the recorded layout in its context
// (fence), unless ctx is done already (the context's error, naming block
// id, nil when it is not known yet: nothing is sent). A write that found the fence moved wrote nothing: the record
// is checked again and, while the layout fits, the write made again.
func (r Repo[T, K]) fenced(ctx context.Context, op string, id any, write func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		// Never sent: nothing was written, whatever the store.
		if id != nil {
			id = shortID(id)
		}
		return Fail(op, r.D.Aggregate, id, nil, err)
	}
	for attempt := 0; ; attempt++ {
		fctx, err := r.fence(ctx, op, attempt > 0)
		if err != nil {
			return err
		}
		err = write(fctx)
		if attempt < 3 && errors.Is(err, errFenceMoved) {
			continue
		}
		return err
	}
}

// recorded notes that the repository recorded fence with its own layout
// (EnsureIndexes): it fits.
func (r Repo[T, K]) recorded(fence int64, at time.Time) {
	if r.st != nil {
		r.st.fence.view.Store(&fenceView{fence: fence, at: at, lease: r.lease()})
	}
}

// misfits lists what the recorded layout rec has that layout cur (a
// repository's) does not write: a lookup cur does not keep the same way,
// or blocks laid out otherwise. Lookups and fields rec does not have are
// no misfit: the writes of cur keep more than rec needs.
func misfits(rec, cur Layout) []string {
	var out []string
	if !rec.SameBlocks(cur) {
		for _, c := range cur.Changes(rec) {
			if !strings.HasPrefix(c, "lookup ") && !strings.HasPrefix(c, "field ") {
				out = append(out, c)
			}
		}
	}
	for _, lk := range rec.Lookups {
		mine, ok := cur.Lookup(lk.Name)
		switch {
		case !ok:
			out = append(out, "lookup "+lk.String()+" added")
		case !mine.Same(lk):
			out = append(out, "lookup "+mine.String()+" -> "+lk.String())
		}
	}
	return out
}

// sameLayout reports whether a and b are one layout, the build state of
// their lookups aside: a change between them moves the fence.
func sameLayout(a, b Layout) bool {
	strip := func(l Layout) string {
		l.Lookups = append([]LookupLayout(nil), l.Lookups...)
		for i := range l.Lookups {
			l.Lookups[i].Building, l.Lookups[i].Resume = false, nil
		}
		return string(encodeSchema(&SchemaRecord{Layout: l}))
	}
	return strip(a) == strip(b)
}

// settle waits, on a store without fenced writes, until every write
// checked against the record before it changed has been sent: twice the
// longer of the lease recorded before (prev, in milliseconds) and the
// repository's.
func (r Repo[T, K]) settle(ctx context.Context, prevMS int64) error {
	if r.fencesWrites() {
		return nil
	}
	d := max(time.Duration(prevMS)*time.Millisecond, r.lease())
	t := time.NewTimer(2 * d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
