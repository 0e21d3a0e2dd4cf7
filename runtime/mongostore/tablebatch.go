package mongostore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
)

// Batch writes of an aggregate with index tables: the index engine's
// batch protocol (index.Engine.CommitMany, RunMany, DeletedMany), whose
// phases are each a few commands whatever the number of items:
//
//   - CreateMany (no counter): per index table one unordered bulkWrite of
//     the new entries' inserts (index.Batcher), one unordered bulkWrite
//     of the documents' inserts, then the old entries' deletes (none for
//     a create);
//   - PutMany (no counter): per pass one find of the blocks' states, the
//     entries' inserts, one unordered bulkWrite of the documents' inserts
//     and conditional replacements (read back when the server matched
//     fewer than it was sent), per index table one bulkWrite of the old
//     entries' deletes;
//   - DeleteMany: one find of the blocks' states, one unordered bulkWrite
//     of their conditional deletes, per index table one bulkWrite of
//     their entries' deletes.
//
// Items an entry is already stored for, or whose block changed
// meanwhile, take the single protocol's steps. The items are not atomic
// together: the failed ones are reported, the others written.

var _ index.Batcher = (*indexed[struct{}, string])(nil)

// filteredBulk bounds the conditional writes (replacements and deletes
// with a filter beyond _id) of one bulkWrite: FerretDB v1 holds a query
// open per such write until the command ends, and a command of 100 of
// them waits forever for a connection of its SQLite pool.
const filteredBulk = 25

// bulkEach sends models in unordered bulkWrites: one, or runs of
// filteredBulk when filtered (conditional writes). It returns the result
// (summed), each model's write error (as the single command's
// mongo.WriteException) and the error of a command as a whole (a network
// error, a write concern error: every model's outcome unknown).
func bulkEach(ctx context.Context, coll *mongo.Collection, models []mongo.WriteModel, filtered bool) (*mongo.BulkWriteResult, []error, error) {
	each := make([]error, len(models))
	sum := &mongo.BulkWriteResult{}
	step := len(models)
	if filtered {
		step = filteredBulk
	}
	for from := 0; from < len(models); from += step {
		run := models[from:min(from+step, len(models))]
		if from > 0 {
			if err := ctx.Err(); err != nil {
				return sum, each, err
			}
		}
		runtime.RoundTrip(ctx)
		res, err := coll.BulkWrite(ctx, run, options.BulkWrite().SetOrdered(false))
		if res != nil {
			sum.InsertedCount += res.InsertedCount
			sum.MatchedCount += res.MatchedCount
			sum.ModifiedCount += res.ModifiedCount
			sum.DeletedCount += res.DeletedCount
			sum.UpsertedCount += res.UpsertedCount
		}
		if err == nil {
			continue
		}
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
			return sum, each, err
		}
		for _, we := range bwe.WriteErrors {
			if we.Index < 0 || we.Index >= len(run) {
				return sum, each, err
			}
			each[from+we.Index] = mongo.WriteException{WriteErrors: mongo.WriteErrors{we.WriteError}, Labels: bwe.Labels}
		}
	}
	return sum, each, nil
}

// ClaimItems implements index.Batcher: one unordered bulkWrite of the
// entries' inserts; a duplicate key is a condition that failed.
func (x *indexed[T, K]) ClaimItems(ctx context.Context, l int, its []index.Item) ([]bool, []error) {
	ok, errs := make([]bool, len(its)), make([]error, len(its))
	models := make([]mongo.WriteModel, 0, len(its))
	var at []int
	for j, it := range its {
		id, err := x.id(it.Block)
		if err != nil {
			errs[j] = err
			continue
		}
		doc := bson.D{{Key: "_id", Value: IndexKey(it.Key)}, {Key: "id", Value: id}, {Key: "inc", Value: it.Inc}, {Key: "s", Value: it.Seq}}
		if it.W != 0 {
			doc = append(doc, bson.E{Key: "w", Value: it.W})
		}
		models = append(models, mongo.NewInsertOneModel().SetDocument(doc))
		at = append(at, j)
	}
	if err := ctx.Err(); err != nil {
		for _, j := range at {
			errs[j] = err
		}
		return ok, errs
	}
	_, each, err := bulkEach(ctx, x.tables[l], models, false)
	for m, j := range at {
		switch {
		case err != nil:
			errs[j] = err
		case each[m] == nil:
			ok[j] = true
		case !mongo.IsDuplicateKeyError(each[m]):
			errs[j] = each[m]
		}
	}
	return ok, errs
}

// DeleteEach implements index.Batcher: one unordered bulkWrite of the
// entries' conditional deletes.
func (x *indexed[T, K]) DeleteEach(ctx context.Context, l int, keys [][]byte, conds []index.Cond) error {
	models := make([]mongo.WriteModel, 0, len(keys))
	for j, k := range keys {
		f, err := x.cond(conds[j])
		if err != nil {
			return err
		}
		models = append(models, mongo.NewDeleteOneModel().SetFilter(append(bson.D{{Key: "_id", Value: IndexKey(k)}}, f...)))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	_, each, err := bulkEach(ctx, x.tables[l], models, true)
	if err != nil {
		return err
	}
	for _, e := range each {
		if e != nil {
			return e
		}
	}
	return nil
}

// readStates reads the states of blocks ids (distinct) in one find: those
// not found are missing from the map.
func (x *indexed[T, K]) readStates(ctx context.Context, ids []K) (map[K]state[T], error) {
	in := make(bson.A, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	runtime.RoundTrip(ctx)
	cur, err := x.s.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}},
		options.Find().SetProjection(x.projection()).SetBatchSize(oneBatch(len(ids))))
	if err != nil {
		return nil, err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make(map[K]state[T], len(docs))
	for _, raw := range docs {
		out[x.s.idOf(raw)] = x.stateOf(raw)
	}
	return out, nil
}

// checkTables checks item t of a batch write with index tables as the
// single write checks it (the block, the repository's readiness, the
// native indexes' values, the document, the lookup values).
func (s *Store[T, K]) checkTables(ctx context.Context, op string, t *T, version int64, ready *error, checked *bool) error {
	if err := bsonval.CheckBlock(op, s.d, t, MaxDepth); err != nil {
		return err
	}
	if !*checked {
		*ready, *checked = s.checkReady(ctx, op), true
	}
	if *ready != nil {
		return *ready
	}
	id := *s.d.ID(t)
	if err := s.checkNative(op, id, t); err != nil {
		return err
	}
	if err := s.checkDoc(op, id, s.doc(t, version, Stamp{})); err != nil {
		return err
	}
	return s.m().x.checkValues(op, id, t)
}

// createTables is CreateMany with index tables (no counter), and the
// inserts of the new blocks of a PutMany with a counter (op "Put"): each
// block's version is version(t).
func (s *Store[T, K]) createTables(ctx context.Context, op string, ts []*T, errs []error, version func(*T) int64) {
	x := s.m().x
	var ready error
	checked := false
	var ws []index.Write
	var at []int
	var ids []K
	for i, t := range ts {
		if errs[i] = s.checkTables(ctx, op, t, version(t), &ready, &checked); errs[i] != nil {
			continue
		}
		id := *s.d.ID(t)
		blk := s.d.Keys.Bytes(id)
		ws = append(ws, index.Write{ID: id, Block: blk, Inc: index.NewInc(), After: x.e.Keys(blk, t), Seq: index.NextSeq(0), Insert: true})
		at, ids = append(at, i), append(ids, id)
	}
	if len(ws) == 0 {
		return
	}
	dups := make([]error, len(ws))
	done, werrs := x.e.CommitMany(ctx, op, ws, func(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
		ok, errs := make([]bool, len(idx)), make([]error, len(idx))
		models := make([]mongo.WriteModel, len(idx))
		for j, w := range idx {
			t := ts[at[w]]
			models[j] = mongo.NewInsertOneModel().SetDocument(s.doc(t, version(t), Stamp(sts[j])))
		}
		_, each, err := bulkEach(ctx, s.coll, models, false)
		for j, w := range idx {
			switch {
			case err != nil:
				errs[j] = err
			case each[j] == nil:
				ok[j] = true
			case mongo.IsDuplicateKeyError(each[j]):
				if rerr := s.duplicate(ctx, op, ids[w], ts[at[w]], true, each[j]); rerr != nil {
					errs[j] = rerr
				} else {
					dups[w] = each[j] // the key is in use
				}
			default:
				errs[j] = each[j]
			}
		}
		return ok, errs
	})
	for w, i := range at {
		err := werrs[w]
		if err == nil && !done[w] {
			err = keyInUse(op, s.d.Aggregate, ids[w], dups[w])
		}
		if err == nil {
			s.d.SetVersion(ts[i], version(ts[i]))
		}
		errs[i] = refused(err)
	}
}

// putTables is PutMany with index tables (no counter).
func (s *Store[T, K]) putTables(ctx context.Context, ts []*T, errs []error) {
	const op = "Put"
	x := s.m().x
	versioned := s.d.Version != nil
	var ready error
	checked := false
	var at []int
	var ids []K
	var names []any
	var blocks [][]byte
	var want []int64
	for i, t := range ts {
		v := s.d.VersionOf(t)
		if errs[i] = s.checkTables(ctx, op, t, v+1, &ready, &checked); errs[i] != nil {
			continue
		}
		id := *s.d.ID(t)
		at, ids, names = append(at, i), append(ids, id), append(names, id)
		blocks, want = append(blocks, s.d.Keys.Bytes(id)), append(want, v)
	}
	if len(at) == 0 {
		return
	}
	read := make([]state[T], len(at))
	perrs := x.e.RunMany(ctx, op, names, blocks, func(ctx context.Context, idx []int) ([]index.Attempt, []error) {
		as, errs := make([]index.Attempt, len(idx)), make([]error, len(idx))
		in := make([]K, len(idx))
		for j, w := range idx {
			in[j] = ids[w]
		}
		states, err := x.readStates(ctx, in)
		for j, w := range idx {
			id, t := ids[w], ts[at[w]]
			if err != nil {
				errs[j] = runtime.Fail(op, s.d.Aggregate, id, nil, err)
				continue
			}
			st := states[id]
			read[w] = st
			if versioned {
				errs[j] = runtime.CheckVersion(op, s.d.Aggregate, id, st.found, st.version, want[w])
			}
			if errs[j] == nil {
				errs[j] = s.d.KeepCreated(op, id, t, s.created(st.raw))
			}
			as[j] = index.Attempt{Found: st.found, Stamp: st.stamp, Before: x.keys(id, st.value, st.found), After: x.e.Keys(blocks[w], t)}
		}
		return as, errs
	}, func(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
		ok, errs := make([]bool, len(idx)), make([]error, len(idx))
		models := make([]mongo.WriteModel, len(idx))
		replaces := 0
		for j, w := range idx {
			id, st := ids[w], read[w]
			d := s.doc(ts[at[w]], want[w]+1, Stamp(sts[j]))
			if !st.found {
				models[j] = mongo.NewInsertOneModel().SetDocument(d)
				continue
			}
			filter := stamped(id, st.stamp)
			switch {
			case versioned && st.versioned:
				filter = append(filter, bson.E{Key: x.versionKey, Value: want[w]})
			case versioned:
				filter = append(filter, bson.E{Key: x.versionKey, Value: bson.D{{Key: "$exists", Value: false}}})
			}
			models[j] = mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(d)
			replaces++
		}
		res, each, err := bulkEach(ctx, s.coll, models, replaces > 0)
		var check []int // replacements sent without a write error
		for j, w := range idx {
			id, t, insert := ids[w], ts[at[w]], !read[w].found
			switch e := each[j]; {
			case err != nil:
				errs[j] = err
			case e == nil && insert:
				ok[j] = true
			case e == nil:
				check = append(check, j)
			case insert && mongo.IsDuplicateKeyError(e):
				// Created meanwhile (read again), unless a native
				// unique value is taken.
				errs[j] = s.duplicate(ctx, op, id, t, true, e)
			case isDuplicate(e):
				if rerr := s.duplicate(ctx, op, id, t, false, e); rerr != nil {
					errs[j] = rerr
				} else {
					errs[j] = e
				}
			default:
				errs[j] = e
			}
		}
		if err != nil || len(check) == 0 {
			return ok, errs
		}
		if res != nil && int(res.MatchedCount) == len(check) {
			for _, j := range check {
				ok[j] = true
			}
			return ok, errs
		}
		// Some replacement matched nothing (the block changed since it
		// was read): those whose block carries the new stamp landed.
		in := make([]K, len(check))
		for n, j := range check {
			in[n] = ids[idx[j]]
		}
		states, rerr := x.readStates(ctx, in)
		for _, j := range check {
			if rerr != nil {
				errs[j] = rerr
				continue
			}
			st, found := states[ids[idx[j]]]
			ok[j] = found && st.stamp == sts[j]
		}
		return ok, errs
	})
	for w, i := range at {
		err := perrs[w]
		if err == nil {
			s.d.SetVersion(ts[i], want[w]+1)
		}
		errs[i] = refused(err)
	}
}

// deleteTables is DeleteMany with index tables. A key given again is
// deleted again after the batch, by the single Delete (runtime.ErrNotFound
// when the first one removed it).
func (s *Store[T, K]) deleteTables(ctx context.Context, ids []K, errs []error) {
	const op = "Delete"
	x := s.m().x
	seen := make(map[K]bool, len(ids))
	var first, again []int
	var in []K
	for i, id := range ids {
		if seen[id] {
			again = append(again, i)
			continue
		}
		seen[id] = true
		first, in = append(first, i), append(in, id)
	}
	states, err := x.readStates(ctx, in)
	if err != nil {
		for _, i := range first {
			errs[i] = s.fail(op, ids[i], err)
		}
	} else {
		s.deleteRead(ctx, ids, first, states, errs)
	}
	for _, i := range again {
		errs[i] = s.Delete(ctx, ids[i])
	}
}

// deleteRead deletes the blocks ids[i] for i in first, whose states were
// read: one bulkWrite of their deletes on condition of the stamps read,
// then their entries (DeletedMany). A block that changed since it was
// read is deleted by the single Delete.
func (s *Store[T, K]) deleteRead(ctx context.Context, ids []K, first []int, states map[K]state[T], errs []error) {
	const op = "Delete"
	x := s.m().x
	var sent []int
	var models []mongo.WriteModel
	for _, i := range first {
		st, found := states[ids[i]]
		if !found {
			errs[i] = runtime.Fail(op, s.d.Aggregate, ids[i], runtime.ErrNotFound, nil)
			continue
		}
		sent = append(sent, i)
		models = append(models, mongo.NewDeleteOneModel().SetFilter(stamped(ids[i], st.stamp)))
	}
	if len(sent) == 0 {
		return
	}
	if cerr := ctx.Err(); cerr != nil {
		for _, i := range sent {
			errs[i] = s.fail(op, ids[i], cerr) // not sent: nothing deleted
		}
		return
	}
	res, each, err := bulkEach(ctx, s.coll, models, true)
	if err != nil {
		for _, i := range sent {
			if ambiguous(err) {
				errs[i] = runtime.Fail(op, s.d.Aggregate, ids[i], runtime.ErrUnknownOutcome, err)
			} else {
				errs[i] = s.fail(op, ids[i], err)
			}
		}
		return
	}
	deleted := make(map[K]bool, len(sent))
	var check []K
	for j, i := range sent {
		if each[j] != nil {
			errs[i] = s.fail(op, ids[i], each[j])
			continue
		}
		deleted[ids[i]] = true
		check = append(check, ids[i])
	}
	var single []int
	if int(res.DeletedCount) < len(check) {
		// Some block changed since it was read: those still there are
		// deleted one by one.
		left, err := x.readStates(ctx, check)
		if err != nil {
			for _, id := range check {
				deleted[id] = false
			}
			for _, i := range sent {
				if errs[i] == nil {
					errs[i] = runtime.Fail(op, s.d.Aggregate, ids[i], runtime.ErrUnknownOutcome, err)
				}
			}
		}
		for id := range left {
			deleted[id] = false
		}
		for _, i := range sent {
			if _, there := left[ids[i]]; there && errs[i] == nil {
				single = append(single, i)
			}
		}
	}
	var ds []index.Deletion
	var at []int
	for _, i := range sent {
		if deleted[ids[i]] && errs[i] == nil {
			st := states[ids[i]]
			blk := s.d.Keys.Bytes(ids[i])
			ds = append(ds, index.Deletion{ID: ids[i], Block: blk, Inc: st.stamp.Inc, Keys: x.keys(ids[i], st.value, true)})
			at = append(at, i)
		}
	}
	for j, err := range x.e.DeletedMany(ctx, op, ds) {
		errs[at[j]] = err
	}
	for _, i := range single {
		errs[i] = s.Delete(ctx, ids[i])
	}
}
