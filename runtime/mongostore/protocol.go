package mongostore

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// The block commands of the lookup protocol's writes; the index engine
// (x.e) runs the rest of each write.

// checkValues fails with runtime.ErrInvalidValue if a lookup value of v has
// a string that is not valid UTF-8 (which MongoDB rejects and FerretDB
// silently replaces). Block keys are checked before, by runtime.Repo, for
// every store.
func (x *indexed[T, K]) checkValues(op string, id K, v *T) error {
	for _, l := range x.e.Lookups {
		for _, val := range l.Values(v) {
			if err := runtime.CheckKey(op, x.s.d.Aggregate, id, "lookup "+l.Name, val); err != nil {
				return err
			}
		}
	}
	return nil
}

// state is what a write reads of the block before changing it: the lookup
// fields, the stamp, the version and the partition lengths.
type state[T any] struct {
	found   bool
	stamp   index.Stamp
	version int64
	// versioned: the document has a version field (a block written
	// before the model had one has none, and is at version 0).
	versioned bool
	raw       bson.Raw
	value     *T
}

func (x *indexed[T, K]) projection() bson.D {
	p := bson.D{{Key: SeqKey, Value: 1}, {Key: IncKey, Value: 1}, {Key: LenKey, Value: 1}}
	if x.versionKey != "" {
		p = append(p, bson.E{Key: x.versionKey, Value: 1})
	}
	for _, f := range x.fields {
		p = append(p, bson.E{Key: f, Value: 1})
	}
	for _, f := range x.s.d.Fields {
		if f.Number && !slices.Contains(x.fields, f.Key) {
			p = append(p, bson.E{Key: f.Key, Value: 1}) // Change.Check reads it
		}
	}
	if c := x.s.d.Created; c != nil {
		p = append(p, bson.E{Key: c.Key, Value: 1}) // Put keeps it
	}
	return p
}

// read reads the state of block id (found is false if there is none).
func (x *indexed[T, K]) read(ctx context.Context, op string, id K) (state[T], error) {
	var st state[T]
	runtime.RoundTrip(ctx)
	raw, err := x.s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(x.projection())).Raw()
	if err == mongo.ErrNoDocuments {
		return st, nil
	}
	if err != nil {
		return st, runtime.Fail(op, x.s.d.Aggregate, id, nil, err)
	}
	return x.stateOf(raw), nil
}

// stateOf is the state of a block read with projection().
func (x *indexed[T, K]) stateOf(raw bson.Raw) state[T] {
	st := state[T]{found: true, raw: raw}
	st.stamp.Seq, _ = raw.Lookup(SeqKey).AsInt64OK()
	st.stamp.Inc, _ = raw.Lookup(IncKey).AsInt64OK()
	if x.versionKey != "" {
		st.version, st.versioned = raw.Lookup(x.versionKey).AsInt64OK()
	}
	st.value = x.s.convert(&raw)
	return st
}

// keys are the index keys of block id holding v (none if !found).
func (x *indexed[T, K]) keys(id K, v *T, found bool) index.Keys {
	if !found {
		return nil
	}
	return x.e.Keys(x.s.d.Keys.Bytes(id), v)
}

// Create stores block id holding v: doc(s) is its document with stamp s.
// It fails with runtime.ErrDuplicate if the block exists or a unique value
// of v is taken, changing nothing.
func (x *indexed[T, K]) Create(ctx context.Context, op string, id K, v *T, doc func(Stamp) any) error {
	if err := x.checkValues(op, id, v); err != nil {
		return err
	}
	var dup error
	blk := x.s.d.Keys.Bytes(id)
	done, err := x.e.Commit(ctx, op, id, blk, index.NewInc(), nil, x.e.Keys(blk, v), index.NextSeq(0), true, func(ctx context.Context, st index.Stamp) (bool, error) {
		runtime.RoundTrip(ctx)
		_, err := x.s.coll.InsertOne(ctx, doc(Stamp(st)))
		if mongo.IsDuplicateKeyError(err) {
			if rerr := x.s.duplicate(ctx, op, id, v, true, err); rerr != nil {
				return false, rerr
			}
			dup = err
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	if !done {
		return keyInUse(op, x.s.d.Aggregate, id, dup)
	}
	return nil
}

// Put creates block id holding v or replaces it whole; doc(s) is its
// document with stamp s. When versioned (the aggregate has a version
// entry) the block must be at the given version, or not exist when it is
// 0; otherwise Put fails with runtime.ErrConflict.
func (x *indexed[T, K]) Put(ctx context.Context, op string, id K, v *T, versioned bool, version int64, doc func(Stamp) any) error {
	if err := x.checkValues(op, id, v); err != nil {
		return err
	}
	blk := x.s.d.Keys.Bytes(id)
	after := x.e.Keys(blk, v)
	return x.e.Run(ctx, op, id, blk, func() (index.Attempt, error) {
		st, err := x.read(ctx, op, id)
		if err != nil {
			return index.Attempt{}, err
		}
		if versioned {
			if err := runtime.CheckVersion(op, x.s.d.Aggregate, id, st.found, st.version, version); err != nil {
				return index.Attempt{}, err
			}
		}
		if err := x.s.d.KeepCreated(op, id, v, x.s.created(st.raw)); err != nil {
			return index.Attempt{}, err
		}
		return index.Attempt{Found: st.found, Stamp: st.stamp, Before: x.keys(id, st.value, st.found), After: after,
			Write: func(ctx context.Context, stamp index.Stamp) (bool, error) {
				d := doc(Stamp(stamp))
				if !st.found {
					runtime.RoundTrip(ctx)
					_, err := x.s.coll.InsertOne(ctx, d)
					if mongo.IsDuplicateKeyError(err) {
						if rerr := x.s.duplicate(ctx, op, id, v, true, err); rerr != nil {
							return false, rerr
						}
						return false, nil // created meanwhile: read it again
					}
					return err == nil, err
				}
				filter := stamped(id, st.stamp)
				switch {
				case versioned && st.versioned:
					filter = append(filter, bson.E{Key: x.versionKey, Value: version})
				case versioned:
					// A block written before the model had a version:
					// at version 0 as long as it has none.
					filter = append(filter, bson.E{Key: x.versionKey, Value: bson.D{{Key: "$exists", Value: false}}})
				}
				runtime.RoundTrip(ctx)
				res, err := x.s.coll.ReplaceOne(ctx, filter, d)
				if isDuplicate(err) {
					if rerr := x.s.duplicate(ctx, op, id, v, false, err); rerr != nil {
						return false, rerr
					}
				}
				if err != nil {
					return false, err
				}
				return res.MatchedCount == 1, nil
			}}, nil
	})
}

// Change is a partial write of one block that may change lookup values.
type Change[T any] struct {
	// Filter selects the block, with any condition the write needs (e.g.
	// that an element exists); nil selects it by key.
	Filter bson.D
	// Set, Unset, Inc and Push are the $set, $unset, $inc and $push of
	// the update.
	Set, Unset, Inc, Push bson.D
	// Count, when set, is the partitioned field whose count (_len) the
	// write relies on: a block without one gets it first (countElems).
	Count string
	// IfVersion, when not 0, is the version the block must have.
	IfVersion int64
	// Elems are elements of partitioned arrays that must exist.
	Elems []Elem
	// Apply makes the change on the aggregate as read (only the lookup
	// fields are set), to compute the new lookup values.
	Apply func(T)
	// Check, when set, refuses the change of the aggregate as read
	// (whole), before anything is written: the write is conditional on
	// the block being as read, so the check holds when it applies (the
	// bounds of an add change).
	Check func(T) error
}

// Change applies c to block id, keeping the index tables right. It fails
// with runtime.ErrNotFound if the block or an element in c.Elems does not
// exist, with runtime.ErrConflict if it is not at version c.IfVersion, and
// with runtime.ErrDuplicate if the change gives it a unique value another
// block holds; a failed Change changes nothing.
func (x *indexed[T, K]) Change(ctx context.Context, op string, id K, c Change[*T]) error {
	_, err := x.change(ctx, op, id, c)
	return err
}

// Append pushes elem onto the partitioned array field of block id (the
// lookups hold values of its elements) and returns its index. c.Apply
// appends elem to the aggregate as read.
func (x *indexed[T, K]) Append(ctx context.Context, op string, id K, field string, elem any, c Change[*T]) (int, error) {
	c.Push = append(c.Push, bson.E{Key: field, Value: elem})
	c.Count = field
	c.Inc = append(bson.D{{Key: LenKey + "." + field, Value: 1}}, c.Inc...)
	st, err := x.change(ctx, op, id, c)
	if err != nil {
		return 0, err
	}
	n, _ := st.raw.Lookup(LenKey, field).AsInt64OK()
	return int(n), nil
}

// check fails when st does not allow a write expecting version want (0:
// any) and the elements elems.
func (x *indexed[T, K]) check(op string, id K, st state[T], want int64, elems []Elem) error {
	if !st.found {
		return runtime.Fail(op, x.s.d.Aggregate, id, runtime.ErrNotFound, nil)
	}
	if x.versionKey != "" && want != 0 {
		if err := runtime.CheckVersion(op, x.s.d.Aggregate, id, true, st.version, want); err != nil {
			return err
		}
	}
	for _, e := range elems {
		n, _ := st.raw.Lookup(LenKey, e.Field).AsInt64OK()
		if e.Index < 0 || int64(e.Index) >= n {
			return runtime.FailAt(op, x.s.d.Aggregate, id, e.String(), runtime.ErrNotFound, nil)
		}
	}
	return nil
}

func (x *indexed[T, K]) change(ctx context.Context, op string, id K, c Change[*T]) (state[T], error) {
	var st state[T]
	blk := x.s.d.Keys.Bytes(id)
	err := x.e.Run(ctx, op, id, blk, func() (index.Attempt, error) {
		var err error
		if st, err = x.read(ctx, op, id); err != nil {
			return index.Attempt{}, err
		}
		if _, ok := st.raw.Lookup(LenKey, c.Count).AsInt64OK(); c.Count != "" && st.found && !ok {
			// Written while the field was whole: count its elements.
			if err := countElems(ctx, x.s.coll, op, x.s.d.Aggregate, id, c.Count); err != nil {
				return index.Attempt{}, err
			}
			if st, err = x.read(ctx, op, id); err != nil {
				return index.Attempt{}, err
			}
		}
		if err := x.check(op, id, st, c.IfVersion, c.Elems); err != nil {
			return index.Attempt{}, err
		}
		if c.Check != nil && st.found {
			if err := c.Check(st.value); err != nil {
				return index.Attempt{}, err
			}
		}
		before := x.e.Keys(blk, st.value)
		if c.Apply != nil {
			c.Apply(st.value)
		}
		if err := x.checkValues(op, id, st.value); err != nil {
			return index.Attempt{}, err
		}
		read := st
		return index.Attempt{Found: true, Stamp: st.stamp, Before: before, After: x.e.Keys(blk, st.value),
			Write: func(ctx context.Context, stamp index.Stamp) (bool, error) {
				filter := slices.Clone(c.Filter)
				if len(filter) == 0 {
					filter = ByID(id)
				}
				filter = append(filter, stamped(id, read.stamp)[1:]...)
				if c.Count != "" {
					// The count the new element's index is read from.
					n, _ := read.raw.Lookup(LenKey, c.Count).AsInt64OK()
					filter = append(filter, bson.E{Key: LenKey + "." + c.Count, Value: n})
				}
				update := bson.D{{Key: "$set", Value: append(slices.Clone(c.Set), bson.E{Key: SeqKey, Value: stamp.Seq})}}
				if len(c.Unset) > 0 {
					update = append(update, bson.E{Key: "$unset", Value: c.Unset})
				}
				if len(c.Inc) > 0 {
					update = append(update, bson.E{Key: "$inc", Value: c.Inc})
				}
				if len(c.Push) > 0 {
					update = append(update, bson.E{Key: "$push", Value: c.Push})
				}
				runtime.RoundTrip(ctx)
				res, err := x.s.coll.UpdateOne(ctx, filter, update)
				if isDuplicate(err) {
					if rerr := x.s.duplicate(ctx, op, id, read.value, false, err); rerr != nil {
						return false, rerr
					}
				}
				if err != nil {
					return false, err
				}
				return res.MatchedCount == 1, nil
			}}, nil
	})
	return st, err
}

// Delete removes block id, the block filter matches (ByID(id), perhaps
// with a condition), and then its index entries: those of the incarnation
// it removed. It fails with runtime.ErrNotFound if there is none.
func (x *indexed[T, K]) Delete(ctx context.Context, op string, filter bson.D, id K) error {
	client := x.s.coll.Database().Client()
	opts := options.FindOneAndDelete()
	if _, no := noFindAndModifyProjection.Load(client); !no {
		opts.SetProjection(x.projection())
	}
	runtime.RoundTrip(ctx)
	raw, err := x.s.coll.FindOneAndDelete(ctx, filter, opts).Raw()
	if notImplemented(err) {
		noFindAndModifyProjection.Store(client, true)
		runtime.RoundTrip(ctx)
		raw, err = x.s.coll.FindOneAndDelete(ctx, filter).Raw()
	}
	if err != nil {
		return Err(op, x.s.d.Aggregate, id, err)
	}
	inc, _ := raw.Lookup(IncKey).AsInt64OK()
	return x.e.Deleted(ctx, op, id, x.s.d.Keys.Bytes(id), inc, x.e.Keys(x.s.d.Keys.Bytes(id), x.s.convert(&raw)))
}

// GetBy reads the aggregate holding value key (encoded) of the named unique
// lookup. It fails with runtime.ErrNotFound if none does.
func (x *indexed[T, K]) GetBy(ctx context.Context, op, lookup string, key []byte) (*T, error) {
	return x.e.Get(ctx, op, x.lookup(lookup), key)
}

// readLookup reads up to n aggregates found by the named lookup in key
// range rng after position rng.After, in index key order (desc: before
// it, in descending order; index.Engine.Range).
func (x *indexed[T, K]) readLookup(ctx context.Context, op, lookup string, rng *runtime.KeyRange, n int, desc bool) ([]*T, []byte, bool, error) {
	return x.e.Range(ctx, op, x.lookup(lookup), rng, n, desc)
}

// Repair rebuilds the index tables from the aggregates (index.Engine.Repair).
// Run it while nothing else writes the collection.
func (x *indexed[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	return x.e.Repair(ctx)
}
