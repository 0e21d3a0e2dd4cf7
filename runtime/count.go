package runtime

import (
	"context"
	"time"
)

// Counts (Count, CountByF), written once for every store: a count is the
// number of aggregates the matching listing (List, ListByF) would return
// over all its pages, expired ones left out. A store counts natively where
// its answer is that number (CountStore); otherwise the repository pages
// through the listing's own verified reads, so that a count is never more
// right or less right than the listing.

// CountStore is what a store adapter implements to count natively: with
// l nil the blocks of the collection, otherwise the aggregates lookup l
// finds in key range rng (its index entries in rng: one per value of a
// multi-valued lookup, as ReadLookup returns them). now is the
// repository's clock: blocks expired at now must not be counted
// (Desc.Expired). A store answers ok false, and no error, when it cannot
// give that exact number in this call (its index entries may be stale, or
// it cannot leave expired blocks out); the repository then counts through
// the listing. It reads nothing it does not need.
type CountStore[T any, K comparable] interface {
	Count(ctx context.Context, op string, l *Lookup[T], rng *KeyRange, now time.Time) (n int64, ok bool, err error)
}

// ScopeCountStore is what a store adapter implements to count the blocks
// of one counter scope (the scope of key scope) natively, as CountStore
// counts a collection: ok false, and no error, when it cannot give the
// exact number ListScope's listing would give in this call.
type ScopeCountStore[T any, K comparable] interface {
	CountScope(ctx context.Context, op string, scope K, now time.Time) (n int64, ok bool, err error)
}

// countPage is how many blocks a count through the listing reads per
// store call.
const countPage = 256

// count counts the aggregates of the collection.
func (r Repo[T, K]) count(ctx context.Context) (int64, error) {
	if cs, ok := r.S.(CountStore[T, K]); ok {
		n, ok, err := cs.Count(ctx, "Count", nil, nil, r.Now())
		if err != nil || ok {
			return n, r.ctxErr(ctx, "Count", err)
		}
	}
	n, err := r.countRead(func(after []byte, n int) ([]*T, []byte, bool, error) {
		return r.S.ReadBlocks(ctx, "Count", after, n, false)
	})
	return n, r.ctxErr(ctx, "Count", err)
}

// countBy counts the aggregates lookup l finds in key range rng (op is
// the method, e.g. "CountByCityStars").
func (r Repo[T, K]) countBy(ctx context.Context, op string, l *Lookup[T], rng *KeyRange) (int64, error) {
	if err := rng.Err(); err != nil {
		return 0, Fail(op, r.D.Aggregate, nil, nil, err)
	}
	if rng.invalid != nil {
		return 0, CheckKey(op, r.D.Aggregate, nil, "lookup "+l.Name, rng.invalid)
	}
	if err := r.gate(ctx, op, l); err != nil {
		return 0, err
	}
	in := rng
	if c := r.S.Caps(); c.MaxIndexKeyBytes > 0 {
		in = rng.Within(c.MaxIndexKeyBytes)
	} else if limit, _ := indexLimit(c); limit > 0 && len(rng.From) > limit && len(rng.To) > limit && string(rng.From[:limit]) == string(rng.To[:limit]) {
		return 0, nil // one value too long for any block
	}
	if cs, ok := r.S.(CountStore[T, K]); ok {
		n, ok, err := cs.Count(ctx, op, l, in, r.Now())
		if err != nil || ok {
			return n, r.ctxErr(ctx, op, err)
		}
	}
	n, err := r.countRead(func(after []byte, n int) ([]*T, []byte, bool, error) {
		return r.S.ReadLookup(ctx, op, l, in, after, n, false)
	})
	return n, r.ctxErr(ctx, op, err)
}

// countScope counts the blocks of one counter scope.
func (r Repo[T, K]) countScope(ctx context.Context, op string, scope K) (int64, error) {
	if over, err := r.readKey(op, scope); err != nil || over {
		return 0, err // a scope too large for any block has none
	}
	if cs, ok := r.S.(ScopeCountStore[T, K]); ok {
		n, ok, err := cs.CountScope(ctx, op, scope, r.Now())
		if err != nil || ok {
			return n, r.ctxErr(ctx, op, err)
		}
	}
	n, err := r.countRead(r.scopeReads(ctx, op, scope, false))
	return n, r.ctxErr(ctx, op, err)
}

// countRead counts the live aggregates a listing's reads return, page by
// page. An unreadable block is counted (it is stored; whether it expired
// cannot be told) and the count goes on after it.
func (r Repo[T, K]) countRead(read func(after []byte, n int) ([]*T, []byte, bool, error)) (int64, error) {
	var total int64
	var after []byte
	for {
		items, last, more, err := read(after, countPage)
		total += int64(len(r.dropExpired(items)))
		if err != nil {
			if !resumable(err, last) {
				return 0, err
			}
			total++
		}
		if !more || last == nil {
			return total, nil
		}
		after = last
	}
}
