package mongostore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// drop removes a stale index entry a read met, once it is older than
// StaleAfter and unless it changed since it was read.
func (x *Indexed[K, D, T]) drop(ctx context.Context, i int, e *entry[K]) {
	if stale(e.S) {
		ctx, cancel := runtime.Detach(ctx)
		defer cancel()
		_, _ = x.tables[i].DeleteOne(ctx, unchanged(e))
	}
}

// GetBy reads the aggregate holding value key (encoded) of the named unique
// lookup. It fails with runtime.ErrNotFound if none does.
func (x *Indexed[K, D, T]) GetBy(ctx context.Context, op, lookup string, key []byte) (T, error) {
	i := x.lookup(lookup)
	var zero T
	k := IndexKey(key)
	var e entry[K]
	err := x.tables[i].FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return zero, runtime.FailAt(op, x.Agg, nil, describeKey(k), runtime.ErrNotFound, nil)
	}
	if err != nil {
		return zero, runtime.Fail(op, x.Agg, nil, nil, err)
	}
	var d D
	err = x.Coll.FindOne(ctx, ByID(e.ID)).Decode(&d)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return zero, runtime.Fail(op, x.Agg, e.ID, nil, err)
	}
	if err == nil {
		v := x.Convert(&d)
		if _, held := slices.BinarySearch(x.entryKeys(i, e.ID, v), k); held {
			return v, nil
		}
	}
	x.drop(ctx, i, &e)
	return zero, runtime.FailAt(op, x.Agg, nil, describeKey(k), runtime.ErrNotFound, nil)
}

// Repair rebuilds the index tables from the aggregates: it reads every
// aggregate's lookup fields, then every index table, removes the entries
// no aggregate holds and writes the missing ones. A unique value held by
// several aggregates stays with the first in block-key order; the others
// are reported as conflicts. Run it while nothing else writes the
// collection: an entry of a write in flight may be removed.
func (x *Indexed[K, D, T]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	var rep runtime.RepairReport
	fail := func(err error) (runtime.RepairReport, error) {
		return rep, runtime.Fail("Repair", x.Agg, nil, nil, err)
	}
	type holder struct {
		id  K
		inc int64
	}
	want := make([]map[string]holder, len(x.Lookups))
	for i := range want {
		want[i] = map[string]holder{}
	}
	proj := bson.D{{Key: "_id", Value: 1}, {Key: IncKey, Value: 1}}
	for _, f := range x.Fields {
		proj = append(proj, bson.E{Key: f, Value: 1})
	}
	cur, err := x.Coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetProjection(proj).SetBatchSize(readBatch))
	if err != nil {
		return fail(err)
	}
	unreadable := map[K]bool{} // blocks whose entries are left alone
	for cur.Next(ctx) {
		var d D
		if err := cur.Decode(&d); err != nil {
			cur.Close(ctx)
			return fail(err)
		}
		if x.Check != nil {
			if err := x.Check(&d); err != nil {
				var id K
				if rv, lerr := cur.Current.LookupErr("_id"); lerr == nil {
					_ = bsonval.DecodeValue(rv.Type, rv.Value, &id)
				}
				rep.AddUnreadable(x.Agg, id, err)
				unreadable[id] = true
				continue
			}
		}
		v := x.Convert(&d)
		h := holder{id: x.KeyOf(v)}
		h.inc, _ = cur.Current.Lookup(IncKey).AsInt64OK()
		rep.Aggregates++
		for i, l := range x.Lookups {
			for _, k := range x.entryKeys(i, h.id, v) {
				if first, taken := want[i][k]; taken && l.Unique {
					value, _ := hex.DecodeString(k)
					rep.AddConflict(x.lookupName(i), value, x.Codec.Bytes(first.id), x.Codec.Bytes(h.id))
					continue
				}
				want[i][k] = h
			}
		}
	}
	if err := cur.Err(); err != nil {
		cur.Close(ctx)
		return fail(err)
	}
	cur.Close(ctx)
	now := time.Now().UnixNano()
	for i, t := range x.tables {
		seen := map[string]bool{}
		// The table is read through a cursor in small batches (entries
		// may be large), and changed as it is read: an entry is only
		// ever updated or deleted on condition that it is unchanged.
		cur, err := t.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(readBatch))
		if err != nil {
			return fail(err)
		}
		for cur.Next(ctx) {
			var e entry[K]
			if err := cur.Decode(&e); err != nil {
				cur.Close(ctx)
				return fail(err)
			}
			owner, ok := want[i][e.Key]
			switch {
			case !ok && unreadable[e.ID]:
				// An unreadable block's: left as it is.
			case ok && owner.id == e.ID && owner.inc == e.Inc:
				seen[e.Key] = true
			case ok:
				// A unique value recorded for the wrong block, or an entry
				// of an earlier incarnation of the block.
				res, err := t.UpdateOne(ctx, unchanged(&e), bson.D{{Key: "$set", Value: bson.D{{Key: "id", Value: owner.id}, {Key: "inc", Value: owner.inc}, {Key: "s", Value: now}, {Key: "w", Value: int64(0)}}}})
				if err != nil {
					cur.Close(ctx)
					return fail(err)
				}
				if res.MatchedCount == 1 {
					seen[e.Key] = true
					rep.Removed++
					rep.Added++
				}
			default:
				res, err := t.DeleteOne(ctx, unchanged(&e))
				if err != nil {
					cur.Close(ctx)
					return fail(err)
				}
				rep.Removed += int(res.DeletedCount)
			}
		}
		if err := cur.Err(); err != nil {
			cur.Close(ctx)
			return fail(err)
		}
		cur.Close(ctx)
		var missing []string
		for k := range want[i] {
			if !seen[k] {
				missing = append(missing, k)
			}
		}
		slices.Sort(missing)
		for _, k := range missing {
			_, err := t.InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "id", Value: want[i][k].id}, {Key: "inc", Value: want[i][k].inc}, {Key: "s", Value: now}, {Key: "w", Value: int64(0)}})
			switch {
			case err == nil:
				rep.Added++
			case mongo.IsDuplicateKeyError(err): // written meanwhile
			default:
				return fail(err)
			}
		}
	}
	return rep, nil
}

// EnsureIndexes creates the aggregate collection, the index tables, the
// index on their id field (which Delete uses) and the collections named in
// more (e.g. CountersCollection).
func (x *Indexed[K, D, T]) EnsureIndexes(ctx context.Context, more ...string) error {
	names := append([]string{x.Coll.Name()}, more...)
	for _, t := range x.tables {
		names = append(names, t.Name())
	}
	if err := EnsureCollections(ctx, x.Coll.Database(), x.Agg, names...); err != nil {
		return err
	}
	for _, t := range x.tables {
		if _, err := t.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "id", Value: 1}}}); err != nil {
			return runtime.Fail("EnsureIndexes", x.Agg, nil, nil, err)
		}
	}
	return nil
}

// describeKey renders an index key (hex) as its components, e.g.
// ("Dortmund", 4), for error messages and repair reports.
func describeKey(k string) string {
	b, err := hex.DecodeString(k)
	if err != nil {
		return k
	}
	r := runtime.NewKeyReader(b)
	var parts []string
	for !r.Done() {
		var s string
		switch r.Rest()[0] {
		case 0x02:
			v, err := r.String()
			if err != nil {
				return k
			}
			s = fmt.Sprintf("%q", v)
		case 0x03:
			v, err := r.Int()
			if err != nil {
				return k
			}
			s = fmt.Sprint(v)
		case 0x04:
			v, err := r.Uint()
			if err != nil {
				return k
			}
			s = fmt.Sprint(v)
		default:
			return k
		}
		parts = append(parts, s)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + joinComma(parts) + ")"
}

func joinComma(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	return b.String()
}
