package runtime

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
