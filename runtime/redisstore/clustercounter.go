package redisstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// Counters in a CreateMany (and a PutMany: putCountedCluster) on a
// cluster: the items are checked as the
// single Create checks them before its counter moves (prepareCreate: a
// refused item takes no number), then one pipeline holds one INCRBY per
// counter scope, by the number of its items to allocate, which take the
// numbers up to the result in slice order (runtime.CounterScopes). The
// blocks are then written by the index engine's batch protocol like those
// of an aggregate without a counter, and the counters of the numbers
// given explicitly are raised with the listing (listMany), as the single
// Create raises them after its write. As with the single Create, a number
// whose write fails stays allocated (a gap), and an allocated number
// whose block exists (given explicitly before) makes its item the single
// Create after the batch, which takes the next free one; so does an item
// whose counter the INCRBY could not move (at the largest number), whose
// single Create says why.

// allocateMany returns the block key of each prepared creation cs[i]
// (cs[i] set, errs[i] nil): its key, or the one with the number allocated
// to it. A nil key is an item left to the single Create (listed in
// single).
func (s *Store[T, K]) allocateMany(ctx context.Context, cs []*creation[T, K], errs []error) (keys []*K, single []int) {
	keys = make([]*K, len(cs))
	ids := make([]K, len(cs))
	skip := make([]bool, len(cs))
	for i, c := range cs {
		if skip[i] = c == nil || errs[i] != nil; !skip[i] {
			ids[i] = c.id
			if !c.alloc {
				keys[i] = &c.id
			}
		}
	}
	if s.d.Counter == nil {
		return keys, nil
	}
	scopes := runtime.CounterScopes(s.d.Counter, ids, skip)
	incr := make([]*redis.IntCmd, len(scopes))
	_ = pipelines(ctx, s.c, len(scopes), func(p redis.Pipeliner, j int) {
		if sc := scopes[j]; len(sc.Alloc) > 0 {
			incr[j] = p.IncrBy(ctx, s.counterKey(sc.Scope), int64(len(sc.Alloc)))
		}
	}, nil)
	for j, sc := range scopes {
		if incr[j] == nil {
			continue
		}
		if last, err := incr[j].Result(); err != nil {
			// The single Create moves the counter again and says why
			// (ErrOverflow at the largest number).
			single = append(single, sc.Alloc...)
		} else {
			single = append(single, sc.Place(s.d.Counter, ids, last, keys)...)
		}
	}
	return keys, single
}

// createAgain writes the items ts[i] for i in single with the single
// Create, in slice order, after the batch.
func (s *Store[T, K]) createAgain(ctx context.Context, ts []*T, single []int, errs []error) {
	slices.Sort(single)
	for _, i := range single {
		errs[i] = s.Create(ctx, ts[i])
	}
}

// raiseMany adds to pipe the raise of each counter to the largest number
// the written blocks wr[k] for k in written give it (their writes'
// counter and raiseTo), and returns a function that, once the pipeline
// ran, returns the error of each counter's raise (nil when it moved). A
// raise the node has not the script of yet runs on its own.
func (s *Store[T, K]) raiseMany(ctx context.Context, pipe redis.Pipeliner, written []int, wr []*write[K]) func() map[string]error {
	to := map[string]int64{}
	var counters []string
	for _, k := range written {
		if c := wr[k].counter; c != "" {
			if _, ok := to[c]; !ok {
				counters = append(counters, c)
			}
			to[c] = max(to[c], wr[k].raiseTo)
		}
	}
	progs := make([]*prog, len(counters))
	cmds := make([]*redis.Cmd, len(counters))
	bps := make([]*[]byte, len(counters))
	notes := make([][]string, len(counters))
	for j, c := range counters {
		p := &prog{}
		p.change("raise", p.k(c), fmt.Sprint(to[c]))
		progs[j], bps[j] = p, packPool.Get().(*[]byte)
		if args, ns, err := p.pack(bps[j]); err == nil && len(args) == 1 {
			notes[j] = ns
			cmds[j] = pipe.EvalSha(ctx, vm.Hash(), p.keys, args...)
		}
	}
	return func() map[string]error {
		errs := make(map[string]error, len(counters))
		for j, c := range counters {
			var err error
			if cmds[j] == nil || noScript(cmds[j].Err()) {
				_, err = progs[j].run(ctx, s.c)
			} else {
				res, rerr := cmds[j].Slice()
				_, err = reply(res, rerr, notes[j])
			}
			errs[c] = err
			if cap(*bps[j]) <= 1<<20 {
				packPool.Put(bps[j])
			}
		}
		return errs
	}
}

// putCountedCluster is PutMany on a cluster (batchedCluster). Without a
// counter it is putCluster. With one, an item whose number is zero
// allocates it, as the single Put does (putAllocates: it is a Create):
// the counters move once per scope for the batch (allocateMany), then the
// items go in runs of consecutive items of one kind, in item order, so
// that one that writes a block an earlier one wrote sees it as the single
// calls would: the allocated ones through the create batch (createRun),
// the others, whose numbers are given, through putCluster, which raises
// their counters with the listing. An allocated number whose block exists
// makes its item the single Create after the batch, as in CreateMany.
func (s *Store[T, K]) putCountedCluster(ctx context.Context, ts []*T, errs []error) {
	if s.d.Counter == nil {
		s.putCluster(ctx, ts, errs)
		return
	}
	alloc := make([]bool, len(ts))
	cs := make([]*creation[T, K], len(ts))
	for i, t := range ts {
		if errs[i] = s.nameTooLarge("Put", *s.d.ID(t)); errs[i] != nil {
			alloc[i] = true // refused: in no run
			continue
		}
		if alloc[i], errs[i] = s.putAllocates("Put", t); alloc[i] && errs[i] == nil {
			cs[i], errs[i] = s.prepareCreate("Create", t)
		}
	}
	ids, single := s.allocateMany(ctx, cs, errs)
	for from := 0; from < len(ts); {
		to := from + 1
		for to < len(ts) && alloc[to] == alloc[from] {
			to++
		}
		if alloc[from] {
			single = append(single, s.createRun(ctx, ts, cs, ids, errs, from, to)...)
		} else {
			s.putCluster(ctx, ts[from:to], errs[from:to])
		}
		from = to
	}
	s.createAgain(ctx, ts, single, errs)
}
