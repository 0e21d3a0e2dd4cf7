package runtime

import (
	"context"
	"slices"
)

// Counted keys in a batch. A CreateMany of an aggregate with a counter
// (noam:"id,counter") moves each counter scope once for the whole batch:
// one increment by the number of its items whose number is zero, whose
// result, the scope's last number, gives them the numbers before it in
// slice order, and one raise to the largest number given explicitly. A
// store groups the items with CounterScopes.

// CounterScope is one counter scope of a batch of counted block keys: the
// items whose number is to be allocated and the largest number given
// explicitly.
type CounterScope[K any] struct {
	// Scope is the scope (the encoded key parts before the counted one;
	// nil for a scalar key), Key the key of the scope's first item.
	Scope []byte
	Key   K
	// Alloc are the items whose number is zero, in slice order.
	Alloc []int
	// Given are the items whose number is given explicitly, in slice
	// order, and Raise the largest of their numbers (0 for none).
	Given []int
	Raise int64
}

// CounterScopes groups the keys ids of a batch by counter scope, in the
// order of their first items; the items i with skip[i] (refused already)
// are left out.
func CounterScopes[K any](c *Counter[K], ids []K, skip []bool) []*CounterScope[K] {
	var out []*CounterScope[K]
	byScope := map[string]*CounterScope[K]{}
	for i, id := range ids {
		if skip[i] {
			continue
		}
		scope, n := c.Split(id)
		cs := byScope[string(scope)]
		if cs == nil {
			cs = &CounterScope[K]{Scope: scope, Key: id}
			byScope[string(scope)] = cs
			out = append(out, cs)
		}
		if n == 0 {
			cs.Alloc = append(cs.Alloc, i)
		} else {
			cs.Given = append(cs.Given, i)
			cs.Raise = max(cs.Raise, n)
		}
	}
	return out
}

// Assign returns the keys of the items cs.Alloc given the numbers up to
// last (the counter's value after its increment by len(cs.Alloc)), in
// slice order: ids[i] with its number set. ok[j] is false for an item
// whose number does not fit the key (a narrow integer): its single call
// says why.
func (cs *CounterScope[K]) Assign(c *Counter[K], ids []K, last int64) (keys []K, ok []bool) {
	keys, ok = make([]K, len(cs.Alloc)), make([]bool, len(cs.Alloc))
	first := last - int64(len(cs.Alloc)) + 1
	for j, i := range cs.Alloc {
		n := first + int64(j)
		keys[j] = c.With(ids[i], n)
		_, back := c.Split(keys[j])
		ok[j] = n > 0 && back == n
	}
	return keys, ok
}

// Place sets the keys of the items of cs.Alloc (Assign, numbers up to
// last) in keys, indexed by position in the batch, and returns the items
// whose number does not fit the key: their single calls say why.
func (cs *CounterScope[K]) Place(c *Counter[K], ids []K, last int64, keys []*K) (refused []int) {
	got, ok := cs.Assign(c, ids, last)
	for j, i := range cs.Alloc {
		if ok[j] {
			keys[i] = &got[j]
		} else {
			refused = append(refused, i)
		}
	}
	return refused
}

// Keyed returns copies of the items of ts whose keys keys holds (nil:
// none), each with its key set, and their positions in ts: the blocks a
// counted batch writes, on copies so that a failed item keeps its key as
// the caller gave it.
func (d *Desc[T, K]) Keyed(ts []*T, keys []*K) (at []int, cs []*T) {
	for i, k := range keys {
		if k != nil {
			c := *ts[i]
			*d.ID(&c) = *k
			at, cs = append(at, i), append(cs, &c)
		}
	}
	return at, cs
}

// BatchCounters is what CountedMany asks of a store: the two atomic moves
// of its counters.
type BatchCounters[K any] interface {
	// AllocateMany adds n to the counter of the scope of key and returns
	// its new value, the last of the n numbers allocated (ErrOverflow
	// past the largest number).
	AllocateMany(ctx context.Context, op string, key K, n int) (int64, error)
	// RaiseMany raises the counter of the scope of each of keys to the
	// key's number where it is below, in as few round trips as the store
	// allows, and returns per key what failed (nil: raised, or already
	// at or past it).
	RaiseMany(ctx context.Context, op string, keys []K) []error
}

// CountedMany is a batch write (op "Create" or "Put") of ts, whose
// aggregate has a counter (noam:"id,counter"), setting errs; an item
// whose errs is set already was refused by the store's checks and takes
// no number. Each counter scope moves once for the batch
// (CounterScopes): one AllocateMany by the number of its items whose
// number is zero, which take the numbers up to the result in slice order,
// and one raise (RaiseMany, all scopes at once) to the largest number
// its items give. Then write writes the blocks, copies of the items with
// their keys (alloc: the number was allocated by the batch), without
// moving a counter, and returns their errors. As with the single calls,
// a number whose write fails stays allocated (a gap). The batch leaves to
// single, the item's single call, after it and in slice order (as the
// single calls would take their numbers): an item whose counter could
// not move, whose number does not fit the key, whose raise failed, and an
// allocated item whose number inUse reports taken (its write failed
// because a block holds it, given explicitly before): the single call
// takes the next free one.
func CountedMany[T any, K comparable](ctx context.Context, d *Desc[T, K], op string, ts []*T, errs []error, c BatchCounters[K],
	write func(ctx context.Context, cs []*T, alloc []bool) []error,
	inUse func(ctx context.Context, t *T, err error) bool,
	single func(context.Context, *T) error) {
	refused := make([]bool, len(ts))
	ids := make([]K, len(ts))
	for i, t := range ts {
		if refused[i] = errs[i] != nil; !refused[i] {
			ids[i] = *d.ID(t)
		}
	}
	keys := make([]*K, len(ts))
	var alone []int
	var raises []K
	var given [][]int // per raise, its scope's items with numbers given
	for _, cs := range CounterScopes(d.Counter, ids, refused) {
		if len(cs.Alloc) > 0 {
			if last, err := c.AllocateMany(ctx, op, cs.Key, len(cs.Alloc)); err != nil {
				alone = append(alone, cs.Alloc...) // the single call says why
			} else {
				alone = append(alone, cs.Place(d.Counter, ids, last, keys)...)
			}
		}
		if cs.Raise > 0 {
			raises = append(raises, d.Counter.With(cs.Key, cs.Raise))
			given = append(given, cs.Given)
		}
	}
	if len(raises) > 0 {
		for r, err := range c.RaiseMany(ctx, op, raises) {
			for _, i := range given[r] {
				if err != nil {
					alone = append(alone, i) // raised by its single call
				} else {
					keys[i] = &ids[i]
				}
			}
		}
	}
	// The blocks, on copies with their keys: a failed item keeps its key
	// as given.
	at, cs := d.Keyed(ts, keys)
	alloc := make([]bool, len(cs))
	for j, i := range at {
		_, n := d.Counter.Split(ids[i])
		alloc[j] = n == 0
	}
	var cerrs []error
	if len(cs) > 0 {
		cerrs = write(ctx, cs, alloc)
	}
	for j, i := range at {
		err := cerrs[j]
		if alloc[j] && err != nil && inUse(ctx, cs[j], err) {
			alone = append(alone, i) // a number given explicitly: the next one
			continue
		}
		if errs[i] = err; err == nil {
			*ts[i] = *cs[j]
		}
	}
	slices.Sort(alone)
	for _, i := range alone {
		errs[i] = single(ctx, ts[i])
	}
}
