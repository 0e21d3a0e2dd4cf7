package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// CreateMany on a cluster (without Options.WaitReplicas; the counters
// moved once per scope first, clustercounter.go):
// the index engine's batch protocol (index.Engine.CommitMany), each phase
// one cluster pipeline, which go-redis splits per node:
//
//   - per lookup, the new entries' claims (ClaimItems: a lookup's keys
//     share one slot, so one node);
//   - the block scripts, one run per item (on their blocks' nodes);
//   - the listing's ZADDs (one key: one node).
//
// An item whose claim finds an entry stored, or whose run the cluster
// refused before any change (a slot moving), takes the single protocol's
// steps. PutMany is the engine's RunMany the same way, after a pipeline of
// the blocks' reads (putCluster); DeleteMany a pipeline of the reads, one
// of the block runs, the listing's, then the entries' deletes (the
// engine's DeletedMany; deleteManyCluster).

var _ index.Batcher = (*prims[struct{}])(nil)

// batchedCluster reports whether CreateMany, PutMany and DeleteMany go
// through createCluster, putCountedCluster and deleteManyCluster.
func (s *Store[T, K]) batchedCluster() bool {
	return s.cluster && !s.waits()
}

// ClaimItems implements index.Batcher: one pipeline of the index
// script's put runs on condition absent. A run the cluster refused before
// any change, or whose script the node has not loaded, is sent again on
// its own (PutItem); with Options.WaitReplicas every item is its PutItem,
// waited for.
func (p *prims[V]) ClaimItems(ctx context.Context, l int, its []index.Item) ([]bool, []error) {
	ok, errs := make([]bool, len(its)), make([]error, len(its))
	absent := index.Cond{Kind: index.Absent}
	if p.w != p.c {
		for j, it := range its {
			ok[j], _, errs[j] = p.PutItem(ctx, l, it, absent)
		}
		return ok, errs
	}
	if err := ctx.Err(); err != nil {
		for j := range errs {
			errs[j] = err
		}
		return ok, errs
	}
	cmds := make([]*redis.Cmd, len(its))
	_ = pipelines(ctx, p.c, len(its), func(pipe redis.Pipeliner, j int) {
		it := its[j]
		args := append([]any{"put", it.Key, it.Block, encInc(it.Inc), pad(it.Seq), encInc(it.W)}, condArgs(absent)...)
		cmds[j] = pipe.EvalSha(ctx, ix.Hash(), p.keys(l), args...)
	}, nil)
	for j, cmd := range cmds {
		res, err := p.piped(cmd)
		if err != nil && (noScript(err) || errors.Is(err, runtime.ErrUnavailable)) {
			ok[j], _, errs[j] = p.PutItem(ctx, l, its[j], absent)
			continue
		}
		if errs[j] = err; err == nil {
			n, _ := res[0].(int64)
			ok[j] = n == 1
		}
	}
	return ok, errs
}

// piped reads the reply of a pipelined run of the index script as run
// does: the reply after "ok", a refusal before any change as *refused.
func (p *prims[V]) piped(cmd *redis.Cmd) ([]any, error) {
	res, err := cmd.Slice()
	if err != nil {
		if unavailable(err) {
			return nil, &refused{err}
		}
		return nil, err
	}
	if len(res) < 2 {
		return nil, fmt.Errorf("redisstore: unexpected script reply %v", res)
	}
	if res[0] != "ok" {
		e := &scriptError{}
		e.msg, _ = res[1].(string)
		if len(res) > 2 && res[0] == "err" {
			w, _ := res[2].(int64)
			e.wrote = w == 1
		}
		if unavailable(e) && !e.wrote {
			return nil, &refused{e}
		}
		return nil, e
	}
	return res[1:], nil
}

// DeleteEach implements index.Batcher: one pipeline of the index script's
// del runs, each key on its own condition (a run refused or unknown to
// its node is sent again on its own).
func (p *prims[V]) DeleteEach(ctx context.Context, l int, keys [][]byte, conds []index.Cond) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cmds := make([]*redis.Cmd, len(keys))
	_ = pipelines(ctx, p.c, len(keys), func(pipe redis.Pipeliner, j int) {
		args := append(append([]any{"del"}, condArgs(conds[j])...), keys[j])
		cmds[j] = pipe.EvalSha(ctx, ix.Hash(), p.keys(l), args...)
	}, nil)
	var first error
	for j, cmd := range cmds {
		_, err := p.piped(cmd)
		if err != nil && (noScript(err) || errors.Is(err, runtime.ErrUnavailable)) {
			_, err = p.DeleteItems(ctx, l, keys[j:j+1], conds[j])
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// createCluster is CreateMany on a cluster (batchedCluster), setting errs.
func (s *Store[T, K]) createCluster(ctx context.Context, ts []*T, errs []error) {
	const op = "Create"
	cs := make([]*creation[T, K], len(ts))
	for i, t := range ts {
		cs[i], errs[i] = s.prepareCreate(op, t)
	}
	ids, single := s.allocateMany(ctx, cs, errs)
	single = append(single, s.createRun(ctx, ts, cs, ids, errs, 0, len(ts))...)
	s.createAgain(ctx, ts, single, errs)
}

// createRun writes the blocks of the prepared creations cs[i] (cs[i] and
// ids[i] set, errs[i] nil) for i in [from, to) as block ids[i], with the
// engine's CommitMany, setting errs. It returns the items whose allocated
// number a block holds (given explicitly before): their single Create
// takes the next one.
func (s *Store[T, K]) createRun(ctx context.Context, ts []*T, cs []*creation[T, K], ids []*K, errs []error, from, to int) (single []int) {
	const op = "Create"
	var ws []index.Write
	var wr []*write[K]
	var at []int
	for i := from; i < to; i++ {
		c := cs[i]
		if c == nil || errs[i] != nil || ids[i] == nil {
			continue
		}
		w := s.createWrite(op, c, *ids[i])
		if errs[i] = s.ready(w); errs[i] != nil {
			continue
		}
		ws = append(ws, index.Write{ID: w.id, Block: w.bk, Inc: decInc(w.inc), Before: s.indexKeys(w.bk, w.before),
			After: s.indexKeys(w.bk, w.after), Seq: w.seq, Insert: true})
		wr, at = append(wr, w), append(at, i)
	}
	if len(ws) == 0 {
		return nil
	}
	// short: a run that failed after a first change, whose outcome stays
	// unknown even if its block reads back with the new stamp.
	short := make([]error, len(ws))
	done, cerrs := s.eng.CommitMany(ctx, op, ws, func(ctx context.Context, idx []int, _ []index.Stamp) ([]bool, []error) {
		return s.blockRuns(ctx, wr, idx, short)
	})
	var written []int
	for k, i := range at {
		err := cerrs[k]
		var f *failure
		if errors.As(err, &f) {
			err = f
		}
		if err == nil && done[k] && short[k] != nil {
			err = short[k]
		}
		if err == nil && !done[k] {
			err = &failure{reason: "exists"}
		}
		if _, dup := failed(err, "exists"); dup && cs[i].alloc {
			single = append(single, i) // a block with an explicit number: the next
			continue
		}
		if err != nil {
			errs[i] = s.checkFailed(op, wr[k].id, err)
			continue
		}
		*s.d.ID(ts[i]) = wr[k].id
		s.d.SetVersion(ts[i], 1)
		written = append(written, k)
	}
	s.listMany(ctx, op, written, wr, errs, at)
	return single
}

// blockRuns runs the block scripts of the writes wr[k] for k in idx in
// one pipeline, as commitCluster's block write: ok when the run passed
// its checks, a failed check as its *failure (a "changed" one as a
// condition that failed), a refusal before any change as
// runtime.ErrUnavailable. A run too large for one argument, refused, or
// unknown to its node runs on its own.
func (s *Store[T, K]) blockRuns(ctx context.Context, wr []*write[K], idx []int, short []error) ([]bool, []error) {
	ok, errs := make([]bool, len(idx)), make([]error, len(idx))
	bps := make([]*[]byte, len(idx))
	notes := make([][]string, len(idx))
	cmds := make([]*redis.Cmd, len(idx))
	defer func() {
		for _, bp := range bps {
			if bp != nil && cap(*bp) <= 1<<20 {
				packPool.Put(bp)
			}
		}
	}()
	_ = pipelines(ctx, s.w, len(idx), func(pipe redis.Pipeliner, j int) {
		p := wr[idx[j]].block
		bps[j] = packPool.Get().(*[]byte)
		args, ns, err := p.pack(bps[j])
		if err != nil || len(args) != 1 {
			return // too large for one run: on its own
		}
		notes[j] = ns
		cmds[j] = pipe.EvalSha(ctx, vm.Hash(), p.keys, args...)
	}, nil)
	for j, k := range idx {
		w := wr[k]
		var err error
		if cmds[j] == nil || noScript(cmds[j].Err()) || unavailable(cmds[j].Err()) {
			_, err = w.block.run(ctx, s.w)
		} else {
			res, rerr := cmds[j].Slice()
			_, err = reply(res, rerr, notes[j])
		}
		switch {
		case err == nil:
			ok[j] = true
		case isFailure(err):
			if _, changed := failed(err, "changed"); !changed {
				errs[j] = err
			}
		case unavailable(err):
			errs[j] = runtime.FailAt(w.op, s.d.Aggregate, w.id, "(refused before any change: the slot is moving or has no master; retry later)", runtime.ErrUnavailable, err)
		default:
			if se, isScript := err.(*scriptError); isScript && se.wrote {
				short[k] = runtime.FailAt(w.op, s.d.Aggregate, w.id, "(outcome unknown: the script run failed after a first change)", runtime.ErrUnknownOutcome, err)
			}
			errs[j] = err // the engine reads the block back
		}
	}
	return ok, errs
}

// putCluster is PutMany on a cluster (batchedCluster), setting errs:
// index.PutMany over, per pass, one pipeline of the blocks' reads (the
// created timestamps, the states of an aggregate with lookups), the
// claims, the block runs (blockRuns) and the old entries' deletes
// (clusterPuts), then one pipeline of the listing's ZADDs.
func (s *Store[T, K]) putCluster(ctx context.Context, ts []*T, errs []error) {
	const op = "Put"
	var at []int
	var send []*T
	var fields [][]string
	for i, t := range ts {
		id := *s.d.ID(t)
		if errs[i] = s.nameTooLarge(op, id); errs[i] != nil {
			continue
		}
		f, err := s.fields(op, id, t, s.d.VersionOf(t)+1)
		if errs[i] = err; err == nil {
			at, send, fields = append(at, i), append(send, t), append(fields, f)
		}
	}
	if len(at) == 0 {
		return
	}
	n := len(at)
	p := &clusterPuts[T, K]{s: s, ts: send, fields: fields, want: make([]int64, n),
		created: make([]*string, n), states: make([]*state[T], n), wr: make([]*write[K], n), short: make([]error, n)}
	for k, t := range send {
		p.want[k] = s.d.VersionOf(t)
	}
	var written []int
	for k, err := range index.PutMany(ctx, s.eng, s.d, op, send, p) {
		i := at[k]
		var f *failure
		if errors.As(err, &f) {
			err = f
		}
		if err == nil && p.short[k] != nil {
			err = p.short[k]
			s.d.SetVersion(ts[i], p.want[k]) // not known written
		}
		if err != nil {
			errs[i] = s.checkFailed(op, *s.d.ID(ts[i]), err)
			continue
		}
		written = append(written, k)
	}
	s.listMany(ctx, op, written, p.wr, errs, at)
}

// clusterPuts are the store commands of putCluster (index.Puts).
type clusterPuts[T any, K comparable] struct {
	s      *Store[T, K]
	ts     []*T
	fields [][]string
	want   []int64 // the versions expected, as given
	// What the last read of each item saw, and its write.
	created []*string
	states  []*state[T]
	wr      []*write[K]
	// short: a run that failed after a first change, whose outcome
	// stays unknown even if its block reads back with the new stamp.
	short []error
	reads int64
}

// ReadStates reads the items idx in one pipeline: the created entries
// (HGET) and, with lookups, the blocks (HGETALL). Without lookups the
// block run checks only the created entry read: each read is a stamp of
// its own, so that a run refused for one changed meanwhile is read and
// written again, as Put tries again; the run checks the version.
func (p *clusterPuts[T, K]) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*T], []error) {
	const op = "Put"
	s := p.s
	sts, errs := make([]index.BlockState[*T], len(idx)), make([]error, len(idx))
	p.reads++
	hget := make([]*redis.StringCmd, len(idx))
	hgetall := make([]*redis.MapStringStringCmd, len(idx))
	lookups := len(s.d.Lookups) > 0
	_ = pipelines(ctx, s.c, len(idx), func(pipe redis.Pipeliner, j int) {
		key := s.BlockKey(*s.d.ID(p.ts[idx[j]]))
		if s.d.Created != nil {
			hget[j] = pipe.HGet(ctx, key, s.d.Created.Key)
		}
		if lookups {
			hgetall[j] = pipe.HGetAll(ctx, key)
		}
	}, nil)
	for j, k := range idx {
		id, t := *s.d.ID(p.ts[k]), p.ts[k]
		p.created[k], p.states[k], p.short[k] = nil, nil, nil
		if hget[j] != nil {
			v, err := hget[j].Result()
			if errors.Is(err, redis.Nil) {
				v = ""
			} else if err != nil {
				errs[j] = s.fail(op, id, nil, err)
				continue
			}
			p.created[k] = &v
			if v != "" {
				sts[j].Created = decoder(v)
			}
		}
		sts[j].Found, sts[j].Stamp = true, index.Stamp{Seq: p.reads}
		if hgetall[j] != nil {
			st, err := s.stateOf(op, id, hgetall[j])
			if errs[j] = err; err != nil {
				continue
			}
			p.states[k] = &st
			sts[j] = index.BlockState[*T]{Found: st.found, Stamp: index.Stamp{Seq: parseSeq(st.seq), Inc: decInc(st.inc)},
				Value: st.t, Created: sts[j].Created}
		}
		w, err := s.putWrite(op, t, p.want[k], p.fields[k], p.created[k], p.states[k])
		if err == nil {
			err = s.ready(w)
		}
		errs[j] = err
	}
	return sts, errs
}

// WriteBlocks runs the items' block scripts, with the stamps the engine
// gave them, in one pipeline (blockRuns).
func (p *clusterPuts[T, K]) WriteBlocks(ctx context.Context, idx []int, sts []index.Stamp) ([]bool, []error) {
	const op = "Put"
	s := p.s
	ok, werrs := make([]bool, len(idx)), make([]error, len(idx))
	var run, pos []int
	for j, k := range idx {
		w, err := s.putWriteAt(op, p.ts[k], p.want[k], p.fields[k], p.created[k], p.states[k], &sts[j])
		if err == nil {
			err = s.ready(w)
		}
		if werrs[j] = err; err == nil {
			p.wr[k], run, pos = w, append(run, k), append(pos, j)
		}
	}
	rok, rerrs := s.blockRuns(ctx, p.wr, run, p.short)
	for n, j := range pos {
		ok[j], werrs[j] = rok[n], rerrs[n]
	}
	return ok, werrs
}

// listMany adds the blocks wr[k] for k in written to the listing and
// raises their counters (raiseMany) in one pipeline (best effort: Repair
// restores them), on a context that ends
// runtime.CleanupTimeout after ctx, setting errs[at[k]].
func (s *Store[T, K]) listMany(ctx context.Context, op string, written []int, wr []*write[K], errs []error, at []int) {
	if len(written) == 0 {
		return
	}
	lctx, cancel := runtime.Detach(ctx)
	defer cancel()
	zadds := make([]*redis.IntCmd, len(written))
	var raised func() map[string]error
	_ = pipelines(lctx, s.c, len(written), func(pipe redis.Pipeliner, n int) {
		zadds[n] = pipe.ZAdd(lctx, s.listKey(), redisZ(wr[written[n]].bk))
	}, func(pipe redis.Pipeliner, last bool) {
		if last {
			raised = s.raiseMany(lctx, pipe, written, wr)
		}
	})
	left := raised()
	for n, k := range written {
		errs[at[k]] = runtime.LeftToRepair(ctx, op, s.d.Aggregate, wr[k].id, zadds[n].Err(), left[wr[k].counter])
	}
}

// deleteManyCluster is DeleteMany on a cluster (batchedCluster), setting
// errs: index.DeleteMany over one pipeline of the blocks' reads (an
// aggregate with lookups; without, the delete run checks the block
// itself), one of the block runs (blockRuns), the listing's cleanup
// (unlistMany) and then the entries' deletes (the engine's DeletedMany).
func (s *Store[T, K]) deleteManyCluster(ctx context.Context, ids []K, errs []error) {
	names := make([]any, len(ids))
	blocks := make([][]byte, len(ids))
	for i, id := range ids {
		names[i], blocks[i] = id, s.d.Keys.Bytes(id)
	}
	p := &clusterDeletes[T, K]{s: s, ids: ids, wr: make([]*write[K], len(ids))}
	copy(errs, index.DeleteMany(ctx, s.eng, "Delete", names, blocks, p))
}

// clusterDeletes are the store commands of deleteManyCluster
// (index.Deletes).
type clusterDeletes[T any, K comparable] struct {
	s   *Store[T, K]
	ids []K
	wr  []*write[K] // each item's delete run, as its read made it
}

// ReadStates reads the blocks of the items idx in one pipeline (HGETALL)
// when the aggregate has lookups, and makes each item's delete run.
func (p *clusterDeletes[T, K]) ReadStates(ctx context.Context, idx []int) ([]index.BlockState[*T], []error) {
	const op = "Delete"
	s := p.s
	sts, errs := make([]index.BlockState[*T], len(idx)), make([]error, len(idx))
	for j, i := range idx {
		errs[j] = s.nameTooLarge(op, p.ids[i])
	}
	hgetall := make([]*redis.MapStringStringCmd, len(idx))
	if len(s.d.Lookups) > 0 {
		_ = pipelines(ctx, s.c, len(idx), func(pipe redis.Pipeliner, j int) {
			if errs[j] == nil {
				hgetall[j] = pipe.HGetAll(ctx, s.BlockKey(p.ids[idx[j]]))
			}
		}, nil)
	}
	for j, i := range idx {
		id := p.ids[i]
		if errs[j] != nil {
			continue
		}
		var st *state[T]
		if hgetall[j] != nil {
			read, err := s.stateOf(op, id, hgetall[j])
			if errs[j] = err; err != nil {
				continue
			}
			if !read.found {
				continue // not found: the engine says so
			}
			st = &read
			sts[j] = index.BlockState[*T]{Found: true, Stamp: index.Stamp{Seq: parseSeq(st.seq), Inc: decInc(st.inc)}, Value: st.t}
		} else {
			sts[j].Found = true // the delete run checks that the block exists
		}
		w, err := s.deleteWrite(op, id, st, nil)
		if err == nil {
			err = s.ready(w)
		}
		errs[j], p.wr[i] = err, w
	}
	return sts, errs
}

// DeleteBlocks runs the items' delete runs in one pipeline (blockRuns).
// A run whose reply is lost is read back by the engine, except where
// writes wait for replicas: a delete no WAIT confirmed is
// runtime.ErrUnknownOutcome whatever the block reads back as.
func (p *clusterDeletes[T, K]) DeleteBlocks(ctx context.Context, idx []int) ([]bool, []error) {
	const op = "Delete"
	s := p.s
	short := make([]error, len(p.wr))
	ok, errs := s.blockRuns(ctx, p.wr, idx, short)
	for j, i := range idx {
		err := errs[j]
		switch {
		case err == nil:
		case isFailure(err):
			errs[j] = s.checkFailed(op, p.ids[i], err) // the block is missing
		case short[i] != nil:
			errs[j] = short[i]
		case s.waits():
			var re *runtime.Error
			if !errors.As(err, &re) {
				errs[j] = runtime.FailAt(op, s.d.Aggregate, p.ids[i], "(outcome unknown: the reply was lost, and no WAIT confirmed the replicas: the delete may be applied on the master only)", runtime.ErrUnknownOutcome, err)
			}
		}
	}
	return ok, errs
}

// Cleanup removes the deleted blocks of the items idx from the listing
// (unlistMany).
func (p *clusterDeletes[T, K]) Cleanup(ctx context.Context, idx []int) [][]error {
	return p.s.unlistMany(ctx, p.wr, idx)
}

// Delete is the single Delete of item i.
func (p *clusterDeletes[T, K]) Delete(ctx context.Context, i int) error {
	return p.s.Delete(ctx, p.ids[i])
}

// unlistMany removes the deleted blocks wr[k] for k in gone from the
// listing, as listed does one (best effort, on a context that ends
// runtime.CleanupTimeout after ctx): one pipeline of the ZREMs, one of
// the blocks' EXISTS, and one of the ZADDs of those created again
// meanwhile. It returns what failed, per position in gone.
func (s *Store[T, K]) unlistMany(ctx context.Context, wr []*write[K], gone []int) [][]error {
	left := make([][]error, len(gone))
	if len(gone) == 0 {
		return left
	}
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	note := func(n int, err error) {
		if err != nil {
			left[n] = append(left[n], err)
		}
	}
	zrems := make([]*redis.IntCmd, len(gone))
	_ = pipelines(ctx, s.c, len(gone), func(p redis.Pipeliner, n int) {
		zrems[n] = p.ZRem(ctx, s.listKey(), string(wr[gone[n]].bk))
	}, nil)
	exists := make([]*redis.IntCmd, len(gone))
	_ = pipelines(ctx, s.c, len(gone), func(p redis.Pipeliner, n int) {
		note(n, zrems[n].Err())
		exists[n] = p.Exists(ctx, s.blockKey(wr[gone[n]].bk))
	}, nil)
	var back []int
	for n := range gone {
		c, err := exists[n].Result()
		note(n, err)
		if err == nil && c == 1 {
			back = append(back, n)
		}
	}
	if len(back) == 0 {
		return left
	}
	zadds := make([]*redis.IntCmd, len(back))
	_ = pipelines(ctx, s.c, len(back), func(p redis.Pipeliner, m int) {
		zadds[m] = p.ZAdd(ctx, s.listKey(), redisZ(wr[gone[back[m]]].bk))
	}, nil)
	for m, n := range back {
		note(n, zadds[m].Err())
	}
	return left
}
