package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// The lookups. An index table is a sorted set of members value + block
// key (lexicographic, score 0), with a meta hash recording, per member,
// the incarnation of the block, the sequence of the write that added it
// (and, for the engine, the attempt's mark and the block), and for a
// unique lookup a claims hash value -> block key (keys.go, primitives.go).
//
// On a single node a write is one script run: the claims are checked, the
// block is checked and written, the entries of its new values are added
// and those of its old values removed, the listing and the counter
// changed, all or nothing.
//
// On a cluster the index tables, the listing and the counters are on
// other hash slots than the block, so a write runs the lookup protocol of
// the index engine (runtime/index, RELIABILITY.md) over the primitives of
// primitives.go, the block script as its block write; then it adds or
// removes the block in the listing and raises the counter (best effort:
// Repair restores them).

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
	// appends is set for an Append, or an Add, whose reply (the index,
	// the new value) a read-back cannot recover.
	appends bool
	// insert is set for a write that creates the block.
	insert bool
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
	p.change("iadd", p.k(lk.z), p.k(lk.meta), claims, string(index.IndexKey(false, v, w.bk)), string(v), string(w.bk), w.inc, pad(w.seq))
}

// remOp adds the irem of value v of lookup i to p: seq is "<n>" (entries
// written before n) or "=<n>" (exactly at n).
func (s *Store[T, K]) remOp(p *prog, bk []byte, inc string, i int, v []byte, seq string) {
	lk := s.lookupKeys(i)
	claims := "0"
	if lk.claims != "" {
		claims = p.k(lk.claims)
	}
	p.change("irem", p.k(lk.z), p.k(lk.meta), claims, string(index.IndexKey(false, v, bk)), string(v), string(bk), inc, seq)
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
	if err := s.ready(w); err != nil {
		return 0, err
	}
	if s.cluster {
		return s.commitCluster(ctx, w)
	}
	n, err := s.nodeProg(ctx, w).run(ctx, s.w)
	return s.settle(ctx, w, n, err)
}

// ready completes write w's values (none where nil) and checks them
// (checkValues).
func (s *Store[T, K]) ready(w *write[K]) error {
	if w.before == nil {
		w.before = make([][][]byte, len(s.d.Lookups))
	}
	if w.after == nil {
		w.after = make([][][]byte, len(s.d.Lookups))
	}
	return s.checkValues(w)
}

// nodeProg is the single run of write w on a single node: the claims and
// new entries, the block, the listing and the counter, the old entries.
// A fenced write (runtime.WriteFence of ctx) checks first that the
// collection's fence is the one it expects.
func (s *Store[T, K]) nodeProg(ctx context.Context, w *write[K]) *prog {
	p := &prog{}
	if f, ok := runtime.WriteFence(ctx); ok {
		want := strconv.FormatInt(f, 10)
		p.check(want, "fence", p.k(FenceKey(s.coll)), want)
	}
	for i := range s.d.Lookups {
		for _, v := range index.Minus(w.after[i], w.before[i]) {
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
		for _, v := range index.Minus(w.before[i], w.after[i]) {
			s.remOp(p, w.bk, w.inc, i, v, pad(w.seq))
		}
	}
	return p
}

// settle is the outcome of the run of write w on a single node, which
// returned n and err.
func (s *Store[T, K]) settle(ctx context.Context, w *write[K], n int64, err error) (int64, error) {
	if f, ok := failed(err, "taken"); ok {
		// A claim whose block expired natively is free: removed, and
		// the write runs again.
		if freed, ferr := s.freeClaim(ctx, f); ferr != nil || !freed {
			return 0, s.taken(w, f)
		}
		n, err = s.nodeProg(ctx, w).run(ctx, s.w)
		if f, ok := failed(err, "taken"); ok {
			return 0, s.taken(w, f)
		}
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

// taken is the error of a unique value held by another block (the note
// of the claim check is "<lookup index>:<value>"), worded as the engine's.
func (s *Store[T, K]) taken(w *write[K], f *failure) error {
	idx, v, _ := strings.Cut(f.note, ":")
	name := idx
	if i, err := strconv.Atoi(idx); err == nil && i < len(s.d.Lookups) {
		name = s.lookupName(i)
	}
	return runtime.LookupTaken(w.op, s.d.Aggregate, w.id, name, []byte(v), nil)
}

// indexKeys returns the index keys of block bk holding values (per lookup,
// nil for a lookup the write does not change).
func (s *Store[T, K]) indexKeys(bk []byte, values [][][]byte) index.Keys {
	out := make(index.Keys, len(s.d.Lookups))
	for i, l := range s.d.Lookups {
		out[i] = index.LookupKeys(l.Unique, values[i], bk)
	}
	return out
}

// commitCluster runs write w through the engine's protocol (claims and new
// entries, the block script, the old entries), then changes the listing
// and the counter.
func (s *Store[T, K]) commitCluster(ctx context.Context, w *write[K]) (int64, error) {
	if w.list == -1 {
		return s.deleteCluster(ctx, w)
	}
	var n int64
	// short: the block run was applied on the master but no WAIT confirmed
	// it (wait.go), or failed after a first change; lost: its reply was
	// lost (the engine reads the block back).
	var short error
	lost := false
	write := func(ctx context.Context, _ index.Stamp) (bool, error) {
		r, err := w.block.run(ctx, s.w)
		if u, ok := isUnreplicated(err); ok {
			// Written on the master: the steps after it follow it there.
			short, err = s.unacked(w, runtime.ErrUnknownOutcome, "the block write", u), nil
		}
		switch {
		case err == nil:
			n = r
			return true, nil
		case isFailure(err):
			if _, changed := failed(err, "changed"); changed {
				return false, nil
			}
			return false, err
		case unavailable(err):
			return false, runtime.FailAt(w.op, s.d.Aggregate, w.id, "(refused before any change: the slot is moving or has no master; retry later)", runtime.ErrUnavailable, err)
		}
		if se, ok := err.(*scriptError); ok && se.wrote {
			short = runtime.FailAt(w.op, s.d.Aggregate, w.id, "(outcome unknown: the script run failed after a first change)", runtime.ErrUnknownOutcome, err)
		}
		lost = true
		return false, err
	}
	done, err := s.eng.Commit(ctx, w.op, w.id, w.bk, decInc(w.inc), s.indexKeys(w.bk, w.before), s.indexKeys(w.bk, w.after), w.seq, w.insert, write)
	var f *failure
	if errors.As(err, &f) {
		return 0, f
	}
	if !done {
		if err == nil {
			return 0, &failure{reason: "changed"}
		}
		return 0, err
	}
	switch {
	case lost && w.appends:
		// The block carries the write, but the index it wrote is lost.
		return 0, runtime.FailAt(w.op, s.d.Aggregate, w.id, "(outcome unknown: the write may have been applied)", runtime.ErrUnknownOutcome, nil)
	case lost && short == nil && s.waits():
		// Done on the master, but no WAIT confirmed it (wait.go).
		short = s.failAt(w.op, w.id, lostWait, runtime.ErrUnknownOutcome)
	}
	errs := s.listed(ctx, w)
	if short != nil {
		return n, short
	}
	if err != nil {
		return n, err // the old entries were left to Repair
	}
	return n, runtime.LeftToRepair(ctx, w.op, s.d.Aggregate, w.id, errs...)
}

// listed adds a written block to the listing (or removes a deleted one)
// and raises the counter: best effort (Repair restores them), on a
// context that ends runtime.CleanupTimeout after ctx. It returns what
// failed.
func (s *Store[T, K]) listed(ctx context.Context, w *write[K]) []error {
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
	return errs
}

// deleteCluster runs Delete w on a cluster: the block script, then the
// listing and the block's entries (the engine's Deleted, best effort).
func (s *Store[T, K]) deleteCluster(ctx context.Context, w *write[K]) (int64, error) {
	_, err := w.block.run(ctx, s.w)
	var short error
	if u, ok := isUnreplicated(err); ok {
		short, err = s.unacked(w, runtime.ErrUnknownOutcome, "the block write", u), nil
	}
	if err != nil {
		if isFailure(err) {
			return 0, err
		}
		if err := s.unclear(ctx, w, err, "(outcome unknown: the block delete may have been applied; its lookup entries are kept for reads to verify)"); err != nil {
			if !isLostWait(err) {
				return 0, err
			}
			short = err
		}
	}
	errs := s.listed(ctx, w)
	if err := s.eng.Deleted(ctx, w.op, w.id, w.bk, decInc(w.inc), s.indexKeys(w.bk, w.before)); err != nil {
		return 0, err
	}
	if short != nil {
		return 0, short
	}
	return 0, runtime.LeftToRepair(ctx, w.op, s.d.Aggregate, w.id, errs...)
}
