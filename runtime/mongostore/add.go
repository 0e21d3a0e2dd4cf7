package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// hasAdd reports whether u holds an add change.
func hasAdd[T any](u runtime.Update[T]) bool {
	for _, c := range u.Changes {
		if c.Add {
			return true
		}
	}
	return false
}

// addBounds is the filter on the stored value of add change c: it lies
// in the change's bounds, or is missing ($inc takes it as 0) where 0 does.
func addBounds[T any](c runtime.Change[T]) bson.D {
	lo, hi, _ := c.AddBounds()
	in := bson.D{{Key: c.Field.Key, Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lte", Value: hi}}}}
	if lo <= 0 && hi >= 0 {
		return bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: c.Field.Key, Value: bson.D{{Key: "$exists", Value: false}}}}, in}}}
	}
	return in
}

// updateAdds is Update of changes that add to numbers: one findAndModify
// whose filter holds each add change's bounds (runtime.Change.AddBounds;
// a missing field, which $inc takes as 0, passes where 0 does), whose
// update $inc's the numbers with the version and $set's the other
// changes, and which returns the new values (a projection of them, where
// the server has findAndModify projections). A filter that matches
// nothing is diagnosed from the block read back: missing, at another
// version, without an element, or out of range.
func (s *Store[T, K]) updateAdds(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	filter, set, inc, unset, err := s.updateOps(op, id, u)
	if err != nil {
		return err
	}
	update := bson.D{{Key: "$inc", Value: inc}}
	if len(set) > 0 {
		update = append(update, bson.E{Key: "$set", Value: set})
	}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	if err := checkSize(op, s.d.Aggregate, id, update); err != nil {
		return err
	}
	var proj bson.D
	for _, c := range u.Changes {
		if c.Add {
			proj = append(proj, bson.E{Key: c.Field.Key, Value: 1})
		}
	}
	client := s.coll.Database().Client()
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After)
	if _, no := noFindAndModifyProjection.Load(client); !no {
		opts.SetProjection(proj)
	}
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOneAndUpdate(ctx, filter, update, opts).Raw()
	if notImplemented(err) {
		noFindAndModifyProjection.Store(client, true)
		runtime.RoundTrip(ctx)
		raw, err = s.coll.FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Raw()
	}
	if errors.Is(err, mongo.ErrNoDocuments) {
		return s.addRefused(ctx, op, id, u)
	}
	if err != nil {
		if isDuplicate(err) {
			return s.writeErr(ctx, op, id, s.applied(u), false, err)
		}
		return s.fail(op, id, err)
	}
	for _, c := range u.Changes {
		if c.Add && c.Result != nil {
			n, ok := raw.Lookup(c.Field.Key).AsInt64OK()
			if !ok {
				return runtime.Fail(op, s.d.Aggregate, id, nil, fmt.Errorf("the new value of %s is not an integer", c.Field.Key))
			}
			*c.Result = n
		}
	}
	return nil
}

// addRefused is the error of an update with add changes whose filter
// matched nothing: the block read back is missing, at another version,
// without an element (NoMatch), or holds a number the addition would take
// out of its range.
func (s *Store[T, K]) addRefused(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	proj := bson.D{{Key: LenKey, Value: 1}}
	if k := s.d.VersionKey(); k != "" {
		proj = append(proj, bson.E{Key: k, Value: 1})
	}
	for _, c := range u.Changes {
		if c.Add {
			proj = append(proj, bson.E{Key: c.Field.Key, Value: 1})
		}
	}
	runtime.RoundTrip(ctx)
	raw, err := s.coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(proj)).Raw()
	if err != nil {
		return Err(op, s.d.Aggregate, id, err)
	}
	if k := s.d.VersionKey(); k != "" && u.IfVersion != 0 {
		got, _ := raw.Lookup(k).AsInt64OK()
		if err := runtime.CheckVersion(op, s.d.Aggregate, id, true, got, u.IfVersion); err != nil {
			return err
		}
	}
	for _, e := range elemsOf(u) {
		n, _ := raw.Lookup(LenKey, e.Field).AsInt64OK()
		if e.Index < 0 || int64(e.Index) >= n {
			return runtime.FailAt(op, s.d.Aggregate, id, e.String(), runtime.ErrNotFound, nil)
		}
	}
	for _, c := range u.Changes {
		if !c.Add {
			continue
		}
		var old int64
		if v, err := raw.LookupErr(c.Field.Key); err == nil {
			n, ok := v.AsInt64OK()
			if !ok {
				return runtime.FailAt(op, s.d.Aggregate, id, "entry "+c.Field.Key+" (not an integer)", runtime.ErrUnreadable, nil)
			}
			old = n
		}
		if _, ok := c.Sum(old); !ok {
			return runtime.OutOfRange(op, s.d.Aggregate, id, c)
		}
	}
	return runtime.Fail(op, s.d.Aggregate, id, runtime.ErrConflict, errors.New("block changed concurrently"))
}
