package mongostore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// Batch writes (runtime.BatchStore). With native indexes (no index
// tables) a batch is few commands:
//
//   - CreateMany of an aggregate without a counter: one ordered bulkWrite
//     of the documents' inserts. The server stops at the first insert it
//     refuses (a key in use, a unique value taken); that item gets the
//     single Create's error and the items after it go in another
//     bulkWrite.
//   - PutMany of an aggregate without a version, a created timestamp or a
//     counter: one ordered bulkWrite of the single Put's replaceOne
//     upserts, the same way.
//   - DeleteMany: one find of the keys that exist, then one deleteMany of
//     them; a key not found (or given twice) is runtime.ErrNotFound.
//
// With index tables a batch is the index engine's batch protocol
// (tablebatch.go). A CreateMany with a counter moves each counter scope
// once, then writes its blocks so (counterbatch.go). Everything else
// (PutMany with a counter, which may allocate keys; the version and
// created conditions of Put without index tables, which a bulkWrite
// cannot report item by item) is the single calls, in slice order. The driver splits a
// bulkWrite larger than the server's message size into several commands.

var _ runtime.BatchStore[struct{}, string] = (*Store[struct{}, string])(nil)

// CreateMany inserts new blocks, as Create each.
func (s *Store[T, K]) CreateMany(ctx context.Context, ts []*T) []error {
	errs := make([]error, len(ts))
	if s.d.Counter != nil {
		s.createCounted(ctx, ts, errs)
	} else {
		s.createBatch(ctx, ts, errs)
	}
	return errs
}

// createBatch is CreateMany of blocks whose keys are set, setting errs.
func (s *Store[T, K]) createBatch(ctx context.Context, ts []*T, errs []error) {
	const op = "Create"
	if s.x != nil {
		s.createTables(ctx, ts, errs)
		return
	}
	var b bulk[K]
	defer b.release()
	s.prepare(ctx, op, ts, errs, &b, func(id K, doc bson.Raw) mongo.WriteModel {
		return mongo.NewInsertOneModel().SetDocument(doc)
	})
	s.send(ctx, op, &b, errs, func(i int, id K, err error) error {
		if mongo.IsDuplicateKeyError(err) {
			if derr := s.duplicate(ctx, op, id, ts[i], true, err); derr != nil {
				return derr
			}
			return keyInUse(op, s.d.Aggregate, id, err)
		}
		return runtime.Fail(op, s.d.Aggregate, id, nil, err)
	})
	for i, err := range errs {
		if err == nil {
			s.d.SetVersion(ts[i], 1)
		}
		errs[i] = refused(err)
	}
}

// PutMany replaces blocks whole, as Put each.
func (s *Store[T, K]) PutMany(ctx context.Context, ts []*T) []error {
	const op = "Put"
	errs := make([]error, len(ts))
	if s.x != nil && s.d.Counter == nil {
		s.putTables(ctx, ts, errs)
		return errs
	}
	if s.x != nil || s.d.Version != nil || s.d.Created != nil || s.d.Counter != nil {
		for i, t := range ts {
			errs[i] = s.Put(ctx, t)
		}
		return errs
	}
	var b bulk[K]
	defer b.release()
	s.prepare(ctx, op, ts, errs, &b, func(id K, doc bson.Raw) mongo.WriteModel {
		return mongo.NewReplaceOneModel().SetFilter(ByID(id)).SetReplacement(doc).SetUpsert(true)
	})
	s.send(ctx, op, &b, errs, func(i int, id K, err error) error {
		return s.writeErr(ctx, op, id, ts[i], false, err)
	})
	for i, err := range errs {
		if err == nil {
			s.d.SetVersion(ts[i], 1)
		}
		errs[i] = refused(err)
	}
	return errs
}

// DeleteMany removes blocks, as Delete each: one find of the keys that
// exist and one deleteMany of them. A block another client deletes
// between the two is gone all the same, and its item succeeds.
func (s *Store[T, K]) DeleteMany(ctx context.Context, ids []K) []error {
	const op = "Delete"
	errs := make([]error, len(ids))
	if s.x != nil {
		if len(ids) > 0 {
			s.deleteTables(ctx, ids, errs)
		}
		return errs
	}
	failAll := func(err error) []error {
		for i, id := range ids {
			errs[i] = s.fail(op, id, err)
		}
		return errs
	}
	if len(ids) == 0 {
		return errs
	}
	in := distinctIDs(ids)
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(oneBatch(len(in))))
	if err != nil {
		return failAll(err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return failAll(err)
	}
	found := make(map[K]bool, len(docs))
	var del bson.A
	for _, raw := range docs {
		id := s.idOf(raw)
		if !found[id] {
			found[id] = true
			del = append(del, id)
		}
	}
	var derr error
	if len(del) > 0 {
		if cerr := ctx.Err(); cerr != nil {
			return failAll(cerr) // not sent: nothing deleted
		}
		runtime.RoundTrip(ctx)
		if _, err := s.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: del}}}}); err != nil {
			derr = err
		}
	}
	for i, id := range ids {
		switch {
		case !found[id]:
			errs[i] = runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
		case derr != nil:
			errs[i] = runtime.Fail(op, s.d.Aggregate, id, runtime.ErrUnknownOutcome, derr)
		}
		found[id] = false // given again: not found, as the second Delete
	}
	return errs
}

// bulk is the writes of a batch's items that passed their checks: the
// item's index and key, the buffer holding its document, its model.
// prepare checks each of ts as the single write checks it (the block, the
// repository's readiness, once, the native indexes' values) and adds the
// write model of its document (version 1) to b; an item that fails a check
// gets its error in errs and is not sent.
func (s *Store[T, K]) prepare(ctx context.Context, op string, ts []*T, errs []error, b *bulk[K], model func(id K, doc bson.Raw) mongo.WriteModel) {
	var ready error
	checked := false
	for i, t := range ts {
		if errs[i] = bsonval.CheckBlock(op, s.d, t, MaxDepth); errs[i] != nil {
			continue
		}
		if !checked {
			ready, checked = s.checkReady(ctx, op), true
		}
		if errs[i] = ready; ready != nil {
			continue
		}
		id := *s.d.ID(t)
		if errs[i] = s.checkNative(op, id, t); errs[i] != nil {
			continue
		}
		w, doc, err := s.encodeDoc(op, id, t, 1)
		if errs[i] = err; err != nil {
			continue
		}
		b.add(i, id, w, model(id, doc))
	}
}

type bulk[K any] struct {
	idx    []int
	ids    []K
	bufs   []*docBuf
	models []mongo.WriteModel
}

func (b *bulk[K]) add(i int, id K, w *docBuf, m mongo.WriteModel) {
	b.idx, b.ids, b.bufs, b.models = append(b.idx, i), append(b.ids, id), append(b.bufs, w), append(b.models, m)
}

// release returns the documents' buffers to the pool, once the driver
// calls that took them have returned.
func (b *bulk[K]) release() {
	for _, w := range b.bufs {
		w.release()
	}
}

// send writes b's models in ordered bulkWrites, setting errs: the server
// stops at the first write it refuses, whose item gets failed's error
// (err is a mongo.WriteException of that write, as the single call's
// InsertOne or ReplaceOne returns), and the writes after it are sent
// again. When a bulkWrite fails as a whole, the items it held get the
// error, runtime.ErrUnknownOutcome as they may have been written; with
// the context ended before a bulkWrite is sent, its error.
func (s *Store[T, K]) send(ctx context.Context, op string, b *bulk[K], errs []error, failed func(i int, id K, err error) error) {
	idx, ids, models := b.idx, b.ids, b.models
	for len(models) > 0 {
		if cerr := ctx.Err(); cerr != nil {
			for j, i := range idx {
				errs[i] = s.fail(op, ids[j], cerr)
			}
			return
		}
		runtime.RoundTrip(ctx)
		_, err := s.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(true))
		if err == nil {
			return
		}
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || len(bwe.WriteErrors) == 0 {
			for j, i := range idx {
				errs[i] = runtime.Fail(op, s.d.Aggregate, ids[j], runtime.ErrUnknownOutcome, err)
			}
			return
		}
		// Ordered: one write error, at the write the server stopped at.
		we := bwe.WriteErrors[0].WriteError
		for _, e := range bwe.WriteErrors[1:] {
			if e.Index < we.Index {
				we = e.WriteError
			}
		}
		k := we.Index
		if k < 0 || k >= len(models) {
			for j, i := range idx {
				errs[i] = runtime.Fail(op, s.d.Aggregate, ids[j], runtime.ErrUnknownOutcome, err)
			}
			return
		}
		errs[idx[k]] = failed(idx[k], ids[k], mongo.WriteException{WriteErrors: mongo.WriteErrors{we}, Labels: bwe.Labels})
		idx, ids, models = idx[k+1:], ids[k+1:], models[k+1:]
	}
}
