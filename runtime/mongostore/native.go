package mongostore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// Native lookups
//
// By default a lookup is a secondary index of the aggregate collection,
// created by EnsureIndexes and kept by the server in the same atomic write
// as the document:
//
//   - a lookup of one field is the index {field: 1, _id: 1}; a slice field or
//     an element path (tags, games.game, rounds.serial) makes it multikey;
//   - a composite lookup is the compound index of its parts in part order,
//     then _id: {city: 1, stars: 1, _id: 1};
//   - a unique lookup is the unique index of its parts (without _id), with a
//     partial filter that leaves zero values out unless the lookup indexes
//     them (noam:"lookup,unique,zeros"): {name: {$gt: ""}} for a string,
//     {$or: [{n: {$gt: 0}}, {n: {$lt: 0}}]} for a signed integer (a filter
//     MongoDB accepts from 7.0), {n: {$gt: 0}} for an unsigned one.
//
// Indexes are named "noam_" + the lookup's name. A query is one find with
// the filter and sort the index serves, in (value, block key) order, e.g.
// ListByCityStars(Eq "Dortmund", Gte 4):
//
//	find({city: "Dortmund", stars: {$gte: 4}}).sort({stars: 1, _id: 1})
//
// and a page after a cursor adds the keyset condition
// {$or: [{stars: {$gt: s}}, {stars: s, _id: {$gt: id}}]}. A GetBy is one
// findOne. Writes are the single commands of unindexed fields; a duplicate
// key on a unique index is runtime.ErrDuplicate naming the value. There is
// nothing to verify and nothing to repair.
//
// Lookups marked noam:"lookup,table", all lookups under the option
// IndexTables, unique ones under UniqueTables, and composite lookups with a
// part inside a slice (a find returns a document once, where such a lookup
// lists an aggregate once per value it holds in the range) keep the
// index-table mapping of the package documentation.

// nativeLookup is a lookup served by a secondary index of the collection.
type nativeLookup[T any] struct {
	l     *runtime.Lookup[T]
	index string
}

// IndexName names the native index of a lookup: "noam_cityStars".
func IndexName(lookup string) string { return "noam_" + lookup }

// indexModel is the index of lookup l.
func indexModel[T any](l *runtime.Lookup[T], partial bool) mongo.IndexModel {
	keys := bson.D{}
	for _, p := range l.Paths {
		keys = append(keys, bson.E{Key: p.Path, Value: 1})
	}
	opts := options.Index().SetName(IndexName(l.Name))
	if l.Unique {
		opts.SetUnique(true)
		if l.SkipsZeros() && partial {
			opts.SetPartialFilterExpression(nonZero(l.Paths))
		}
	} else {
		keys = append(keys, bson.E{Key: "_id", Value: 1})
	}
	return mongo.IndexModel{Keys: keys, Options: opts}
}

// nonZero is the partial filter that leaves out documents with a zero
// value in any part.
func nonZero(paths []runtime.LookupPath) bson.D {
	var conds bson.A
	for _, p := range paths {
		conds = append(conds, nonZeroCond(p))
	}
	if len(conds) == 1 {
		return conds[0].(bson.D)
	}
	return bson.D{{Key: "$and", Value: conds}}
}

func nonZeroCond(p runtime.LookupPath) bson.D {
	switch p.Kind {
	case runtime.PartInt:
		return bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: p.Path, Value: bson.D{{Key: "$gt", Value: 0}}}},
			bson.D{{Key: p.Path, Value: bson.D{{Key: "$lt", Value: 0}}}},
		}}}
	case runtime.PartUint:
		return bson.D{{Key: p.Path, Value: bson.D{{Key: "$gt", Value: 0}}}}
	}
	return bson.D{{Key: p.Path, Value: bson.D{{Key: "$gt", Value: ""}}}}
}

// ensureNative makes the native indexes as the lookups are now, after
// listing the collection's indexes: it creates those missing, replaces
// those whose lookup changed (its keys, unique, zeros: an index of the
// same name made for the model's earlier version, which the server would
// keep as it is), and drops the native index of a lookup that keeps an
// index table now. It makes every index the server accepts, then reports
// the first it refused: a unique index over documents that already hold
// a value twice is runtime.ErrDuplicate naming the values and their
// blocks (the index of the earlier version is then left in place).
func (s *Store[T, K]) ensureNative(ctx context.Context) error {
	if len(s.m().native) == 0 && len(s.m().tables) == 0 {
		return nil
	}
	specs, err := s.indexSpecs(ctx)
	if err != nil {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(listing the indexes of "+s.coll.Name()+")", nil, err)
	}
	for name := range s.m().tables {
		if _, ok := specs[IndexName(name)]; ok {
			if err := s.dropIndex(ctx, IndexName(name)); err != nil {
				return err
			}
		}
	}
	var first error
	for _, n := range s.m().native {
		m := indexModel(n.l, !s.noPartial)
		spec, exists := specs[n.index]
		if exists && sameIndex(spec, m) {
			continue
		}
		if exists {
			// Made for another version of the lookup: replaced, once it
			// is known that the new one can be built.
			if n.l.Unique {
				if err := s.nativeDuplicates(ctx, n); err != nil {
					first = cmp.Or(first, err)
					continue
				}
			}
			if err := s.dropIndex(ctx, n.index); err != nil {
				first = cmp.Or(first, err)
				continue
			}
		}
		runtime.RoundTrip(ctx)
		_, err := s.coll.Indexes().CreateOne(ctx, m)
		switch {
		case err == nil || first != nil:
		case n.l.Unique && isDuplicate(err):
			first = s.nativeDuplicates(ctx, n)
			if first == nil {
				first = runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(lookup %s.%s: the documents hold a value twice)", s.coll.Name(), n.l.Name), runtime.ErrDuplicate, err)
			}
		case n.l.SkipsZeros() && !s.noPartial && (notImplemented(err) || badValue(err) || isCode(err, 67)):
			first = runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil,
				fmt.Sprintf("(lookup %s.%s: the server refuses the partial unique index that leaves zero values out; "+
					"mark the lookup noam:\"lookup,unique,zeros\" to index zero values, noam:\"lookup,unique,table\" to keep it in an index table, "+
					"or open the repository with mongostore.UniqueTables() or mongostore.NoPartialIndexes())", s.coll.Name(), n.l.Name),
				runtime.ErrInvalid, err)
		default:
			first = runtime.Fail("EnsureIndexes", s.d.Aggregate, nil, nil, fmt.Errorf("index %s: %w", n.index, err))
		}
	}
	return first
}

// dropIndex drops the collection's index name, if it exists.
func (s *Store[T, K]) dropIndex(ctx context.Context, name string) error {
	runtime.RoundTrip(ctx)
	err := s.coll.Indexes().DropOne(ctx, name)
	if err != nil && !isCode(err, codeIndexNotFound) && !isCode(err, codeNamespaceNotFound) {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, fmt.Sprintf("(dropping the index %s.%s)", s.coll.Name(), name), nil, err)
	}
	return nil
}

func isCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}

// bound is a decoded range bound: the values of its leading parts (and,
// for a cursor position, the block key), and whether it stands after
// every key with those values (a trailing TupleEnd).
type bound struct {
	vals []any
	end  bool
}

// decodeBound decodes an encoded key bound of lookup l; with key set, the
// components after the parts are decoded as a block key.
func decodeBound[K any](b []byte, parts int, keys *runtime.KeyCodec[K]) (bound, error) {
	// A trailing 0xFF is TupleEnd when what precedes it decodes whole (no
	// component ends in 0xFF: strings end in 0x00, integers are 9 bytes).
	if n := len(b); n > 0 && b[n-1] == 0xFF {
		if out, err := decodeBound(b[:n-1], parts, keys); err == nil {
			out.end = true
			return out, nil
		}
	}
	var out bound
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		rest := r.Rest()
		if len(out.vals) == parts {
			if keys == nil {
				return out, fmt.Errorf("%w: key has more parts than the lookup", runtime.ErrBadCursor)
			}
			k, err := keys.Read(r)
			if err != nil || !r.Done() {
				return out, fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
			}
			out.vals = append(out.vals, k)
			break
		}
		var v any
		var err error
		switch rest[0] {
		case 0x02:
			v, err = r.String()
		case 0x03:
			v, err = r.Int()
		case 0x04:
			v, err = r.Uint()
		default:
			err = errors.New("unknown component")
		}
		if err != nil {
			return out, fmt.Errorf("%w: bad position: %v", runtime.ErrBadCursor, err)
		}
		out.vals = append(out.vals, v)
	}
	return out, nil
}

// mongoValue is the value to compare a document field with: unsigned
// integers are stored as int64 (those above math.MaxInt64 cannot be
// stored, and compare as a double).
func mongoValue(v any) any {
	if u, ok := v.(uint64); ok {
		if u <= math.MaxInt64 {
			return int64(u)
		}
		return float64(u)
	}
	return v
}

// nativeQuery turns a key range (and a cursor position after it) into the
// filter and sort of one find on lookup l's index; empty reports a range
// that selects nothing.
func (s *Store[T, K]) nativeQuery(l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, desc bool) (filter, sort bson.D, empty bool, err error) {
	parts := len(l.Paths)
	fields := make([]string, 0, parts+1)
	for _, p := range l.Paths {
		fields = append(fields, p.Path)
	}
	fields = append(fields, "_id")
	// The position of a page is a bound of the next: strictly after it,
	// or (desc) strictly before it.
	var pos bound
	if after != nil {
		pos, err = decodeBound(after, parts, &s.d.Keys)
		if err == nil && len(pos.vals) != parts+1 {
			err = fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
		}
		pos.end = !desc
		if err != nil {
			return nil, nil, false, err
		}
	}
	lo, hi := pos, pos
	if after == nil || desc {
		if lo, err = decodeBound[K](rng.From, parts, nil); err != nil {
			return nil, nil, false, err
		}
	}
	if after == nil || !desc {
		if hi, err = decodeBound[K](rng.To, parts, nil); err != nil {
			return nil, nil, false, err
		}
	}
	start, end := rng.From, rng.To
	if after != nil && desc {
		end = after
	} else if after != nil {
		start = after
	}
	if bytes.Compare(start, end) >= 0 {
		return nil, nil, true, nil
	}
	// The leading values both bounds share are fixed: equality conditions
	// (the range is not empty, so the lower bound cannot end before them).
	j := 0
	for j < len(lo.vals) && j < len(hi.vals) && lo.vals[j] == hi.vals[j] {
		j++
	}
	var conds []bson.E
	for i := range j {
		conds = append(conds, bson.E{Key: fields[i], Value: mongoValue(lo.vals[i])})
	}
	if j < len(lo.vals) {
		conds = append(conds, lexCond(fields[j:], lo.vals[j:], "$gt", !lo.end))
	}
	if j < len(hi.vals) {
		conds = append(conds, lexCond(fields[j:], hi.vals[j:], "$lt", hi.end))
	}
	// Parts without a condition still select values of their kind only (a
	// missing field or null is no value), and unique lookups leave zero
	// values out unless they index them.
	for i, p := range l.Paths {
		constrained := i < len(lo.vals) || i < len(hi.vals)
		switch {
		case l.SkipsZeros():
			conds = append(conds, nonZeroCond(p)[0])
		case !constrained:
			var min any = ""
			switch p.Kind {
			case runtime.PartInt:
				min = int64(math.MinInt64)
			case runtime.PartUint:
				min = int64(0)
			}
			conds = append(conds, bson.E{Key: p.Path, Value: bson.D{{Key: "$gte", Value: min}}})
		}
	}
	dir := 1
	if desc {
		dir = -1
	}
	for _, f := range fields[min(j, parts):] {
		sort = append(sort, bson.E{Key: f, Value: dir})
	}
	return andOf(conds), sort, false, nil
}

// lexCond is the condition that the fields, as a tuple, come after vals
// (op "$gt") or before them (op "$lt"), or equal them when orEqual.
func lexCond(fields []string, vals []any, op string, orEqual bool) bson.E {
	last := op
	if orEqual {
		last += "e"
	}
	if len(vals) == 1 {
		return bson.E{Key: fields[0], Value: bson.D{{Key: last, Value: mongoValue(vals[0])}}}
	}
	var or bson.A
	for i := range vals {
		d := bson.D{}
		for k := range i {
			d = append(d, bson.E{Key: fields[k], Value: mongoValue(vals[k])})
		}
		o := op
		if i == len(vals)-1 {
			o = last
		}
		d = append(d, bson.E{Key: fields[i], Value: bson.D{{Key: o, Value: mongoValue(vals[i])}}})
		or = append(or, d)
	}
	return bson.E{Key: "$or", Value: or}
}

// andOf makes one filter of conds: operator conditions on one field are
// merged ({stars: {$gte: 2, $lt: 4}}); other repeated keys make an $and.
func andOf(conds []bson.E) bson.D {
	var out bson.D
	dup := false
	for _, c := range conds {
		i := slices.IndexFunc(out, func(e bson.E) bool { return e.Key == c.Key })
		if i < 0 {
			out = append(out, c)
			continue
		}
		a, aok := out[i].Value.(bson.D)
		b, bok := c.Value.(bson.D)
		if aok && bok && operators(a) && operators(b) {
			out[i].Value = append(slices.Clone(a), b...)
			continue
		}
		dup = true
	}
	if !dup {
		return out
	}
	var all bson.A
	for _, c := range conds {
		all = append(all, bson.D{c})
	}
	return bson.D{{Key: "$and", Value: all}}
}

// operators reports whether d is a document of query operators.
func operators(d bson.D) bool {
	for _, e := range d {
		if !strings.HasPrefix(e.Key, "$") {
			return false
		}
	}
	return len(d) > 0
}

// readNative reads up to n aggregates of lookup l in range rng after
// position after (desc: before it, sorted -1) with one find.
func (s *Store[T, K]) readNative(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	filter, sort, empty, err := s.nativeQuery(l, rng, after, desc)
	if err != nil {
		return nil, nil, false, err
	}
	if empty {
		return nil, nil, false, nil
	}
	opts := options.Find().SetSort(sort).SetLimit(int64(n) + 1).SetBatchSize(oneBatch(n + 1))
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, nil, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	defer cur.Close(ctx)
	items := make([]*T, 0, min(n, 64))
	var last []byte
	more := false
	for cur.Next(ctx) {
		if len(items) == n {
			more = true
			break
		}
		t, err := s.decode(cur.Current)
		if err != nil {
			// Not resumable: its position is made from its values.
			return nil, nil, false, runtime.Unreadable(op, s.d.Aggregate, s.idOf(cur.Current), err)
		}
		pos := s.position(l, t, rng, after, desc)
		if pos == nil {
			continue // the document does not hold a value in range as Go sees it
		}
		items, last = append(items, t), pos
	}
	if err := cur.Err(); err != nil {
		return nil, nil, false, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	return items, last, more, nil
}

// position is the cursor position of t in a listing of lookup l: its
// smallest value in range (after after) followed by its block key; with
// desc, its largest (before after).
func (s *Store[T, K]) position(l *runtime.Lookup[T], t *T, rng *runtime.KeyRange, after []byte, desc bool) []byte {
	blk := s.d.Keys.Bytes(*s.d.ID(t))
	var best []byte
	for _, v := range l.Keys(t) {
		pos := append(append(make([]byte, 0, len(v)+len(blk)), v...), blk...)
		if !rng.Contains(pos) {
			continue
		}
		if after != nil {
			if c := bytes.Compare(pos, after); !desc && c <= 0 || desc && c >= 0 {
				continue
			}
		}
		if c := bytes.Compare(pos, best); best == nil || !desc && c < 0 || desc && c > 0 {
			best = pos
		}
	}
	return best
}

// valueFilter is the equality filter on the parts of l for an encoded value.
func valueFilter[T any](l *runtime.Lookup[T], value []byte) (bson.D, error) {
	b, err := decodeBound[struct{}](value, len(l.Paths), nil)
	if err != nil || b.end || len(b.vals) != len(l.Paths) {
		return nil, fmt.Errorf("lookup %s: bad value %x", l.Name, value)
	}
	f := make(bson.D, 0, len(b.vals))
	for i, v := range b.vals {
		f = append(f, bson.E{Key: l.Paths[i].Path, Value: mongoValue(v)})
	}
	return f, nil
}

// getNative reads the aggregate holding value of unique lookup l with one
// findOne (runtime.Repo.GetBy answers a zero value the lookup does not
// index, runtime.Lookup.Indexes, without calling the store).
func (s *Store[T, K]) getNative(ctx context.Context, op string, l *runtime.Lookup[T], value []byte) (*T, error) {
	notFound := runtime.FailAt(op, s.d.Aggregate, nil, runtime.FormatKey(value), runtime.ErrNotFound, nil)
	filter, err := valueFilter(l, value)
	if err != nil {
		return nil, runtime.Fail(op, s.d.Aggregate, nil, runtime.ErrInvalid, err)
	}
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOne(ctx, filter).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, notFound
	}
	if err != nil {
		return nil, runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	t, err := s.decode(raw)
	if err != nil {
		return nil, runtime.Unreadable(op, s.d.Aggregate, s.idOf(raw), err)
	}
	return t, nil
}

// checkNative fails with runtime.ErrInvalidValue if a value of a native
// lookup in t is not valid UTF-8 (which MongoDB rejects and FerretDB
// silently replaces).
func (s *Store[T, K]) checkNative(op string, id K, t *T) error {
	for _, n := range s.m().native {
		for _, v := range n.l.Keys(t) {
			if err := runtime.CheckKey(op, s.d.Aggregate, id, "lookup "+s.coll.Name()+"."+n.l.Name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// uniqueNative reports whether a native unique index can refuse a write.
func (s *Store[T, K]) uniqueNative() bool {
	for _, n := range s.m().native {
		if n.l.Unique {
			return true
		}
	}
	return false
}

// duplicate explains a duplicate key error of a write of block id (t
// holds the values written; insert says the write inserts a document): a
// unique lookup value another block holds is runtime.ErrDuplicate naming
// it; it returns nil when the duplicate is the block key itself.
func (s *Store[T, K]) duplicate(ctx context.Context, op string, id K, t *T, insert bool, err error) error {
	if !s.uniqueNative() {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "index: _id_ "):
		return nil
	case strings.Contains(msg, "index: "+IndexName("")):
	case insert:
		// The server does not say which index (FerretDB): the block key
		// is in use if its document exists.
		dctx, cancel := runtime.Detach(ctx)
		runtime.RoundTrip(dctx)
		n, cerr := s.coll.CountDocuments(dctx, ByID(id), options.Count().SetLimit(1))
		cancel()
		if cerr == nil && n > 0 {
			return nil
		}
	}
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	for _, nl := range s.m().native {
		if !nl.l.Unique || (strings.Contains(msg, "index: noam_") && !strings.Contains(msg, "index: "+nl.index+" ")) {
			continue
		}
		for _, v := range nl.l.Keys(t) {
			filter, ferr := valueFilter(nl.l, v)
			if ferr != nil {
				continue
			}
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$ne", Value: id}}})
			runtime.RoundTrip(ctx)
			if c, cerr := s.coll.CountDocuments(ctx, filter, options.Count().SetLimit(1)); cerr == nil && c > 0 {
				return runtime.LookupTaken(op, s.d.Aggregate, id, s.coll.Name()+"."+nl.l.Name, v, err)
			}
		}
	}
	return runtime.FailAt(op, s.d.Aggregate, id, "(a unique lookup value is taken)", runtime.ErrDuplicate, err)
}

// isDuplicate reports a write refused by a unique index: a duplicate key
// error, or FerretDB's report of an update that breaks a unique index (an
// InternalError naming SQLite's UNIQUE constraint).
func isDuplicate(err error) bool {
	return mongo.IsDuplicateKeyError(err) || (err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed"))
}

// checkReady fails with runtime.ErrNotReady when a unique lookup of the
// aggregate is a native index that does not exist yet: before
// EnsureIndexes has made it, MongoDB would take a second aggregate with the
// same value without a word. It lists the collection's indexes once per
// Store until they are all there (one listIndexes at the first write of a
// process); aggregates without native unique lookups never ask.
func (s *Store[T, K]) checkReady(ctx context.Context, op string) error {
	if err := s.settle(ctx, op); err != nil {
		return err
	}
	if s.ready.Load() {
		return nil
	}
	if !s.uniqueNative() {
		s.ready.Store(true)
		return nil
	}
	specs, err := s.indexSpecs(ctx)
	if err != nil {
		return runtime.FailAt(op, s.d.Aggregate, nil, "(listing the unique indexes)", nil, err)
	}
	for _, n := range s.m().native {
		if !n.l.Unique {
			continue
		}
		spec, ok := specs[n.index]
		switch {
		case !ok:
			return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(unique index %s.%s missing: call EnsureIndexes once before writing)", s.coll.Name(), n.index), runtime.ErrNotReady, nil)
		case !sameIndex(spec, indexModel(n.l, !s.noPartial)):
			return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(index %s.%s is not the unique index of lookup %s yet: call EnsureIndexes once before writing)", s.coll.Name(), n.index, n.l.Name), runtime.ErrNotReady, nil)
		}
	}
	s.ready.Store(true)
	return nil
}
