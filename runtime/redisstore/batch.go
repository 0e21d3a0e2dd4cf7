package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// Batch writes (runtime.BatchStore). On a single node a batch is at most
// two pipelines: the reads its writes need (the counters' INCR of keys
// to allocate, the created timestamps and, for an aggregate with
// lookups, the blocks' states, as the single calls read them), then the
// single calls' script runs, one per item, in item order. Each run checks
// what its read saw (the write sequence, the version, the claims of
// unique values), so an item that a previous item of the same batch
// changed (its key given twice) fails that check and is written again
// by its single call, which then sees the earlier item as it would in
// order. An item the script refuses gets the single call's error. With
// Options.WaitReplicas the runs' pipeline goes on one connection and
// ends with one WAIT, which counts the replicas that have every write
// of the connection before it: an item applied but not acknowledged gets
// the single call's error for a run not acknowledged
// (runtime.ErrUnknownOutcome; wait.go).
//
// On a cluster the writes of an aggregate with lookups are the index
// protocol (several steps per item, on several nodes): CreateMany, PutMany
// and DeleteMany run it phase by phase for the batch (clusterbatch.go);
// a CreateMany or PutMany with a counter first moves each counter scope
// once for the items to allocate (clustercounter.go: a PutMany's items
// whose number is zero are Creates, as the single Put makes them). There
// a run waited on by WAIT (Options.WaitReplicas) is a pipeline of its own
// on its node's connection: with that option the items are the single
// calls, as they are on a node for runs too large for one argument.

var _ runtime.BatchStore[struct{}, string] = (*Store[struct{}, string])(nil)

// pending is one item of a batch: its write, once read and prepared.
type pending[K any] struct {
	i    int
	w    *write[K]
	bp   *[]byte
	args []any
	// notes are the run's checks' notes.
	notes []string
}

// pipelined reports whether the batch's writes go in pipelines: on a
// single node, a *redis.Client when they wait for replicas (a pipeline
// then goes on one connection, which its WAIT covers).
func (s *Store[T, K]) pipelined() bool {
	if s.cluster {
		return false
	}
	_, _, ok := s.waitedNode()
	return ok || !s.waits()
}

// waitedNode returns, when the store's writes wait for replicas on a
// single node, its options' client and the node's client.
func (s *Store[T, K]) waitedNode() (*optClient, *redis.Client, bool) {
	oc, ok := s.w.(*optClient)
	if !ok || s.cluster {
		return nil, nil, false
	}
	node, ok := s.c.(*redis.Client)
	return oc, node, ok
}

// CreateMany writes new blocks, as Create each.
func (s *Store[T, K]) CreateMany(ctx context.Context, ts []*T) []error {
	const op = "Create"
	errs := make([]error, len(ts))
	if s.batchedCluster() {
		s.createCluster(ctx, ts, errs)
		return errs
	}
	if !s.pipelined() {
		for i, t := range ts {
			errs[i] = s.Create(ctx, t)
		}
		return errs
	}
	cs := make([]*creation[T, K], len(ts))
	incr := make([]*redis.IntCmd, len(ts))
	perr := pipelines(ctx, s.c, len(ts), func(p redis.Pipeliner, i int) {
		if cs[i], errs[i] = s.prepareCreate(op, ts[i]); errs[i] == nil && cs[i].alloc {
			incr[i] = p.Incr(ctx, cs[i].counter)
		}
	}, nil)
	var ps []*pending[K]
	for i, c := range cs {
		if errs[i] != nil {
			continue
		}
		id := c.id
		if c.alloc {
			if id, errs[i] = s.allocated(op, c, incr[i]); errs[i] != nil {
				continue
			}
		}
		ps = append(ps, &pending[K]{i: i, w: s.createWrite(op, c, id)})
	}
	_ = perr // each INCR's own error is its item's
	s.runAll(ctx, ps, errs, func(p *pending[K], err error) error {
		c := cs[p.i]
		if err != nil {
			if _, dup := failed(err, "exists"); dup && c.alloc {
				return s.Create(ctx, c.t) // a block with an explicit number: take the next
			}
			return s.checkFailed(op, p.w.id, err)
		}
		*s.d.ID(c.t) = p.w.id
		s.d.SetVersion(c.t, 1)
		return nil
	})
	return errs
}

// PutMany replaces blocks whole, as Put each.
func (s *Store[T, K]) PutMany(ctx context.Context, ts []*T) []error {
	const op = "Put"
	errs := make([]error, len(ts))
	if s.batchedCluster() {
		s.putCountedCluster(ctx, ts, errs)
		return errs
	}
	if !s.pipelined() {
		for i, t := range ts {
			errs[i] = s.Put(ctx, t)
		}
		return errs
	}
	// An item whose key is to be allocated is a Create: the batch goes
	// in pipelines up to it, then it is written, in item order.
	from := 0
	for i, t := range ts {
		if s.d.Counter != nil {
			if _, n := s.d.Counter.Split(*s.d.ID(t)); n == 0 {
				s.putPipelined(ctx, ts[from:i], errs[from:i])
				errs[i] = s.Put(ctx, t)
				from = i + 1
			}
		}
	}
	s.putPipelined(ctx, ts[from:], errs[from:])
	return errs
}

// putPipelined writes ts (no key to allocate) in two pipelines, setting
// errs.
func (s *Store[T, K]) putPipelined(ctx context.Context, ts []*T, errs []error) {
	const op = "Put"
	if len(ts) == 0 {
		return
	}
	want := make([]int64, len(ts))
	fields := make([][]string, len(ts))
	hget := make([]*redis.StringCmd, len(ts))
	hgetall := make([]*redis.MapStringStringCmd, len(ts))
	_ = pipelines(ctx, s.c, len(ts), func(p redis.Pipeliner, i int) {
		t := ts[i]
		id := *s.d.ID(t)
		if errs[i] = s.nameTooLarge(op, id); errs[i] != nil {
			return
		}
		want[i] = s.d.VersionOf(t)
		if fields[i], errs[i] = s.fields(op, id, t, want[i]+1); errs[i] != nil {
			return
		}
		if s.d.Created != nil {
			hget[i] = p.HGet(ctx, s.BlockKey(id), s.d.Created.Key)
		}
		if len(s.d.Lookups) > 0 {
			hgetall[i] = p.HGetAll(ctx, s.BlockKey(id))
		}
	}, nil)
	var ps []*pending[K]
	for i, t := range ts {
		if errs[i] != nil {
			continue
		}
		id := *s.d.ID(t)
		var created *string
		if hget[i] != nil {
			if created, errs[i] = s.createdOf(op, id, t, hget[i]); errs[i] != nil {
				continue
			}
		}
		var st *state[T]
		if hgetall[i] != nil {
			read, err := s.stateOf(op, id, hgetall[i])
			if errs[i] = err; err != nil {
				continue
			}
			st = &read
		}
		w, err := s.putWrite(op, t, want[i], fields[i], created, st)
		if errs[i] = err; err == nil {
			ps = append(ps, &pending[K]{i: i, w: w})
		}
	}
	s.runAll(ctx, ps, errs, func(p *pending[K], err error) error {
		t := ts[p.i]
		if err != nil {
			if _, changed := failed(err, "changed"); changed {
				return s.Put(ctx, t) // read again: an earlier item changed it
			}
			return s.checkFailed(op, p.w.id, err)
		}
		s.d.SetVersion(t, want[p.i]+1)
		return nil
	})
}

// DeleteMany removes blocks, as Delete each.
func (s *Store[T, K]) DeleteMany(ctx context.Context, ids []K) []error {
	const op = "Delete"
	errs := make([]error, len(ids))
	if s.batchedCluster() {
		s.deleteManyCluster(ctx, ids, errs)
		return errs
	}
	if !s.pipelined() {
		for i, id := range ids {
			errs[i] = s.Delete(ctx, id)
		}
		return errs
	}
	hgetall := make([]*redis.MapStringStringCmd, len(ids))
	if len(s.d.Lookups) > 0 {
		_ = pipelines(ctx, s.c, len(ids), func(p redis.Pipeliner, i int) {
			if errs[i] = s.nameTooLarge(op, ids[i]); errs[i] == nil {
				hgetall[i] = p.HGetAll(ctx, s.BlockKey(ids[i]))
			}
		}, nil)
	}
	var ps []*pending[K]
	for i, id := range ids {
		if errs[i] != nil {
			continue
		}
		if errs[i] = s.nameTooLarge(op, id); errs[i] != nil {
			continue
		}
		var st *state[T]
		if hgetall[i] != nil {
			read, err := s.stateOf(op, id, hgetall[i])
			if errs[i] = err; err != nil {
				continue
			}
			st = &read
		}
		w, err := s.deleteWrite(op, id, st, nil)
		if errs[i] = err; err == nil {
			ps = append(ps, &pending[K]{i: i, w: w})
		}
	}
	s.runAll(ctx, ps, errs, func(p *pending[K], err error) error {
		if err != nil {
			if _, changed := failed(err, "changed"); changed {
				return s.Delete(ctx, p.w.id) // read again: an earlier item changed it
			}
			return s.checkFailed(op, p.w.id, err)
		}
		return nil
	})
	return errs
}

// runAll runs the writes ps in pipelines (pipelines.go), in order, and sets the error
// of each item to what done makes of its outcome (settle's: a failed
// check as *failure, a taken value as runtime.ErrDuplicate, a lost reply
// read back). A write whose run is too large for one argument, or that
// the server does not know the script of yet, runs on its own.
func (s *Store[T, K]) runAll(ctx context.Context, ps []*pending[K], errs []error, done func(*pending[K], error) error) {
	if len(ps) == 0 {
		return
	}
	progs := make([]*prog, len(ps))
	cmds := make([]*redis.Cmd, len(ps))
	defer func() {
		for _, p := range ps {
			if p.bp != nil && cap(*p.bp) <= 1<<20 {
				packPool.Put(p.bp)
			}
		}
	}()
	// With WaitReplicas, one WAIT after the runs: a *redis.Client sends
	// a pipeline on one connection, whose writes WAIT counts.
	// Each pipeline of runs (pipelines.go) ends with its WAIT.
	oc, node, waited := s.waitedNode()
	var wts []*redis.IntCmd // per pipeline, with its timeout
	var timeouts []time.Duration
	of := make([]int, len(ps))
	var end func(redis.Pipeliner, bool)
	if waited {
		end = func(pipe redis.Pipeliner, _ bool) {
			timeout := oc.timeout(ctx, node)
			wts, timeouts = append(wts, oc.wait(ctx, pipe, timeout)), append(timeouts, timeout)
		}
	}
	_ = pipelines(ctx, s.c, len(ps), func(pipe redis.Pipeliner, j int) {
		p := ps[j]
		if errs[p.i] = s.ready(p.w); errs[p.i] != nil {
			return
		}
		progs[j] = s.nodeProg(p.w)
		p.bp = packPool.Get().(*[]byte)
		var err error
		if p.args, p.notes, err = progs[j].pack(p.bp); err != nil || len(p.args) != 1 {
			return // too large for one run: on its own
		}
		cmds[j], of[j] = pipe.EvalSha(ctx, vm.Hash(), progs[j].keys, p.args...), len(wts)
	}, end)
	for j, p := range ps {
		if progs[j] == nil {
			continue
		}
		var n int64
		var err error
		if cmds[j] == nil || noScript(cmds[j].Err()) {
			n, err = progs[j].run(ctx, s.w)
		} else {
			res, rerr := cmds[j].Slice()
			if rerr == nil && waited {
				rerr = oc.short(res, wts[of[j]], timeouts[of[j]])
			}
			n, err = reply(res, rerr, p.notes)
		}
		_, err = s.settle(ctx, p.w, n, err)
		errs[p.i] = done(p, err)
	}
}

// noScript reports the server's refusal of an EVALSHA of a script it has
// not loaded: nothing ran.
func noScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }
