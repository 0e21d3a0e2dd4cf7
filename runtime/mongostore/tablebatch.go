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

// putTables is PutMany with index tables (no counter): index.PutMany
// over one find of a pass's states and one bulkWrite of its inserts and
// conditional replacements (tablePuts).
func (s *Store[T, K]) putTables(ctx context.Context, ts []*T, errs []error) {
	const op = "Put"
	var ready error
	checked := false
	var at []int
	var send []*T
	for i, t := range ts {
		if errs[i] = s.checkTables(ctx, op, t, s.d.VersionOf(t)+1, &ready, &checked); errs[i] == nil {
			at, send = append(at, i), append(send, t)
		}
	}
	if len(send) == 0 {
		return
	}
	p := &tablePuts[T, K]{s: s, ts: send, read: make([]state[T], len(send))}
	for w, err := range index.PutMany(ctx, s.m().x.e, s.d, op, send, p) {
		errs[at[w]] = refused(err)
	}
}

// tablePuts are the store commands of putTables (index.Puts).
type tablePuts[T any, K comparable] struct {
	s    *Store[T, K]
	ts   []*T
	read []state[T] // what the last read of each item saw
}

func (p *tablePuts[T, K]) id(w int) K { return *p.s.d.ID(p.ts[w]) }

// ReadStates reads the states of the items idx in one find.
func (p *tablePuts[T, K]) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*T], []error) {
	sts, errs := make([]index.BlockState[*T], len(idx)), make([]error, len(idx))
	in := make([]K, len(idx))
	for j, w := range idx {
		in[j] = p.id(w)
	}
	states, err := p.s.m().x.readStates(ctx, in)
	for j, w := range idx {
		if err != nil {
			errs[j] = runtime.Fail("Put", p.s.d.Aggregate, in[j], nil, err)
			continue
		}
		st := states[in[j]]
		p.read[w] = st
		sts[j] = index.BlockState[*T]{Found: st.found, Stamp: st.stamp, Value: st.value,
			HasVersion: p.s.d.Version != nil, Version: st.version, Created: p.s.created(st.raw)}
	}
	return sts, errs
}

// WriteBlocks sends the items' inserts (a block not found) and
// replacements on condition of the stamp and version read in one
// unordered bulkWrite (runs of filteredBulk); when the server matched
// fewer replacements than it was sent, their blocks are read back: those
// that carry the new stamp landed.
func (p *tablePuts[T, K]) WriteBlocks(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
	const op = "Put"
	s, x := p.s, p.s.m().x
	versioned := s.d.Version != nil
	ok, errs := make([]bool, len(idx)), make([]error, len(idx))
	models := make([]mongo.WriteModel, len(idx))
	replaces := 0
	for j, w := range idx {
		t, st := p.ts[w], p.read[w]
		d := s.doc(t, s.d.VersionOf(t)+1, Stamp(sts[j]))
		if !st.found {
			models[j] = mongo.NewInsertOneModel().SetDocument(d)
			continue
		}
		filter := stamped(p.id(w), st.stamp)
		switch {
		case versioned && st.versioned:
			filter = append(filter, bson.E{Key: x.versionKey, Value: s.d.VersionOf(t)})
		case versioned:
			filter = append(filter, bson.E{Key: x.versionKey, Value: bson.D{{Key: "$exists", Value: false}}})
		}
		models[j] = mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(d)
		replaces++
	}
	res, each, err := bulkEach(ctx, s.coll, models, replaces > 0)
	var check []int // replacements sent without a write error
	for j, w := range idx {
		id, t, insert := p.id(w), p.ts[w], !p.read[w].found
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
	// Some replacement matched nothing (the block changed since it was
	// read): those whose block carries the new stamp landed.
	in := make([]K, len(check))
	for n, j := range check {
		in[n] = p.id(idx[j])
	}
	states, rerr := x.readStates(ctx, in)
	for n, j := range check {
		if rerr != nil {
			errs[j] = rerr
			continue
		}
		st, found := states[in[n]]
		ok[j] = found && st.stamp == sts[j]
	}
	return ok, errs
}

// deleteTables is DeleteMany with index tables: index.DeleteMany over one
// find of the blocks' states and one bulkWrite of their deletes on
// condition of the stamps read (tableDeletes).
func (s *Store[T, K]) deleteTables(ctx context.Context, ids []K, errs []error) {
	names := make([]any, len(ids))
	blocks := make([][]byte, len(ids))
	for i, id := range ids {
		names[i], blocks[i] = id, s.d.Keys.Bytes(id)
	}
	p := &tableDeletes[T, K]{s: s, ids: ids, read: make([]state[T], len(ids))}
	copy(errs, index.DeleteMany(ctx, s.m().x.e, "Delete", names, blocks, p))
}

// tableDeletes are the store commands of deleteTables (index.Deletes).
type tableDeletes[T any, K comparable] struct {
	s    *Store[T, K]
	ids  []K
	read []state[T]
}

// ReadStates reads the states of the items idx in one find.
func (p *tableDeletes[T, K]) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*T], []error) {
	sts, errs := make([]index.BlockState[*T], len(idx)), make([]error, len(idx))
	in := make([]K, len(idx))
	for j, i := range idx {
		in[j] = p.ids[i]
	}
	states, err := p.s.m().x.readStates(ctx, in)
	for j, i := range idx {
		if err != nil {
			errs[j] = p.s.fail("Delete", in[j], err)
			continue
		}
		st := states[in[j]]
		p.read[i] = st
		sts[j] = index.BlockState[*T]{Found: st.found, Stamp: st.stamp, Value: st.value}
	}
	return sts, errs
}

// DeleteBlocks sends the items' deletes on condition of the stamps read
// in unordered bulkWrites (runs of filteredBulk); when the server deleted
// fewer than it was sent, the blocks are read again: those still there
// changed since they were read.
func (p *tableDeletes[T, K]) DeleteBlocks(ctx context.Context, idx []int) ([]bool, []error) {
	const op = "Delete"
	s := p.s
	ok, errs := make([]bool, len(idx)), make([]error, len(idx))
	models := make([]mongo.WriteModel, len(idx))
	for j, i := range idx {
		models[j] = mongo.NewDeleteOneModel().SetFilter(stamped(p.ids[i], p.read[i].stamp))
	}
	res, each, err := bulkEach(ctx, s.coll, models, true)
	if err != nil {
		for j, i := range idx {
			if errs[j] = err; !ambiguous(err) {
				errs[j] = s.fail(op, p.ids[i], err)
			}
		}
		return ok, errs
	}
	var check []K
	for j, i := range idx {
		if each[j] != nil {
			errs[j] = s.fail(op, p.ids[i], each[j])
			continue
		}
		ok[j] = true
		check = append(check, p.ids[i])
	}
	if int(res.DeletedCount) == len(check) {
		return ok, errs
	}
	left, rerr := s.m().x.readStates(ctx, check)
	for j, i := range idx {
		if !ok[j] {
			continue
		}
		if rerr != nil {
			ok[j], errs[j] = false, runtime.Fail(op, s.d.Aggregate, p.ids[i], runtime.ErrUnknownOutcome, rerr)
			continue
		}
		if st, there := left[p.ids[i]]; there && st.stamp.Inc == p.read[i].stamp.Inc {
			ok[j] = false // changed since it was read: on its own
		}
	}
	return ok, errs
}

// Cleanup implements index.Deletes: nothing beyond the entries.
func (p *tableDeletes[T, K]) Cleanup(context.Context, []int) [][]error { return nil }

// Delete implements index.Deletes: the single Delete.
func (p *tableDeletes[T, K]) Delete(ctx context.Context, i int) error {
	return p.s.Delete(ctx, p.ids[i])
}
