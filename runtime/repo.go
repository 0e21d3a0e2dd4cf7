package runtime

import (
	"context"
	"iter"
)

// The repository's operations. Each passes through the hooks (WithHook)
// when there are any, as one Call, and is otherwise the plain call of the
// unexported method that does the work (store.go).

// Get reads the block with key id.
func (r Repo[T, K]) Get(ctx context.Context, id K) (t *T, err error) {
	if !r.hooked() {
		return r.get(ctx, id)
	}
	c := r.call("Get", id)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		t, err = r.get(ctx, id)
		r.read(c, false, t)
		return err
	})
	return t, err
}

// GetMany reads the blocks with the given keys; keys too large for any
// block are absent from the map, as missing blocks are.
func (r Repo[T, K]) GetMany(ctx context.Context, ids []K) (m map[K]*T, err error) {
	if !r.hooked() {
		return r.getMany(ctx, ids)
	}
	c := r.call("GetMany", anys(ids)...)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		m, err = r.getMany(ctx, ids)
		for _, id := range ids {
			r.read(c, false, m[id])
		}
		return err
	})
	return m, err
}

// Create stores a new block.
func (r Repo[T, K]) Create(ctx context.Context, t *T) error {
	if !r.hooked() {
		return r.create(ctx, t)
	}
	return r.runWritten(ctx, "Create", []*T{t}, func(ctx context.Context) error { return r.create(ctx, t) })
}

// Put creates or replaces a block whole.
func (r Repo[T, K]) Put(ctx context.Context, t *T) error {
	if !r.hooked() {
		return r.put(ctx, t)
	}
	return r.runWritten(ctx, "Put", []*T{t}, func(ctx context.Context) error { return r.put(ctx, t) })
}

// runWritten runs write, a whole-block write of ts (Create, Put and their
// batches), through the hooks. Its Call names the keys of the aggregates
// (a nil one, which the write refuses, names none) and every entry of
// them; the keys are named again when the write returns, so that hooks
// see the number a counter gave a block rather than the zero asked for.
func (r Repo[T, K]) runWritten(ctx context.Context, op string, ts []*T, write func(context.Context) error) error {
	c := r.call(op)
	c.Keys = r.keysOf(ts)
	for _, t := range ts {
		if t != nil {
			c.Entries = append(c.Entries, r.D.Entries(t)...)
		}
	}
	return r.run(ctx, c, func(ctx context.Context) error {
		err := write(ctx)
		if r.D.Counter != nil {
			c.Keys = r.keysOf(ts)
		}
		return err
	})
}

// keysOf returns the block keys of the aggregates ts that are not nil.
func (r Repo[T, K]) keysOf(ts []*T) []any {
	keys := make([]any, 0, len(ts))
	for _, t := range ts {
		if t != nil {
			keys = append(keys, *r.D.ID(t))
		}
	}
	return keys
}

// Delete removes a block.
func (r Repo[T, K]) Delete(ctx context.Context, id K) error {
	if !r.hooked() {
		return r.del(ctx, id)
	}
	return r.run(ctx, r.call("Delete", id), func(ctx context.Context) error { return r.del(ctx, id) })
}

// Update writes the changes of u to block id in one atomic write.
func (r Repo[T, K]) Update(ctx context.Context, op string, id K, u Update[T]) error {
	if !r.hooked() {
		return r.update(ctx, op, id, u)
	}
	c := r.call(op, id)
	for _, ch := range u.Changes {
		c.Entries = append(c.Entries, ch.Entry())
	}
	r.bumped(c)
	return r.run(ctx, c, func(ctx context.Context) error { return r.update(ctx, op, id, u) })
}

// Add adds delta to number field f (noam:"add") of block id in one
// atomic write, as an Update with the one add change (hooks, version,
// updated timestamp and errors alike), and returns the field's new value.
// A sum outside the field's range fails with ErrOutOfRange and writes
// nothing.
func (r Repo[T, K]) Add(ctx context.Context, op string, id K, f *Field[T], delta int64) (int64, error) {
	var v int64
	err := r.Update(ctx, op, id, Update[T]{Changes: []Change[T]{AddTo(f, delta, &v)}})
	if err != nil {
		return 0, err
	}
	return v, nil
}

// Append adds elem as the last element of partition f of block id and
// returns its index.
func (r Repo[T, K]) Append(ctx context.Context, op string, id K, f *Field[T], elem any) (i int, err error) {
	if !r.hooked() {
		return r.appendElem(ctx, op, id, f, elem)
	}
	c := r.call(op, id)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		i, err = r.appendElem(ctx, op, id, f, elem)
		if err == nil {
			c.Entries = append(c.Entries, f.ElemKey(i), f.Key)
			r.bumped(c)
		}
		return err
	})
	return i, err
}

// bumped adds the entries every entry-level write that writes something
// writes with its changes: the updated timestamp and the version.
func (r Repo[T, K]) bumped(c *Call) {
	if len(c.Entries) == 0 {
		return // an Update without changes only checks
	}
	if r.D.Updated != nil {
		c.Entries = append(c.Entries, r.D.Updated.Key)
	}
	if r.D.Version != nil {
		c.Entries = append(c.Entries, r.D.Version.Key)
	}
}

// Repair rebuilds the lookups from the aggregates.
func (r Repo[T, K]) Repair(ctx context.Context) (rep RepairReport, err error) {
	if !r.hooked() {
		return r.repair(ctx)
	}
	err = r.run(ctx, r.call("Repair"), func(ctx context.Context) (err error) {
		rep, err = r.repair(ctx)
		return err
	})
	return rep, err
}

// Ensure creates what the repository stores into, after dropping the
// lookups whose options changed since the recorded layout. It then
// records the repository's layout in the store and builds the lookups new
// to the collection's data (runtime/evolve.go).
func (r Repo[T, K]) Ensure(ctx context.Context) error {
	if !r.hooked() {
		return r.ensure(ctx)
	}
	return r.run(ctx, r.call("EnsureIndexes"), r.ensure)
}

// Migrate rewrites every block of the collection that is stored in an
// older layout into the repository's, a batch at a time, each block in one
// conditional write (a block changed meanwhile is left to the writer, who
// wrote it in the current layout). It is idempotent and safe while the
// application writes. A complete run without failures clears the layout
// history of the collection's schema record.
func (r Repo[T, K]) Migrate(ctx context.Context, o MigrateOptions) (rep MigrateReport, err error) {
	if !r.hooked() {
		return r.migrate(ctx, o)
	}
	err = r.run(ctx, r.call("Migrate"), func(ctx context.Context) (err error) {
		rep, err = r.migrate(ctx, o)
		return err
	})
	return rep, err
}

// GetBy reads the aggregate holding value (encoded) of unique lookup l. A
// value too long for the store's index keys is held by no aggregate:
// ErrNotFound.
func (r Repo[T, K]) GetBy(ctx context.Context, op string, l *Lookup[T], value []byte) (t *T, err error) {
	if !r.hooked() {
		return r.getBy(ctx, op, l, value)
	}
	c := r.call(op)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		t, err = r.getBy(ctx, op, l, value)
		r.read(c, true, t)
		return err
	})
	return t, err
}

// List reads one page of blocks. At an unreadable block it returns the
// blocks before it, a Next cursor that resumes after it, and an error of
// kind ErrUnreadable naming it: following Next lists every readable block.
func (r Repo[T, K]) List(ctx context.Context, req PageRequest) (Page[*T], error) {
	return hookPage(r, ctx, "List", func(ctx context.Context) (Page[*T], error) { return r.list(ctx, req) })
}

// ListBy reads one page of the aggregates found by lookup l in key range
// rng (op is the method, e.g. "ListByCityStars").
func (r Repo[T, K]) ListBy(ctx context.Context, op string, l *Lookup[T], rng *KeyRange, req PageRequest) (Page[*T], error) {
	return hookPage(r, ctx, op, func(ctx context.Context) (Page[*T], error) { return r.listBy(ctx, op, l, rng, req) })
}

// ListScope reads one page of the blocks of one counter scope, the scope
// of key scope (its counted part is ignored).
func (r Repo[T, K]) ListScope(ctx context.Context, op string, scope K, req PageRequest) (Page[*T], error) {
	return hookPage(r, ctx, op, func(ctx context.Context) (Page[*T], error) { return r.listScope(ctx, op, scope, req) })
}

// hookPage runs a listing of blocks through the hooks.
func hookPage[T any, K comparable](r Repo[T, K], ctx context.Context, op string, fn func(context.Context) (Page[*T], error)) (p Page[*T], err error) {
	if !r.hooked() {
		return fn(ctx)
	}
	c := r.call(op)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		p, err = fn(ctx)
		r.read(c, true, p.Items...)
		return err
	})
	return p, err
}

// All iterates over every block, a page of blocks per store call, so that
// no store transaction or cursor stays open while the caller's loop runs.
// An unreadable block is yielded as an error of kind ErrUnreadable naming
// it, and the iteration goes on with the next block (a loop that returns
// at the first error stops there); any other error ends it. With hooks,
// the whole iteration is one Call, the caller's loop included; its error
// is that of the last pair yielded, and a hook's refusal is yielded as the
// only pair.
func (r Repo[T, K]) All(ctx context.Context) iter.Seq2[*T, error] {
	if !r.hooked() {
		return r.all(ctx)
	}
	return func(yield func(*T, error) bool) {
		c := r.call("All")
		ran := false
		err := r.run(ctx, c, func(ctx context.Context) error {
			ran = true
			var last error
			for t, err := range r.all(ctx) {
				r.read(c, true, t)
				last = err
				if !yield(t, err) {
					break
				}
			}
			return last
		})
		if !ran && err != nil {
			yield(nil, err)
		}
	}
}

// ListElems reads one page of the elements of partition f of block id in
// index order (op is the method, e.g. "ListRounds").
func ListElems[E, T any, K comparable](ctx context.Context, r Repo[T, K], op string, id K, f *Field[T], req PageRequest) (p Page[E], err error) {
	if !r.hooked() {
		return listElems[E](ctx, r, op, id, f, req, nil)
	}
	c := r.call(op, id)
	err = r.run(ctx, c, func(ctx context.Context) (err error) {
		p, err = listElems[E](ctx, r, op, id, f, req, c)
		return err
	})
	return p, err
}

func anys[K any](ks []K) []any {
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = k
	}
	return out
}

// Count counts the aggregates of the collection (expired ones left out).
func (r Repo[T, K]) Count(ctx context.Context) (n int64, err error) {
	if !r.hooked() {
		return r.count(ctx)
	}
	err = r.run(ctx, r.call("Count"), func(ctx context.Context) (err error) {
		n, err = r.count(ctx)
		return err
	})
	return n, err
}

// CountBy counts the aggregates lookup l finds in key range rng: as many
// as ListBy returns over all its pages (op is the method, e.g.
// "CountByCityStars").
func (r Repo[T, K]) CountBy(ctx context.Context, op string, l *Lookup[T], rng *KeyRange) (n int64, err error) {
	if !r.hooked() {
		return r.countBy(ctx, op, l, rng)
	}
	err = r.run(ctx, r.call(op), func(ctx context.Context) (err error) {
		n, err = r.countBy(ctx, op, l, rng)
		return err
	})
	return n, err
}

// CountScope counts the blocks of one counter scope, the scope of key
// scope (its counted part is ignored): as many as ListScope returns over
// all its pages (op is the method, e.g. "CountByThread").
func (r Repo[T, K]) CountScope(ctx context.Context, op string, scope K) (n int64, err error) {
	if !r.hooked() {
		return r.countScope(ctx, op, scope)
	}
	err = r.run(ctx, r.call(op), func(ctx context.Context) (err error) {
		n, err = r.countScope(ctx, op, scope)
		return err
	})
	return n, err
}

// CreateMany stores new blocks, each as Create would; the items that
// fail are reported in a *BatchError and the others are written.
func (r Repo[T, K]) CreateMany(ctx context.Context, ts []*T) error {
	create := func(ctx context.Context) error {
		if err := r.newIDs("CreateMany", ts...); err != nil {
			return err
		}
		return r.createMany(ctx, ts)
	}
	if !r.hooked() {
		return create(ctx)
	}
	return r.runWritten(ctx, "CreateMany", ts, create)
}

// PutMany creates or replaces blocks whole, each as Put would; the items
// that fail are reported in a *BatchError and the others are written.
func (r Repo[T, K]) PutMany(ctx context.Context, ts []*T) error {
	if !r.hooked() {
		return r.putMany(ctx, ts)
	}
	return r.runWritten(ctx, "PutMany", ts, func(ctx context.Context) error { return r.putMany(ctx, ts) })
}

// DeleteMany removes blocks, each as Delete would; the items that fail
// (a missing block: ErrNotFound) are reported in a *BatchError and the
// others are removed.
func (r Repo[T, K]) DeleteMany(ctx context.Context, ids []K) error {
	if !r.hooked() {
		return r.deleteMany(ctx, ids)
	}
	return r.run(ctx, r.call("DeleteMany", anys(ids)...), func(ctx context.Context) error { return r.deleteMany(ctx, ids) })
}

// Sweep removes the expired blocks, with their lookup entries, a batch at
// a time (see SweepOptions).
func (r Repo[T, K]) Sweep(ctx context.Context, o SweepOptions) (rep SweepReport, err error) {
	if !r.hooked() {
		return r.sweep(ctx, o)
	}
	err = r.run(ctx, r.call("Sweep"), func(ctx context.Context) (err error) {
		rep, err = r.sweep(ctx, o)
		return err
	})
	return rep, err
}
