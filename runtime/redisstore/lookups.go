package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// The lookup protocol. An index table is a sorted set of members value +
// block key (lexicographic, score 0), with a meta hash recording, per
// member, the incarnation of the block and the sequence of the write that
// added it, and for a unique lookup a claims hash value -> block key.
//
// On a single node a write is one script run: the claims are checked, the
// block is checked and written, the entries of its new values are added
// and those of its old values removed, the listing and the counter
// changed, all or nothing.
//
// On a cluster the index tables, the listing and the counters are on
// other hash slots than the block, so a write is several runs, in this
// order (the protocol of runtime/mongostore, RELIABILITY.md):
//
//  1. claim the unique values the block gets (a check-and-set script on
//     the claims hash: free, or already the block's), then add the other
//     new entries;
//  2. write the block, on condition that it is as read (its _seq) — if a
//     check fails, undo the entries step 1 created and stop; if the reply
//     is lost, keep them (reads verify them, Repair removes them);
//  3. add or remove the block in the listing, raise the counter;
//  4. remove the entries of the old values, only those of this
//     incarnation written before this write (best effort).
//
// Invariants: a stored block is always found by each of its values
// (entries are added before the block and removed after); a read never
// returns an aggregate that does not hold the value (reads verify every
// entry against the block read after it); a unique value is claimed by one
// block at a time, and a claim whose holder does not hold the value is
// taken over only after StaleAfter (its write may be in flight).

// member is the index member of value v of block bk.
func member(v, bk []byte) string { return string(v) + string(bk) }

// write is one write of one block, ready to commit.
type write[K any] struct {
	op    string
	id    K
	bk    []byte
	inc   string
	seq   int64
	block *prog // on the block's key only
	// before and after are the lookup values of the block before and
	// after the write, per lookup (nil: the lookup is not changed).
	before, after [][][]byte
	list          int // 1: add to the listing, -1: remove, 0: leave
	counter       string
	raiseTo       int64
	// appends is set for an Append, whose reply (the index) a read-back
	// cannot recover.
	appends bool
}

// values returns the values of t for the lookups in ls (nil t: none), per
// lookup of the descriptor.
func (s *Store[T, K]) values(t *T, ls []*runtime.Lookup[T]) [][][]byte {
	out := make([][][]byte, len(s.d.Lookups))
	if t == nil {
		return out
	}
	for i, l := range s.d.Lookups {
		if ls == nil || slices.Contains(ls, l) {
			out[i] = runtime.SortKeys(l.Keys(t))
		}
	}
	return out
}

// minus returns the values of a that b lacks (both sorted).
func minus(a, b [][]byte) [][]byte {
	var out [][]byte
	for _, v := range a {
		if _, ok := slices.BinarySearchFunc(b, v, bytes.Compare); !ok {
			out = append(out, v)
		}
	}
	return out
}

func (s *Store[T, K]) lookupName(i int) string { return s.coll + "." + s.d.Lookups[i].Name }

// addOp adds the iadd of value v of lookup i to p (a claim check first
// for a unique lookup).
func (s *Store[T, K]) addOp(p *prog, w *write[K], i int, v []byte) {
	lk := s.lookupKeys(i)
	claims := "0"
	if lk.claims != "" {
		claims = p.k(lk.claims)
		p.check(fmt.Sprintf("%d:%s", i, v), "claim", claims, string(v), string(w.bk))
	}
	p.change("iadd", p.k(lk.z), p.k(lk.meta), claims, member(v, w.bk), string(v), string(w.bk), w.inc, pad(w.seq))
}

// remOp adds the irem of value v of lookup i to p: seq is "<n>" (entries
// written before n) or "=<n>" (exactly at n).
func (s *Store[T, K]) remOp(p *prog, bk []byte, inc string, i int, v []byte, seq string) {
	lk := s.lookupKeys(i)
	claims := "0"
	if lk.claims != "" {
		claims = p.k(lk.claims)
	}
	p.change("irem", p.k(lk.z), p.k(lk.meta), claims, member(v, bk), string(v), string(bk), inc, seq)
}

// checkValues fails with runtime.ErrInvalidValue if a new lookup value has
// a string that is not valid UTF-8 (which every store refuses).
// It also fails with runtime.ErrTooLarge when an index member (the value
// and the block key) or the block's hash name is over Redis's argument
// limit (one byte less for members, which reads send as range bounds).
func (s *Store[T, K]) checkValues(w *write[K]) error {
	if err := s.nameTooLarge(w.op, w.id); err != nil {
		return err
	}
	for i := range s.d.Lookups {
		for _, v := range w.after[i] {
			if err := runtime.CheckKey(w.op, s.d.Aggregate, w.id, "lookup "+s.lookupName(i), v); err != nil {
				return err
			}
			if n := len(v) + len(w.bk); n > maxBulk-1 {
				return runtime.TooLarge(w.op, s.d.Aggregate, w.id, fmt.Sprintf("lookup %s: an index member of %d bytes", s.lookupName(i), n), fmt.Sprintf("Redis's %d-byte limit of an index member (proto-max-bulk-len, less the byte that starts a range bound)", maxBulk-1))
			}
		}
	}
	return nil
}

// commit runs write w: one script run on a single node, the protocol on
// a cluster. It returns the block script's result (an append's index). A
// failed check comes back as *failure, except a taken unique value, which
// is a runtime.ErrDuplicate.
func (s *Store[T, K]) commit(ctx context.Context, w *write[K]) (int64, error) {
	if w.before == nil {
		w.before = make([][][]byte, len(s.d.Lookups))
	}
	if w.after == nil {
		w.after = make([][][]byte, len(s.d.Lookups))
	}
	if err := s.checkValues(w); err != nil {
		return 0, err
	}
	if s.cluster {
		return s.commitCluster(ctx, w)
	}
	p := &prog{}
	for i := range s.d.Lookups {
		for _, v := range minus(w.after[i], w.before[i]) {
			s.addOp(p, w, i, v)
		}
	}
	p.merge(w.block)
	switch w.list {
	case 1:
		p.change("zadd", p.k(s.listKey()), string(w.bk))
	case -1:
		p.change("zrem", p.k(s.listKey()), string(w.bk))
	}
	if w.counter != "" {
		p.change("raise", p.k(w.counter), fmt.Sprint(w.raiseTo))
	}
	for i := range s.d.Lookups {
		for _, v := range minus(w.before[i], w.after[i]) {
			s.remOp(p, w.bk, w.inc, i, v, pad(w.seq))
		}
	}
	n, _, err := p.runAdds(ctx, s.w)
	if f, ok := failed(err, "taken"); ok {
		return 0, s.taken(w, f)
	}
	if u, ok := isUnreplicated(err); ok {
		return n, s.unacked(w, runtime.ErrUnknownOutcome, "the write", u)
	}
	if err != nil && !isFailure(err) {
		return 0, s.unclear(ctx, w, err, "(outcome unknown: the write may have been applied)")
	}
	return n, err
}

// unclear is the error of a block run that failed without a reply of the
// script's checks: runtime.ErrUnavailable when the cluster refused it
// before any change, runtime.ErrUnknownOutcome (with detail) when it may
// have been applied, nil when reading the block back shows it was.
func (s *Store[T, K]) unclear(ctx context.Context, w *write[K], err error, detail string) error {
	if unavailable(err) {
		return runtime.FailAt(w.op, s.d.Aggregate, w.id, "(refused before any change: the slot is moving or has no master; retry later)", runtime.ErrUnavailable, err)
	}
	if se, ok := err.(*scriptError); ok && se.wrote {
		return runtime.FailAt(w.op, s.d.Aggregate, w.id, "(outcome unknown: the script run failed after a first change)", runtime.ErrUnknownOutcome, err)
	}
	if s.applied(ctx, w) {
		if s.waits() {
			// Done on the master, but no WAIT confirmed it (wait.go).
			return s.failAt(w.op, w.id, lostWait, runtime.ErrUnknownOutcome)
		}
		return nil // the reply was lost, the write is done
	}
	return runtime.FailAt(w.op, s.d.Aggregate, w.id, detail, runtime.ErrUnknownOutcome, err)
}

// isLostWait reports whether err is unclear's error of a write applied on
// the master whose replication no WAIT confirmed.
func isLostWait(err error) bool {
	var re *runtime.Error
	return errors.As(err, &re) && re.Detail == lostWait
}

func isFailure(err error) bool {
	var f *failure
	return errors.As(err, &f)
}

// applied reads block w back after a lost reply (a network error or a
// context cancelled while the script was in flight) and reports whether
// the write is known to be done: the block carries the write's sequence,
// or, for a Delete, is gone. An append's reply (the index) cannot be
// recovered, so an append is never reported done. The read runs on a
// context that ends runtime.CleanupTimeout after ctx (runtime.Detach).
func (s *Store[T, K]) applied(ctx context.Context, w *write[K]) bool {
	if w.appends {
		return false
	}
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	seq, err := s.c.HGet(ctx, s.blockKey(w.bk), seqField).Result()
	if w.list == -1 {
		// A Delete that read the block (w.inc) knew it existed.
		return w.inc != "" && isNil(err)
	}
	return err == nil && seq == pad(w.seq)
}

// unacked is the error of write w when a run of it was applied on its
// node but not acknowledged by enough replicas (Options.WaitReplicas):
// kind runtime.ErrUnknownOutcome when the block was written, else
// runtime.ErrUnavailable.
func (s *Store[T, K]) unacked(w *write[K], kind error, what string, u *unreplicated) error {
	return runtime.FailAt(w.op, s.d.Aggregate, w.id, "("+what+": "+u.Error()+")", kind, nil)
}

func isShort(err error) bool { _, ok := isUnreplicated(err); return ok }

// taken is the error of a unique value held by another block (the note
// of the claim check is "<lookup index>:<value>").
func (s *Store[T, K]) taken(w *write[K], f *failure) error {
	idx, v, _ := strings.Cut(f.note, ":")
	name := idx
	if i, err := strconv.Atoi(idx); err == nil && i < len(s.d.Lookups) {
		name = s.lookupName(i)
	}
	return runtime.FailAt(w.op, s.d.Aggregate, w.id, fmt.Sprintf("%s %s (held by %s)", name, formatParts([]byte(v)), formatParts([]byte(f.detail))), runtime.ErrDuplicate, nil)
}

// added is an index entry a write created (prev "") or took over from
// another incarnation (prev: the meta it replaced), for its undo.
type added struct {
	i    int
	v    []byte
	prev string
}

// record notes what the iadd of value v of lookup i did.
func record(mine []added, i int, v []byte, r addResult) []added {
	switch {
	case r.created:
		return append(mine, added{i: i, v: v})
	case r.prev != "":
		return append(mine, added{i: i, v: v, prev: r.prev})
	}
	return mine
}

func (s *Store[T, K]) commitCluster(ctx context.Context, w *write[K]) (int64, error) {
	var mine []added
	// undo returns the first error (what it could not undo, within
	// runtime.CleanupTimeout of the caller's deadline, stays for Repair).
	undo := func() error {
		ctx, cancel := runtime.Detach(ctx)
		defer cancel()
		var first error
		for i := range s.d.Lookups {
			p := &prog{}
			lk := s.lookupKeys(i)
			for _, a := range mine {
				switch {
				case a.i != i:
				case a.prev == "":
					s.remOp(p, w.bk, w.inc, i, a.v, "="+pad(w.seq))
				default:
					// Give the entry back to the incarnation it was of.
					p.change("hswap", p.k(lk.meta), member(a.v, w.bk), w.inc+" "+pad(w.seq), a.prev)
				}
			}
			if _, err := p.run(ctx, s.c); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	// 1. claims, then the other new entries.
	for i, l := range s.d.Lookups {
		if !l.Unique {
			continue
		}
		for _, v := range minus(w.after[i], w.before[i]) {
			r, err := s.claim(ctx, w, i, v)
			mine = record(mine, i, v, r)
			if err != nil {
				undo()
				return 0, err
			}
		}
	}
	for i, l := range s.d.Lookups {
		if l.Unique {
			continue
		}
		vs := minus(w.after[i], w.before[i])
		if len(vs) == 0 {
			continue
		}
		p := &prog{}
		for _, v := range vs {
			s.addOp(p, w, i, v)
		}
		_, created, err := p.runAdds(ctx, s.w)
		for j, r := range created {
			mine = record(mine, i, vs[j], r)
		}
		if u, ok := isUnreplicated(err); ok {
			undo()
			return 0, s.unacked(w, runtime.ErrUnavailable, "lookup entries not replicated, block not written, entries undone", u)
		}
		if err != nil {
			undo()
			return 0, s.fail(w.op, w.id, nil, err)
		}
	}
	// 2. the block. A context done now means the block script is never
	// sent: the write definitely failed, so its entries go.
	if err := ctx.Err(); err != nil {
		return 0, runtime.NotSent(w.op, s.d.Aggregate, w.id, err, undo())
	}
	n, err := w.block.run(ctx, s.w)
	var short error
	if u, ok := isUnreplicated(err); ok {
		// Written on the master: the steps below follow it there.
		short, err = s.unacked(w, runtime.ErrUnknownOutcome, "the block write", u), nil
	}
	if err != nil {
		var f *failure
		if errors.As(err, &f) {
			undo()
			return 0, err
		}
		if unavailable(err) {
			// Refused before any change: the write did not happen.
			undo()
		}
		// On an unknown outcome the entries stay for reads to verify.
		if err := s.unclear(ctx, w, err, "(outcome unknown: the block write may have been applied; its lookup entries are kept for reads to verify)"); err != nil {
			if !isLostWait(err) {
				return 0, err
			}
			// Applied on the master: the steps below follow it there.
			short = err
		}
		n = 0 // the reply was lost, the write is done
	}
	// 3. the listing and the counter; 4. the old entries. The write is
	// done: what follows is best effort (reads verify, Repair fixes), on a
	// context that ends runtime.CleanupTimeout after the caller's.
	caller := ctx
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch w.list {
	case 1:
		note(s.c.ZAdd(ctx, s.listKey(), redisZ(w.bk)).Err())
	case -1:
		note(s.c.ZRem(ctx, s.listKey(), string(w.bk)).Err())
		// A block created again meanwhile keeps its place in the listing.
		n, err := s.c.Exists(ctx, s.blockKey(w.bk)).Result()
		note(err)
		if err == nil && n == 1 {
			note(s.c.ZAdd(ctx, s.listKey(), redisZ(w.bk)).Err())
		}
	}
	if w.counter != "" {
		p := &prog{}
		p.change("raise", p.k(w.counter), fmt.Sprint(w.raiseTo))
		_, err := p.run(ctx, s.c)
		note(err)
	}
	for i := range s.d.Lookups {
		p := &prog{}
		for _, v := range minus(w.before[i], w.after[i]) {
			s.remOp(p, w.bk, w.inc, i, v, pad(w.seq))
		}
		_, err := p.run(ctx, s.c)
		note(err)
	}
	if short != nil {
		return n, short
	}
	// Cut short by the caller's deadline: say so (the listing, the
	// counter, the old entries are left to Repair).
	return n, runtime.LeftToRepair(caller, w.op, s.d.Aggregate, w.id, errs...)
}

// claim claims unique value v of lookup i for block w.bk (cluster): a
// check-and-set of the claims hash. A claim held by another block is
// taken over only when that block does not hold the value and the claim
// is older than StaleAfter. It reports what it did to the entry.
func (s *Store[T, K]) claim(ctx context.Context, w *write[K], i int, v []byte) (addResult, error) {
	lk := s.lookupKeys(i)
	for range maxAttempts {
		p := &prog{}
		s.addOp(p, w, i, v)
		_, created, err := p.runAdds(ctx, s.w)
		if err == nil || isShort(err) {
			var r addResult
			if len(created) == 1 {
				r = created[0]
			}
			if u, ok := isUnreplicated(err); ok {
				// Not acknowledged: the block write must not follow.
				return r, s.unacked(w, runtime.ErrUnavailable, "claim not replicated, block not written, claim undone", u)
			}
			return r, nil
		}
		f, ok := failed(err, "taken")
		if !ok {
			return addResult{}, s.fail(w.op, w.id, nil, err)
		}
		holder := []byte(f.detail)
		meta, stale, err := s.staleClaim(ctx, i, v, holder)
		if err != nil {
			return addResult{}, s.fail(w.op, w.id, nil, err)
		}
		if !stale {
			return addResult{}, s.taken(w, f)
		}
		// Take the stale claim over, on condition that it is unchanged.
		q := &prog{}
		old := member(v, holder)
		q.check("", "heq", q.k(lk.claims), string(v), string(holder))
		q.check("", "heq", q.k(lk.meta), old, meta)
		q.change("zrem", q.k(lk.z), old)
		q.change("hdel", q.k(lk.meta), old)
		q.change("hdel", q.k(lk.claims), string(v))
		if _, err := q.run(ctx, s.c); err != nil {
			if _, changed := failed(err, "changed"); !changed {
				return addResult{}, s.fail(w.op, w.id, nil, err)
			}
		}
	}
	return addResult{}, s.contended(w.op, w.id)
}

// staleClaim reports whether the claim of holder on value v of lookup i is
// stale: its block does not hold v and its entry is older than StaleAfter.
// It returns the entry's meta as read.
func (s *Store[T, K]) staleClaim(ctx context.Context, i int, v, holder []byte) (string, bool, error) {
	lk := s.lookupKeys(i)
	meta, err := s.c.HGet(ctx, lk.meta, member(v, holder)).Result()
	if err != nil && !isNil(err) {
		return "", false, err
	}
	r := runtime.NewKeyReader(holder)
	id, kerr := s.d.Keys.Read(r)
	if kerr == nil && r.Done() {
		h, err := s.c.HGetAll(ctx, s.blockKey(holder)).Result()
		if err != nil {
			return "", false, err
		}
		if len(h) > 0 {
			t, err := s.decode(id, h)
			if err == nil && holds(s.d.Lookups[i].Keys(t), v) {
				return meta, false, nil
			}
		}
	}
	_, seq, _ := strings.Cut(meta, " ")
	if meta != "" && time.Now().UnixNano()-parseSeq(seq) < StaleAfter.Nanoseconds() {
		return meta, false, nil
	}
	return meta, true, nil
}

// holds reports whether the values of an aggregate hold v.
func holds(values [][]byte, v []byte) bool {
	for _, x := range values {
		if bytes.Equal(x, v) {
			return true
		}
	}
	return false
}
