package mongostore

import (
	"context"
	"errors"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// Update writes the changes of u with one updateOne: $set of the entries
// (array elements by path, on condition that they exist), $inc of the
// version, the version condition in the filter.
func (s *Store[T, K]) Update(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	if err := bsonval.CheckUpdate(op, s.d, id, u, MaxDepth); err != nil {
		return err
	}
	if err := s.checkReady(ctx, op); err != nil {
		return err
	}
	return refused(s.update(ctx, op, id, u))
}

func (s *Store[T, K]) update(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	if s.m().x == nil || !s.tableReads(u.Keys()...) {
		if hasAdd(u) {
			return s.updateAdds(ctx, op, id, u)
		}
		return s.updateOne(ctx, op, id, u)
	}
	// Through the lookup protocol.
	filter, set, inc, unset, err := s.updateOps(op, id, u)
	if err != nil {
		return err
	}
	if err := checkSize(op, s.d.Aggregate, id, bson.D{{Key: "$set", Value: set}}); err != nil {
		return err
	}
	return s.m().x.Change(ctx, op, id, Change[*T]{
		Filter: filter, Set: set, Unset: unset, Inc: inc, IfVersion: u.IfVersion, Elems: elemsOf(u),
		Apply: func(t *T) {
			for _, c := range u.Changes {
				_ = c.Apply(t) // elements were checked to exist, sums by Check
			}
		},
		Check: func(t *T) error {
			for _, c := range u.Changes {
				if !c.Add {
					continue
				}
				if _, ok := c.Sum(c.Field.Int(t)); !ok {
					return runtime.OutOfRange(op, s.d.Aggregate, id, c)
				}
			}
			return nil
		},
	})
}

// updateOps builds the filter and the $set, $inc and $unset of update u of
// block id as bson.D: elements must exist (an element's $set would pad
// the array), the root entry's fields are top-level fields, a partition
// set whole sets its length, an add change $inc's its number on condition
// that it lies in its bounds (addBounds), and the version, when there is
// one, is bumped (and checked: u.IfVersion).
func (s *Store[T, K]) updateOps(op string, id K, u runtime.Update[T]) (filter, set, inc, unset bson.D, err error) {
	filter = ByID(id)
	set = make(bson.D, 0, len(u.Changes))
	var bounds bson.A
	for _, c := range u.Changes {
		switch {
		case c.Add:
			bounds = append(bounds, addBounds(c))
			inc = append(inc, bson.E{Key: c.Field.Key, Value: c.Delta})
		case c.Elem:
			e := Elem{Field: c.Field.Key, Index: c.Index}
			filter = append(filter, bson.E{Key: e.Path(), Value: bson.D{{Key: "$exists", Value: true}}})
			set = append(set, bson.E{Key: e.Path(), Value: c.Value})
		case c.Field.Kind == runtime.KindRoot:
			raw, err := bson.Marshal(c.Value)
			if err != nil {
				return nil, nil, nil, nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
			}
			rels, _ := bson.Raw(raw).Elements()
			for _, e := range rels {
				set = append(set, bson.E{Key: e.Key(), Value: e.Value()})
			}
		default:
			set = append(set, bson.E{Key: c.Field.Key, Value: c.Value})
			if c.Field.Kind == runtime.KindPartition {
				var t T
				if err := c.Field.Assign(&t, c.Value); err != nil {
					return nil, nil, nil, nil, runtime.Fail(op, s.d.Aggregate, id, nil, err)
				}
				set = append(set, bson.E{Key: LenKey + "." + c.Field.Key, Value: c.Field.Len(&t)})
			}
		}
	}
	if len(bounds) > 0 {
		filter = append(filter, bson.E{Key: "$and", Value: bounds})
	}
	if k := s.d.VersionKey(); u.IfVersion != 0 && k != "" {
		filter = append(filter, bson.E{Key: k, Value: u.IfVersion})
	}
	inc = append(inc, s.versionInc()...)
	for _, k := range s.unsetLens(u) {
		unset = append(unset, bson.E{Key: LenKey + "." + k, Value: ""})
	}
	if err := s.checkChanges(op, id, u); err != nil {
		return nil, nil, nil, nil, err
	}
	return filter, set, inc, unset, nil
}

// elemsOf lists the elements u replaces.
func elemsOf[T any](u runtime.Update[T]) []Elem {
	var elems []Elem
	for _, c := range u.Changes {
		if c.Elem {
			elems = append(elems, Elem{Field: c.Field.Key, Index: c.Index})
		}
	}
	return elems
}

// updateOne is Update when no index table is involved: one updateOne
// whose filter and update command are built as BSON in a buffer from the
// pool (see encode.go).
func (s *Store[T, K]) updateOne(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	w := getDocBuf()
	defer w.release()
	versionKey := s.d.VersionKey()
	nf, empty, err := s.appendUpdate(w, id, u)
	if err != nil {
		return runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	filter, update := bson.Raw(w.b[:nf]), bson.Raw(w.b[nf:])
	if empty {
		// Nothing to write: only check that the block exists (at the version).
		runtime.RoundTrip(ctx)
		n, err := s.coll.CountDocuments(ctx, filter)
		if err != nil {
			return s.fail(op, id, err)
		}
		if n == 0 {
			return NoMatch(ctx, s.coll, op, s.d.Aggregate, id, versionKey, u.IfVersion, elemsOf(u))
		}
		return nil
	}
	if err := s.checkChanges(op, id, u); err != nil {
		return err
	}
	if len(update) > MaxDocumentBytes {
		return tooLarge(op, s.d.Aggregate, id, len(update), nil)
	}
	runtime.RoundTrip(ctx)
	res, err := s.coll.UpdateOne(ctx, filter, update)
	if err != nil {
		if isDuplicate(err) {
			return s.writeErr(ctx, op, id, s.applied(u), false, err)
		}
		return s.fail(op, id, err)
	}
	if res.MatchedCount == 0 {
		return NoMatch(ctx, s.coll, op, s.d.Aggregate, id, versionKey, u.IfVersion, elemsOf(u))
	}
	return nil
}

// appendUpdate appends the filter and the update command of u to w: the
// bytes the driver makes of the filter {_id, "f.i": {$exists: true} for
// each element replaced, version} and of {$set: {...}, $unset: {"_len.f":
// ""} for each slice field f set whole, $inc: {version: 1}}.
// The update starts at nf; empty says that $set is empty.
func (s *Store[T, K]) appendUpdate(w *docBuf, id K, u runtime.Update[T]) (int, bool, error) {
	versionKey := s.d.VersionKey()
	// The filter: the block, the elements replaced (only existing ones:
	// $set would pad the array), the version.
	f := w.start()
	if err := appendID(w, "_id", id); err != nil {
		return 0, false, err
	}
	for _, c := range u.Changes {
		if c.Elem {
			e := w.startDoc(path{key: c.Field.Key, idx: c.Index, at: true})
			w.bool(pathOf("$exists"), true)
			w.end(e)
		}
	}
	if u.IfVersion != 0 && versionKey != "" {
		w.int64(pathOf(versionKey), u.IfVersion)
	}
	w.end(f)
	nf := len(w.b)
	// The update: $set of the entries, $inc of the version.
	upd := w.start()
	set := w.startDoc(pathOf("$set"))
	nset := len(w.b)
	for _, c := range u.Changes {
		var err error
		switch {
		case c.Elem:
			err = w.value(path{key: c.Field.Key, idx: c.Index, at: true}, c.Value)
		case c.Field.Kind == runtime.KindRoot:
			// The root entry's fields are top-level fields of the document.
			var raw []byte
			if raw, err = bson.Marshal(c.Value); err == nil {
				err = w.elements(raw)
			}
		default:
			err = w.value(pathOf(c.Field.Key), c.Value)
			if err == nil && c.Field.Kind == runtime.KindPartition {
				var t T
				if err = c.Field.Assign(&t, c.Value); err == nil {
					w.int(pathOf(LenKey+"."+c.Field.Key), c.Field.Len(&t))
				}
			}
		}
		if err != nil {
			return 0, false, err
		}
	}
	empty := len(w.b) == nset
	w.end(set)
	// The counts a partitioned layout kept of the slice fields written
	// whole (none on a block written in this layout).
	if lens := s.unsetLens(u); len(lens) > 0 {
		un := w.startDoc(pathOf("$unset"))
		for _, k := range lens {
			w.string(pathOf(LenKey+"."+k), "")
		}
		w.end(un)
	}
	if versionKey != "" {
		inc := w.startDoc(pathOf("$inc"))
		w.int(pathOf(versionKey), 1)
		w.end(inc)
	}
	w.end(upd)
	return nf, empty, nil
}

// checkDoc fails with runtime.ErrTooLarge when doc, the document of a
// block, is over MaxDocumentBytes (with the few bytes of a stamp, where the
// lookup protocol adds one).
func (s *Store[T, K]) checkDoc(op string, id K, doc bson.D) error {
	if s.m().x != nil {
		doc = append(doc, bson.E{Key: SeqKey, Value: int64(1)}, bson.E{Key: IncKey, Value: int64(1)})
	}
	if n, ok := docBound(doc); ok && n <= MaxDocumentBytes {
		return nil
	}
	return checkSize(op, s.d.Aggregate, id, doc)
}

// checkChanges fails with runtime.ErrInvalidValue if u gives a native
// lookup a value that is not valid UTF-8: a string change is checked as it
// is, other changes through the lookup's values.
func (s *Store[T, K]) checkChanges(op string, id K, u runtime.Update[T]) error {
	var t *T
	for _, c := range u.Changes {
		keys := []string{c.Field.Key}
		if c.Field.Kind == runtime.KindRoot {
			keys = c.Field.Fields
		}
		if !s.nativeReads(keys...) {
			continue
		}
		if v, ok := c.Value.(string); ok && !c.Elem {
			if !utf8.ValidString(v) {
				return runtime.CheckUTF8(op, s.d.Aggregate, id, v)
			}
			continue
		}
		if t == nil {
			t = new(T)
		}
		_ = c.Apply(t)
	}
	if t == nil {
		return nil
	}
	return s.checkNative(op, id, t)
}

// applied is a new aggregate with the changes of u made (elements of
// partitions it does not have are left out): the values a failed update
// was writing, to name a taken unique value.
func (s *Store[T, K]) applied(u runtime.Update[T]) *T {
	t := new(T)
	for _, c := range u.Changes {
		_ = c.Apply(t)
	}
	return t
}

// insert inserts the document of new block t: a block key in use is
// runtime.ErrDuplicate (errKeyInUse, for Allocate), and so is a unique
// value another block holds (naming it).
func (s *Store[T, K]) insert(ctx context.Context, op string, id K, t *T, doc any) error {
	err := Insert(ctx, s.coll, op, s.d.Aggregate, id, doc)
	if err != nil && errors.Is(err, errKeyInUse) {
		if derr := s.duplicate(ctx, op, id, t, true, err); derr != nil {
			return derr
		}
	}
	return err
}

// writeErr is the error of a failed write of block id holding (at least)
// the values of t.
func (s *Store[T, K]) writeErr(ctx context.Context, op string, id K, t *T, insert bool, err error) error {
	if isDuplicate(err) && t != nil {
		if derr := s.duplicate(ctx, op, id, t, insert, err); derr != nil {
			return derr
		}
	}
	return s.fail(op, id, err)
}

// Append pushes elem onto partition f with one findAndModify that returns
// only the new length.
func (s *Store[T, K]) Append(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with ...runtime.Change[T]) (int, error) {
	if err := bsonval.CheckElem(op, s.d, id, f, elem, MaxDepth); err != nil {
		return 0, err
	}
	if err := s.checkReady(ctx, op); err != nil {
		return 0, err
	}
	i, err := s.appendElem(ctx, op, id, f, elem, with)
	return i, refused(err)
}

func (s *Store[T, K]) appendElem(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with []runtime.Change[T]) (int, error) {
	// The top-level fields written with the element (the updated
	// timestamp), in the same update.
	var set bson.D
	for _, c := range with {
		set = append(set, bson.E{Key: c.Field.Key, Value: c.Value})
	}
	var t *T
	if s.nativeReads(f.Key) {
		t = new(T)
		_ = f.AppendValue(t, elem)
		if err := s.checkNative(op, id, t); err != nil {
			return 0, err
		}
	}
	if s.tableReads(f.Key) {
		if err := checkSize(op, s.d.Aggregate, id, bson.D{{Key: "$push", Value: bson.D{{Key: f.Key, Value: elem}}}}); err != nil {
			return 0, err
		}
		return s.m().x.Append(ctx, op, id, f.Key, elem, Change[*T]{
			Set:   set,
			Inc:   s.versionInc(),
			Apply: func(t *T) { _ = f.AppendValue(t, elem) },
		})
	}
	i, err := Append(ctx, s.coll, op, s.d.Aggregate, id, f.Key, elem, s.d.VersionKey(), set)
	if err != nil && t != nil && (errors.Is(err, runtime.ErrDuplicate) || isDuplicate(err)) {
		if derr := s.duplicate(ctx, op, id, t, false, err); derr != nil {
			return 0, derr
		}
	}
	return i, err
}
