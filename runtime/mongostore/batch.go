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
//   - PutMany of an aggregate without a version or a created timestamp:
//     one ordered bulkWrite of the single Put's replaceOne upserts, the
//     same way. With either, the single Puts (putBatch says why).
//   - DeleteMany: one find of the keys that exist, then one deleteMany of
//     them; a key not found (or given twice) is runtime.ErrNotFound.
//
// With index tables a batch is the index engine's batch protocol
// (tablebatch.go). A CreateMany or PutMany with a counter moves each
// counter scope once, then writes its blocks so (counterbatch.go). The
// driver splits a bulkWrite larger than the server's message size into
// several commands.

var _ runtime.BatchStore[struct{}, string] = (*Store[struct{}, string])(nil)

// CreateMany inserts new blocks, as Create each.
func (s *Store[T, K]) CreateMany(ctx context.Context, ts []*T) []error {
	errs := make([]error, len(ts))
	if s.d.Counter != nil {
		s.countedMany(ctx, "Create", ts, errs, func(ctx context.Context, ts []*T, _ []bool, errs []error) {
			s.createBatch(ctx, ts, errs)
		}, s.Create)
	} else {
		s.createBatch(ctx, ts, errs)
	}
	return errs
}

// createBatch is CreateMany of blocks whose keys are set, setting errs.
func (s *Store[T, K]) createBatch(ctx context.Context, ts []*T, errs []error) {
	const op = "Create"
	if s.m().x != nil {
		s.createTables(ctx, op, ts, errs, func(*T) int64 { return 1 })
		return
	}
	var b bulk[K]
	defer b.release()
	s.prepare(ctx, op, ts, errs, &b, func(id K, doc bson.Raw) mongo.WriteModel {
		return mongo.NewInsertOneModel().SetDocument(doc)
	})
	s.send(ctx, op, &b, errs, func(i int, id K, err error) error {
		return s.insertFailed(ctx, op, id, ts[i], err)
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
	errs := make([]error, len(ts))
	switch {
	case s.d.Counter != nil:
		s.countedMany(ctx, "Put", ts, errs, s.putKeyed, s.Put)
	case s.m().x != nil:
		s.putTables(ctx, ts, errs)
	default:
		s.putBatch(ctx, ts, nil, errs)
	}
	return errs
}

// putKeyed writes the blocks of a PutMany with a counter whose keys are
// set (counted): the items of alloc are new blocks (their numbers were
// allocated), inserted as Put inserts them; the others are Puts. With
// index tables, each run of items of one kind is a batch, in slice
// order.
func (s *Store[T, K]) putKeyed(ctx context.Context, ts []*T, alloc []bool, errs []error) {
	if s.m().x == nil {
		s.putBatch(ctx, ts, alloc, errs)
		return
	}
	for from := 0; from < len(ts); {
		to := from + 1
		for to < len(ts) && alloc[to] == alloc[from] {
			to++
		}
		if alloc[from] {
			s.createTables(ctx, "Put", ts[from:to], errs[from:to], func(t *T) int64 { return s.d.VersionOf(t) + 1 })
		} else {
			s.putTables(ctx, ts[from:to], errs[from:to])
		}
		from = to
	}
}

// putBatch is PutMany without index tables, setting errs; the items of
// insert (nil: none) are new blocks of allocated keys, in runs of one
// kind in slice order. The inserts are one ordered bulkWrite (putRun); so
// are the replacements of an aggregate without a version or a created
// timestamp. With either, the replacements are the single Puts: their
// conditions would fail as a duplicate _id, which FerretDB v1 reports at
// index 0 of a bulkWrite of updates whatever the write refused.
func (s *Store[T, K]) putBatch(ctx context.Context, ts []*T, insert []bool, errs []error) {
	single := s.d.Version != nil || s.d.Created != nil
	for from := 0; from < len(ts); {
		to := from + 1
		for to < len(ts) && flag(insert, to) == flag(insert, from) {
			to++
		}
		if single && !flag(insert, from) {
			for i := from; i < to; i++ {
				errs[i] = s.putKept(ctx, ts[i])
			}
		} else {
			s.putRun(ctx, ts[from:to], part(insert, from, to), errs[from:to])
		}
		from = to
	}
}

// putKept is the single Put of a block whose counter the batch moved.
func (s *Store[T, K]) putKept(ctx context.Context, t *T) error {
	if s.d.Counter == nil {
		return s.Put(ctx, t)
	}
	if err := bsonval.CheckBlock("Put", s.d, t, MaxDepth); err != nil {
		return err
	}
	if err := s.checkReady(ctx, "Put"); err != nil {
		return err
	}
	want := s.d.VersionOf(t)
	if err := refused(s.put(ctx, t, want)); err != nil {
		return err
	}
	s.d.SetVersion(t, want+1)
	return nil
}

// flag is flags[i], false for nil flags.
func flag(flags []bool, i int) bool { return flags != nil && flags[i] }

// part is flags[from:to], nil for nil flags.
func part(flags []bool, from, to int) []bool {
	if flags == nil {
		return nil
	}
	return flags[from:to]
}

// putRun is PutMany without index tables of the items of insert (new
// blocks of allocated keys, at the version after the one given, as the
// single Put inserts them) and of blocks of an aggregate without a version
// or a created timestamp: one ordered bulkWrite of their inserts and of
// the single Put's replaceOne {_id} upserts.
func (s *Store[T, K]) putRun(ctx context.Context, ts []*T, insert []bool, errs []error) {
	const op = "Put"
	want := make([]int64, len(ts))
	var b bulk[K]
	defer b.release()
	for _, i := range s.check(ctx, op, ts, errs) {
		t := ts[i]
		id := *s.d.ID(t)
		want[i] = s.d.VersionOf(t)
		w, doc, err := s.encodeDoc(op, id, t, want[i]+1)
		if errs[i] = err; err != nil {
			continue
		}
		if flag(insert, i) {
			b.add(i, id, w, mongo.NewInsertOneModel().SetDocument(doc))
		} else {
			b.add(i, id, w, mongo.NewReplaceOneModel().SetFilter(ByID(id)).SetReplacement(doc).SetUpsert(true))
		}
	}
	s.send(ctx, op, &b, errs, func(i int, id K, err error) error {
		if flag(insert, i) {
			return s.insertFailed(ctx, op, id, ts[i], err)
		}
		return s.writeErr(ctx, op, id, ts[i], false, err)
	})
	for i, err := range errs {
		if err == nil {
			s.d.SetVersion(ts[i], want[i]+1)
		}
		errs[i] = refused(err)
	}
}

// DeleteMany removes blocks, as Delete each: one find of the keys that
// exist and one deleteMany of them. A block another client deletes
// between the two is gone all the same, and its item succeeds.
func (s *Store[T, K]) DeleteMany(ctx context.Context, ids []K) []error {
	const op = "Delete"
	errs := make([]error, len(ids))
	if err := s.settle(ctx, op); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if s.m().x != nil {
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
	docs, err := s.findIn(ctx, ids, bson.D{{Key: "_id", Value: 1}})
	if err != nil {
		return failAll(err)
	}
	found := make(map[K]bool, len(docs))
	var del bson.A
	for id := range docs {
		found[id] = true
		del = append(del, id)
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

// findIn reads the blocks ids (given twice or not) that exist with one
// find of projection proj: their documents, by key.
func (s *Store[T, K]) findIn(ctx context.Context, ids []K, proj bson.D) (map[K]bson.Raw, error) {
	in := distinctIDs(ids)
	if len(in) == 0 {
		return nil, nil
	}
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}},
		options.Find().SetProjection(proj).SetBatchSize(oneBatch(len(in))))
	if err != nil {
		return nil, err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make(map[K]bson.Raw, len(docs))
	for _, raw := range docs {
		out[s.idOf(raw)] = raw
	}
	return out, nil
}

// insertFailed is the error of an insert of a batch of new block id
// holding t that the server refused with err, as the single insert's.
func (s *Store[T, K]) insertFailed(ctx context.Context, op string, id K, t *T, err error) error {
	if mongo.IsDuplicateKeyError(err) {
		if derr := s.duplicate(ctx, op, id, t, true, err); derr != nil {
			return derr
		}
		return keyInUse(op, s.d.Aggregate, id, err)
	}
	return runtime.Fail(op, s.d.Aggregate, id, nil, err)
}

// prepare checks each of ts as the single write checks it (check) and
// adds the write model of its document (version 1) to b; an item that
// fails a check gets its error in errs and is not sent.
func (s *Store[T, K]) prepare(ctx context.Context, op string, ts []*T, errs []error, b *bulk[K], model func(id K, doc bson.Raw) mongo.WriteModel) {
	for _, i := range s.check(ctx, op, ts, errs) {
		id := *s.d.ID(ts[i])
		w, doc, err := s.encodeDoc(op, id, ts[i], 1)
		if errs[i] = err; err != nil {
			continue
		}
		b.add(i, id, w, model(id, doc))
	}
}

// check checks each of ts as the single write checks it (the block, the
// repository's readiness, once, the native indexes' values) and returns
// the items that pass; the others get their errors in errs.
func (s *Store[T, K]) check(ctx context.Context, op string, ts []*T, errs []error) []int {
	var ok []int
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
		if errs[i] = s.checkNative(op, *s.d.ID(t), t); errs[i] != nil {
			continue
		}
		ok = append(ok, i)
	}
	return ok
}

// bulk is the writes of a batch's items that passed their checks: the
// item's index and key, the buffer holding its document, its model.
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
