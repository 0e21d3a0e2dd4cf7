package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// ReadElems reads elements of partition f of block id with a $slice
// projection (on servers without one, the array alone, sliced here). With
// desc the slice ends at index start, or is the array's last n+1 elements
// ({$slice: -(n+1)}) for a first page.
func (s *Store[T, K]) ReadElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	field := f.Key
	client := s.coll.Database().Client()
	_, noSlice := noSliceProjection.Load(client)
	// first is the index of the first element the slice holds (-1: the
	// last elements, counted from the end).
	var slice any = bson.A{start, n + 1}
	first := start
	if desc && start < 0 {
		slice, first = -(n + 1), -1
	} else if desc {
		first = max(0, start-n)
		slice = bson.A{first, start - first + 1}
	}
	var raw bson.Raw
	var err error
	if !noSlice {
		proj := bson.D{
			{Key: LenKey + "." + field, Value: 1},
			{Key: field, Value: bson.D{{Key: "$slice", Value: slice}}},
		}
		if s.d.Expires != nil {
			proj = append(proj, bson.E{Key: s.d.Expires.Key, Value: 1})
		}
		runtime.RoundTrip(ctx)
		raw, err = s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(proj)).Raw()
		if notImplemented(err) {
			noSliceProjection.Store(client, true)
			noSlice = true
		}
	}
	if err == nil && !noSlice && first < 0 {
		if _, counted := raw.Lookup(LenKey, field).AsInt64OK(); !counted {
			noSlice = true // stored whole: the indexes need the whole array
		}
	}
	if noSlice {
		runtime.RoundTrip(ctx)
		proj := bson.D{{Key: field, Value: 1}}
		if s.d.Expires != nil {
			proj = append(proj, bson.E{Key: s.d.Expires.Key, Value: 1})
		}
		raw, err = s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(proj)).Raw()
	}
	if err != nil {
		return false, s.fail(op, id, err)
	}
	if s.d.Expires != nil {
		if err := s.notExpired(op, id, raw); err != nil {
			return false, err
		}
	}
	arr, ok := raw.Lookup(field).ArrayOK()
	if !ok {
		return false, nil
	}
	vals, err := arr.Values()
	if err != nil {
		return false, runtime.Fail(op, s.d.Aggregate, id, nil, err)
	}
	switch {
	case noSlice:
		first = 0
	case first < 0:
		count, _ := raw.Lookup(LenKey, field).AsInt64OK()
		first = max(0, int(count)-len(vals))
	}
	idx, more := runtime.ElemWindow(first+len(vals), start, n, desc)
	var dec rawDecoder
	for _, i := range idx {
		if i < first {
			continue // not in the slice (the array changed meanwhile)
		}
		dec.v = vals[i-first]
		if err := fn(i, &dec); err != nil {
			return false, runtime.Fail(op, s.d.Aggregate, id, nil, err)
		}
	}
	return more, nil
}

// ReadBlocks reads up to n documents in _id order after the block whose
// encoded key is after (desc: before it, sorted -1), with one find.
func (s *Store[T, K]) ReadBlocks(ctx context.Context, op string, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	filter := bson.D{}
	cmp, dir := "$gt", 1
	if desc {
		cmp, dir = "$lt", -1
	}
	if after != nil {
		r := runtime.NewKeyReader(after)
		k, err := s.d.Keys.Read(r)
		if err != nil || !r.Done() {
			return nil, nil, false, fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
		}
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: cmp, Value: k}}}}
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: dir}}).SetLimit(int64(n) + 1).SetBatchSize(oneBatch(n + 1))
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, nil, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	defer cur.Close(ctx)
	items := make([]*T, 0, min(n, 64))
	more := false
	for cur.Next(ctx) {
		if len(items) == n {
			// The (n+1)th document only tells that more follow: not decoded.
			more = true
			break
		}
		t, err := s.decode(cur.Current)
		if err != nil {
			// The blocks before it, and its position to resume after.
			id := s.idOf(cur.Current)
			return items, s.d.Keys.Bytes(id), true, runtime.Unreadable(op, s.d.Aggregate, id, err)
		}
		items = append(items, t)
	}
	if err := cur.Err(); err != nil {
		return nil, nil, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	var last []byte
	if len(items) > 0 {
		last = s.d.Keys.Bytes(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// ReadLookup reads aggregates through lookup l: one find on its native
// index, or through its index table.
func (s *Store[T, K]) ReadLookup(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	if err := s.settle(ctx, op); err != nil {
		return nil, nil, false, err
	}
	if !s.m().tables[l.Name] {
		return s.readNative(ctx, op, l, rng, after, n, desc)
	}
	r := *rng
	r.After = after
	return s.m().x.readLookup(ctx, op, l.Name, &r, n, desc)
}

// GetBy reads the aggregate holding value of unique lookup l.
func (s *Store[T, K]) GetBy(ctx context.Context, op string, l *runtime.Lookup[T], value []byte) (*T, error) {
	if err := s.settle(ctx, op); err != nil {
		return nil, err
	}
	m := s.m()
	if !m.tables[l.Name] {
		return s.getNative(ctx, op, l, value)
	}
	return m.x.GetBy(ctx, op, l.Name, value)
}

// ReadScope reads the blocks of one counter scope in number order after
// number after (desc: in descending order below number after, 0: from the
// highest): one find on the scope's key parts, sorted by the counted part
// (desc: -1), whatever the gaps.
func (s *Store[T, K]) ReadScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) ([]*T, int64, bool, error) {
	filter, counted, err := s.scopeFilter(op, scope, after, desc)
	if err != nil {
		return nil, 0, false, err
	}
	dir := 1
	if desc {
		dir = -1
	}
	opts := options.Find().SetSort(bson.D{{Key: counted, Value: dir}}).SetLimit(int64(n) + 1).SetBatchSize(oneBatch(n + 1))
	items, err := s.find(ctx, filter, opts)
	if err != nil {
		return nil, 0, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last int64
	if len(items) > 0 {
		_, last = s.d.Counter.Split(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// scopeFilter is the filter of the documents of one counter scope (the
// scope of key scope) numbered after after (desc: numbered from 1 to
// below after, 0: any), and the path of the counted part.
func (s *Store[T, K]) scopeFilter(op string, scope K, after int64, desc bool) (bson.D, string, error) {
	raw, err := bson.Marshal(bson.D{{Key: "k", Value: scope}})
	if err != nil {
		return nil, "", runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	parts, err := bson.Raw(raw).Lookup("k").Document().Elements()
	if err != nil || len(parts) == 0 {
		return nil, "", runtime.Fail(op, s.d.Aggregate, nil, nil, errors.New("the block key has no parts"))
	}
	filter := bson.D{}
	for _, p := range parts[:len(parts)-1] {
		filter = append(filter, bson.E{Key: "_id." + p.Key(), Value: p.Value()})
	}
	counted := "_id." + parts[len(parts)-1].Key()
	cond := bson.D{{Key: "$gt", Value: after}}
	if desc {
		cond = bson.D{{Key: "$gt", Value: 0}}
		if after > 0 {
			cond = append(cond, bson.E{Key: "$lt", Value: after})
		}
	}
	return append(filter, bson.E{Key: counted, Value: cond}), counted, nil
}

// Repair rebuilds the index tables from the aggregates. Native lookups
// need no repair: the report lists them under Native.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	if err := s.settle(ctx, "Repair"); err != nil {
		return runtime.RepairReport{}, err
	}
	m := s.m()
	var native []string
	for _, n := range m.native {
		native = append(native, s.coll.Name()+"."+n.l.Name)
	}
	if m.x == nil {
		return runtime.RepairReport{Native: native}, nil
	}
	rep, err := m.x.Repair(ctx)
	rep.Native = native
	return rep, err
}

// Ensure creates the collection, the index tables and the counters, and
// the native indexes; it follows a lookup moved between an index table and
// a native index (remap).
func (s *Store[T, K]) Ensure(ctx context.Context) error {
	if err := s.decide(ctx); err != nil {
		return err
	}
	had, err := s.indexTables(ctx)
	if err != nil {
		return err
	}
	var more []string
	if s.counters != nil {
		more = append(more, CountersCollection)
	}
	if s.m().x != nil {
		err = s.m().x.EnsureIndexes(ctx, more...)
	} else {
		err = EnsureCollections(ctx, s.coll.Database(), s.d.Aggregate, append([]string{s.coll.Name()}, more...)...)
	}
	if err != nil {
		return err
	}
	if err := s.ensureNative(ctx); err != nil {
		return err
	}
	if err := s.ensureExpiry(ctx); err != nil {
		return err
	}
	return s.remap(ctx, had)
}

// refused marks a store failure caused by a value the server refuses (a
// key it does not accept in a map, say) as runtime.ErrInvalid: such a
// write changed nothing.
func refused(err error) error {
	var re *runtime.Error
	if err != nil && errors.As(err, &re) && re.Kind == nil && badValue(err) {
		c := *re
		c.Kind = runtime.ErrInvalid
		return &c
	}
	return err
}

// Layout lists the entries block id's document holds: one per top-level
// field (under EAO the root fields together make the root entry ""), a
// partitioned array's count and elements; _id and the hidden fields are
// not entries. An array is partitioned when the document counts it (in
// _len): one written whole, even of a field this repository partitions,
// is one entry.
func (s *Store[T, K]) Layout(ctx context.Context, id K) ([]string, error) {
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOne(ctx, ByID(id)).Raw()
	if err != nil {
		return nil, s.fail("Layout", id, err)
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, runtime.Fail("Layout", s.d.Aggregate, id, nil, err)
	}
	var out []string
	root := false
	lens, _ := raw.Lookup(LenKey).DocumentOK()
	for _, e := range elems {
		key := e.Key()
		switch key {
		case "_id", LenKey, SeqKey, IncKey:
			continue
		}
		f := s.d.Field(key)
		_, counted := lens.Lookup(key).AsInt64OK()
		switch {
		case counted:
			// A partitioned array (whatever this repository's layout
			// has it): its count and its elements.
			out = append(out, key)
			arr, _ := e.Value().ArrayOK()
			vals, _ := arr.Values()
			for i := range vals {
				out = append(out, runtime.ElemKey(key, i))
			}
		case f != nil && (f.Kind == runtime.KindField || f.Kind == runtime.KindPartition) && s.d.EAO:
			// Under EAO a field written whole is part of the root entry,
			// also one this repository partitions (written before it did).
			if !root {
				root = true
				out = append(out, "")
			}
		default:
			out = append(out, key)
		}
	}
	return out, nil
}
