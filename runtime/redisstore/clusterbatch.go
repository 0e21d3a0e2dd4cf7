package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// CreateMany on a cluster (without Options.WaitReplicas and a counter):
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
// steps. PutMany and DeleteMany on a cluster are still the single calls.

var _ index.Batcher = (*prims[struct{}])(nil)

// batchedCluster reports whether CreateMany goes through createCluster.
func (s *Store[T, K]) batchedCluster() bool {
	return s.cluster && !s.waits() && s.d.Counter == nil
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
	_, _ = p.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for j, it := range its {
			args := append([]any{"put", it.Key, it.Block, encInc(it.Inc), pad(it.Seq), encInc(it.W)}, condArgs(absent)...)
			cmds[j] = pipe.EvalSha(ctx, ix.Hash(), p.keys(l), args...)
		}
		return nil
	})
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
	_, _ = p.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for j, k := range keys {
			args := append(append([]any{"del"}, condArgs(conds[j])...), k)
			cmds[j] = pipe.EvalSha(ctx, ix.Hash(), p.keys(l), args...)
		}
		return nil
	})
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
	var ws []index.Write
	var wr []*write[K]
	var at []int
	for i, t := range ts {
		c, err := s.prepareCreate(op, t)
		if errs[i] = err; err != nil {
			continue
		}
		w := s.createWrite(op, c, c.id)
		if errs[i] = s.ready(w); errs[i] != nil {
			continue
		}
		ws = append(ws, index.Write{ID: w.id, Block: w.bk, Inc: decInc(w.inc), Before: s.indexKeys(w.bk, w.before),
			After: s.indexKeys(w.bk, w.after), Seq: w.seq, Insert: true})
		wr, at = append(wr, w), append(at, i)
	}
	if len(ws) == 0 {
		return
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
		if err != nil {
			errs[i] = s.checkFailed(op, wr[k].id, err)
			continue
		}
		*s.d.ID(ts[i]) = wr[k].id
		s.d.SetVersion(ts[i], 1)
		written = append(written, k)
	}
	// The listing: best effort (Repair restores it), on a context that
	// ends runtime.CleanupTimeout after ctx.
	if len(written) == 0 {
		return
	}
	lctx, cancel := runtime.Detach(ctx)
	defer cancel()
	zadds := make([]*redis.IntCmd, len(written))
	_, _ = s.c.Pipelined(lctx, func(pipe redis.Pipeliner) error {
		for n, k := range written {
			zadds[n] = pipe.ZAdd(lctx, s.listKey(), redisZ(wr[k].bk))
		}
		return nil
	})
	for n, k := range written {
		errs[at[k]] = runtime.LeftToRepair(ctx, op, s.d.Aggregate, wr[k].id, zadds[n].Err())
	}
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
	_, _ = s.w.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for j, k := range idx {
			p := wr[k].block
			bps[j] = packPool.Get().(*[]byte)
			args, ns, err := p.pack(bps[j])
			if err != nil || len(args) != 1 {
				continue // too large for one run: on its own
			}
			notes[j] = ns
			cmds[j] = pipe.EvalSha(ctx, vm.Hash(), p.keys, args...)
		}
		return nil
	})
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
