package redisstore

import (
	"context"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// Counts (runtime.CountStore). On a single node a write changes its
// block, its index members and the listing in one script run, so the
// sorted sets hold exactly what a listing returns: CountBy is one
// ZLEXCOUNT of the lookup's sorted set over the query's range (members
// are value + block key, one per value of a multi-valued lookup), Count
// one ZCARD of the listing. On a cluster the index sets and the listing
// are kept by the lookup protocol and may hold stale members (a write
// that crashed, one in flight), which only reading the blocks tells
// apart: the adapter declines and runtime.Repo counts through the
// listing's verified reads.
//
// It declines, on a node too, for an aggregate with an expires field: a
// block is expired by the repository's clock, which Redis's PEXPIREAT
// (the server's clock, and the block's hash alone, its index members and
// listing member staying) does not follow, and only the block's hash
// holds its expires time. An exact count would read the expires entry of
// every block counted; in one script run that is a server blocked for the
// whole collection (or the whole range), where the listing reads the
// blocks 256 at a time between other clients' commands.

var _ runtime.CountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// Count implements runtime.CountStore: one command on a single node.
func (s *Store[T, K]) Count(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, now time.Time) (int64, bool, error) {
	if s.cluster || s.d.Expires != nil {
		return 0, false, nil
	}
	var n int64
	var err error
	if l == nil {
		n, err = s.c.ZCard(ctx, s.listKey()).Result()
	} else {
		lo, hi := lexRange(rng)
		n, err = s.c.ZLexCount(ctx, s.lookupKeys(s.lookupIndex(l)).z, lo, hi).Result()
	}
	if err != nil {
		return 0, false, s.errOf(op, nil, err)
	}
	return n, true, nil
}

var _ runtime.ScopeCountStore[struct{}, string] = (*Store[struct{}, string])(nil)

// CountScope implements runtime.ScopeCountStore: on a single node, one
// ZLEXCOUNT of the listing over the scope's range (its blocks' keys are
// one range of it, as ListScope reads them); it declines where Count does.
func (s *Store[T, K]) CountScope(ctx context.Context, op string, scope K, now time.Time) (int64, bool, error) {
	if s.cluster || s.d.Expires != nil {
		return 0, false, nil
	}
	prefix, _ := s.d.Counter.Split(scope)
	lo, hi := lexRange(&runtime.KeyRange{From: s.d.Keys.Bytes(s.d.Counter.With(scope, 1)), To: runtime.TupleEnd(prefix)})
	n, err := s.c.ZLexCount(ctx, s.listKey(), lo, hi).Result()
	if err != nil {
		return 0, false, s.errOf(op, nil, err)
	}
	return n, true, nil
}

// lexRange is the ZLEXCOUNT range of the members in [rng.From, rng.To).
// A member is a value followed by a block key, whose first byte (a
// component's tag) is below 0xFF: it is in the range exactly when its
// value is (a bound that ends a value's tuple, TupleEnd, is above every
// member of that value).
func lexRange(rng *runtime.KeyRange) (lo, hi string) {
	lo, hi = "-", "+"
	if rng.From != nil {
		lo = "[" + string(rng.From)
	}
	if rng.To != nil {
		hi = "(" + string(rng.To)
	}
	return lo, hi
}

// Primitives returns the store primitives the index engine runs the
// lookups on, in the order of the descriptor's lookups: for suites that
// write index items behind the repository's back (a stale entry, as a
// crash of the cluster's lookup protocol leaves one).
func (s *Store[T, K]) Primitives() index.Primitives[*T] { return s.px }
