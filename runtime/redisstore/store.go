package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
)

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

func redisZ(bk []byte) redis.Z { return redis.Z{Score: 0, Member: string(bk)} }

// lookupsOf lists the lookups that writes of the fields keys may change.
func (s *Store[T, K]) lookupsOf(keys ...string) []*runtime.Lookup[T] {
	return s.d.LookupsOf(keys...)
}

// checkFailed maps a failed check of a block script to the contract's
// error: missing block, existing block, version conflict, missing element.
func (s *Store[T, K]) checkFailed(op string, id K, err error) error {
	var f *failure
	if !errors.As(err, &f) {
		return s.errOf(op, id, err)
	}
	switch f.reason {
	case "missing":
		return s.fail(op, id, runtime.ErrNotFound, nil)
	case "exists":
		return s.fail(op, id, runtime.ErrDuplicate, nil)
	case "conflict":
		// The check's note is versionCheck's: "absent" or "expected N".
		want, _ := strconv.ParseInt(strings.TrimPrefix(f.note, "expected "), 10, 64)
		stored, _ := strconv.ParseInt(f.detail, 10, 64)
		return runtime.VersionConflict(op, s.d.Aggregate, id, f.detail != "none", stored, want)
	case "noelem":
		return s.failAt(op, id, f.note, runtime.ErrNotFound)
	case "toolarge":
		return s.fail(op, id, runtime.ErrTooLarge, f)
	case "fence":
		stored, _ := strconv.ParseInt(f.detail, 10, 64)
		want, _ := strconv.ParseInt(f.note, 10, 64)
		return runtime.FenceMoved(op, s.d.Aggregate, id, stored, want)
	case "layout":
		return runtime.LayoutMismatch(op, s.d.Aggregate, id, f.detail, "otherwise", "as the write has it")
	}
	return s.fail(op, id, nil, err)
}

// Get reads block id with one HGETALL.
func (s *Store[T, K]) Get(ctx context.Context, id K) (*T, error) {
	if s.nameTooLarge("Get", id) != nil {
		return nil, s.failAt("Get", nil, "(a block key over Redis's argument limit)", runtime.ErrNotFound)
	}
	h, err := s.c.HGetAll(ctx, s.BlockKey(id)).Result()
	if err != nil {
		return nil, s.fail("Get", id, nil, err)
	}
	if len(h) == 0 {
		return nil, s.fail("Get", id, runtime.ErrNotFound, nil)
	}
	t, err := s.decode(id, h)
	if err != nil {
		return nil, runtime.Unreadable("Get", s.d.Aggregate, id, err)
	}
	return t, nil
}

// getMany reads the given blocks with one pipeline of HGETALLs (go-redis
// sends a cluster pipeline to each node with the commands of its slots);
// missing blocks are nil.
func (s *Store[T, K]) getMany(ctx context.Context, op string, ids []K) ([]*T, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	err := pipelines(ctx, s.c, len(ids), func(p redis.Pipeliner, i int) {
		cmds[i] = p.HGetAll(ctx, s.BlockKey(ids[i]))
	}, nil)
	if err != nil {
		return nil, s.fail(op, nil, nil, err)
	}
	out := make([]*T, len(ids))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		t, err := s.decode(ids[i], h)
		if err != nil {
			// The blocks before it, for a listing to return.
			clear(out[i:])
			return out, &badBlock{i: i, err: runtime.Unreadable(op, s.d.Aggregate, ids[i], err)}
		}
		out[i] = t
	}
	return out, nil
}

// badBlock is the error of getMany at the unreadable block ids[i].
type badBlock struct {
	i   int
	err error
}

func (b *badBlock) Error() string { return b.err.Error() }
func (b *badBlock) Unwrap() error { return b.err }

// unwrapBad returns the error of an unreadable block itself.
func unwrapBad(err error) error {
	if b, ok := err.(*badBlock); ok {
		return b.err
	}
	return err
}

// GetMany reads the blocks with the given keys in one pipeline.
func (s *Store[T, K]) GetMany(ctx context.Context, ids []K) (map[K]*T, error) {
	uniq := make([]K, 0, len(ids))
	seen := make(map[K]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	ts, err := s.getMany(ctx, "GetMany", uniq)
	if err != nil {
		return nil, unwrapBad(err)
	}
	out := make(map[K]*T, len(uniq))
	for i, t := range ts {
		if t != nil {
			out[uniq[i]] = t
		}
	}
	return out, nil
}

// Create writes a new block, allocating a zero counted id first.
func (s *Store[T, K]) Create(ctx context.Context, t *T) error {
	const op = "Create"
	c, err := s.prepareCreate(op, t)
	if err != nil {
		return err
	}
	id := c.id
	if !c.alloc {
		if _, err := s.commit(ctx, s.createWrite(op, c, id)); err != nil {
			return s.checkFailed(op, id, err)
		}
	} else if id, err = runtime.AllocateKey(ctx, runtime.Allocation[K]{
		Op: op, Agg: s.d.Aggregate, Counter: c.counter,
		Next:   func(ctx context.Context) (int64, error) { return incrResult(s.c.Incr(ctx, c.counter)) },
		With:   func(n int64) K { return s.d.Counter.With(c.id, n) },
		Number: func(id K) int64 { _, n := s.d.Counter.Split(id); return n },
		Try: func(ctx context.Context, id K) (bool, error) {
			_, err := s.commit(ctx, s.createWrite(op, c, id))
			if _, dup := failed(err, "exists"); dup {
				return true, nil // a block with an explicit number: the next
			}
			if err != nil {
				return false, s.checkFailed(op, id, err)
			}
			return false, nil
		},
	}); err != nil {
		return err
	}
	*s.d.ID(t) = id
	s.d.SetVersion(t, 1)
	return nil
}

// creation is a Create checked and encoded, before its block key is
// allocated.
type creation[T, K any] struct {
	t      *T
	id     K
	fields []string
	// counter is the counter of a counted key: alloc when the key is to
	// be allocated, else raised to n.
	counter string
	n       int64
	alloc   bool
}

// prepareCreate checks and encodes the Create of t.
func (s *Store[T, K]) prepareCreate(op string, t *T) (*creation[T, K], error) {
	c := &creation[T, K]{t: t, id: *s.d.ID(t)}
	if err := s.nameTooLarge(op, c.id); err != nil {
		return nil, err
	}
	if s.d.Counter != nil {
		var scope []byte
		scope, c.n = s.d.Counter.Split(c.id)
		c.counter = s.counterKey(scope)
		c.alloc = c.n == 0
	}
	// Everything that may be too large is checked before the counter
	// moves (numbers encode in a fixed width: 1 stands for the one to be
	// allocated), so that a refused write takes no number.
	var err error
	if c.fields, err = s.fields(op, c.id, t, 1); err != nil {
		return nil, err
	}
	if c.alloc && len(s.d.Lookups) > 0 {
		first := s.d.Counter.With(c.id, 1)
		if err := s.checkValues(&write[K]{op: op, id: first, bk: s.d.Keys.Bytes(first), after: s.values(t, nil)}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// allocated is the block key of c with the number the counter's INCR
// returned (a batch's allocation; Create's is runtime.AllocateKey).
func (s *Store[T, K]) allocated(op string, c *creation[T, K], incr *redis.IntCmd) (K, error) {
	next, err := incrResult(incr)
	if err != nil {
		return c.id, runtime.CounterErr(op, s.d.Aggregate, c.counter, err)
	}
	id := s.d.Counter.With(c.id, next)
	if _, back := s.d.Counter.Split(id); back != next {
		return c.id, s.fail(op, nil, nil, fmt.Errorf("counter %s: %d does not fit the block key", c.counter, next))
	}
	return id, nil
}

// incrResult is the number an INCR of a counter returned; Redis refuses
// to go past math.MaxInt64 with an "overflow" error: runtime.ErrOverflow.
func incrResult(incr *redis.IntCmd) (int64, error) {
	n, err := incr.Result()
	if err != nil && strings.Contains(err.Error(), "overflow") {
		err = fmt.Errorf("%w: %w", runtime.ErrOverflow, err)
	}
	return n, err
}

// createWrite is the write of creation c as block id.
func (s *Store[T, K]) createWrite(op string, c *creation[T, K], id K) *write[K] {
	bk := s.d.Keys.Bytes(id)
	w := &write[K]{op: op, id: id, bk: bk, seq: nextSeq(0), list: 1, insert: true}
	if len(s.d.Lookups) > 0 {
		w.inc = newInc()
		w.after = s.values(c.t, nil)
	}
	if c.counter != "" && !c.alloc && c.n > 0 {
		w.counter, w.raiseTo = c.counter, c.n
	}
	w.block = s.blockProg(bk, w, c.fields, "absent")
	s.expire(w.block, bk, s.d.ExpiresAt(c.t))
	return w
}

// blockProg is the script of a whole-block write: the check (absent: the
// block must not exist; or the stored _seq), then the block replaced by
// fields.
func (s *Store[T, K]) blockProg(bk []byte, w *write[K], fields []string, cond string) *prog {
	p := &prog{}
	b := p.k(s.blockKey(bk))
	p.once = b
	if cond == "absent" {
		p.check("absent", "absent", b)
	} else {
		p.check("", "seq", b, cond)
	}
	replace(p, b, fields, w)
	return p
}

// replace adds the changes that make hash b hold exactly fields, the
// incarnation (if any) and the write sequence of w: the new fields are
// written first and the stale ones removed after (prune), so that the
// hash is never empty midway (a slot migrating away refuses a key that
// is gone, inside a script too: a DEL and then HSETs lost the block).
func replace[K any](p *prog, b string, fields []string, w *write[K]) {
	for i := 0; i < len(fields); i += 2 {
		p.change("hset", b, fields[i], fields[i+1])
	}
	if w.inc != "" {
		p.change("hset", b, incField, w.inc)
	}
	p.change("hset", b, seqField, pad(w.seq))
	p.change("prune", b)
}

// Put replaces block t whole, checking the version it holds.
func (s *Store[T, K]) Put(ctx context.Context, t *T) error {
	const op = "Put"
	id := *s.d.ID(t)
	if err := s.nameTooLarge(op, id); err != nil {
		return err
	}
	want := s.d.VersionOf(t)
	if alloc, err := s.putAllocates(op, t); alloc || err != nil {
		if err != nil {
			return err
		}
		return s.Create(ctx, t)
	}
	fields, err := s.fields(op, id, t, want+1)
	if err != nil {
		return err
	}
	for range runtime.MaxAttempts {
		// The created timestamp of a block that exists stays: read
		// here, and checked unchanged by the run.
		created, err := s.keepCreated(ctx, op, id, t)
		if err != nil {
			return err
		}
		var st *state[T]
		if len(s.d.Lookups) > 0 {
			read, err := s.read(ctx, op, id)
			if err != nil {
				return err
			}
			st = &read
		}
		w, err := s.putWrite(op, t, want, fields, created, st)
		if err != nil {
			return err
		}
		if _, err := s.commit(ctx, w); err != nil {
			if _, changed := failed(err, "changed"); changed {
				continue
			}
			return s.checkFailed(op, id, err)
		}
		s.d.SetVersion(t, want+1)
		return nil
	}
	return s.contended(op, id)
}

// putAllocates reports whether the Put of t allocates its key (a zero
// counted number): the block is new, the Put is a Create, refused with
// runtime.ErrConflict when it expects a version.
func (s *Store[T, K]) putAllocates(op string, t *T) (bool, error) {
	if s.d.Counter == nil {
		return false, nil
	}
	id := *s.d.ID(t)
	if _, n := s.d.Counter.Split(id); n != 0 {
		return false, nil
	}
	if want := s.d.VersionOf(t); want != 0 && s.d.Version != nil {
		return true, runtime.VersionConflict(op, s.d.Aggregate, id, false, 0, want)
	}
	return true, nil
}

// putWrite is the write of a Put of t expecting version want, whose
// fields are encoded: created is the created timestamp the block holds
// (keepCreated), st its state (nil for an aggregate without lookups).
func (s *Store[T, K]) putWrite(op string, t *T, want int64, fields []string, created *string, st *state[T]) (*write[K], error) {
	return s.putWriteAt(op, t, want, fields, created, st, nil)
}

// putWriteAt is putWrite with the block's new stamp at (nil: drawn here,
// as putWrite draws it; an aggregate without lookups has no incarnation).
func (s *Store[T, K]) putWriteAt(op string, t *T, want int64, fields []string, created *string, st *state[T], at *index.Stamp) (*write[K], error) {
	id := *s.d.ID(t)
	bk := s.d.Keys.Bytes(id)
	if created != nil {
		var err error
		if fields, err = s.fields(op, id, t, want+1); err != nil {
			return nil, err
		}
	}
	w := &write[K]{op: op, id: id, bk: bk, list: 1}
	cond := ""
	if st != nil {
		w.inc, w.seq, cond = st.inc, nextSeq(parseSeq(st.seq)), st.seq
		if !st.found {
			w.inc, w.insert = newInc(), true
		}
		w.before, w.after = s.values(st.t, nil), s.values(t, nil)
	} else {
		w.seq = nextSeq(0)
	}
	if at != nil {
		w.seq = at.Seq
		if st != nil {
			w.inc = encInc(at.Inc)
		}
	}
	if st != nil {
		w.block = s.blockProg(bk, w, fields, cond)
	} else {
		w.block = s.replaceProg(bk, w, fields)
	}
	s.expire(w.block, bk, s.d.ExpiresAt(t))
	if s.d.Version != nil {
		s.versionCheck(w.block, bk, want)
	}
	if created != nil {
		w.block.check("", "heq", w.block.k(s.blockKey(bk)), s.d.Created.Key, *created)
	}
	if s.d.Counter != nil {
		scope, n := s.d.Counter.Split(id)
		if n > 0 {
			w.counter, w.raiseTo = s.counterKey(scope), n
		}
	}
	return w, nil
}

// keepCreated reads the created timestamp block id holds, if the
// aggregate has one, and sets t's to it: a Put keeps it. It returns the
// stored value ("" when there is none: no block, or one written before
// the model had it), nil for an aggregate without created.
func (s *Store[T, K]) keepCreated(ctx context.Context, op string, id K, t *T) (*string, error) {
	if s.d.Created == nil {
		return nil, nil
	}
	return s.createdOf(op, id, t, s.c.HGet(ctx, s.BlockKey(id), s.d.Created.Key))
}

// createdOf is keepCreated with the reply of its HGET.
func (s *Store[T, K]) createdOf(op string, id K, t *T, hget *redis.StringCmd) (*string, error) {
	v, err := hget.Result()
	if errors.Is(err, redis.Nil) {
		v = ""
	} else if err != nil {
		return nil, s.fail(op, id, nil, err)
	}
	if v != "" {
		if err := s.d.KeepCreated(op, id, t, decoder(v)); err != nil {
			return nil, err
		}
	}
	return &v, nil
}

// replaceProg is the unconditional whole-block write of an aggregate
// without lookups.
func (s *Store[T, K]) replaceProg(bk []byte, w *write[K], fields []string) *prog {
	p := &prog{}
	b := p.k(s.blockKey(bk))
	p.once = b
	replace(p, b, fields, w)
	return p
}

// versionCheck adds the check that block bk is at version want (0: that
// it does not exist).
func (s *Store[T, K]) versionCheck(p *prog, bk []byte, want int64) {
	note := "absent"
	if want != 0 {
		note = fmt.Sprintf("expected %d", want)
	}
	p.check(note, "ver", p.k(s.blockKey(bk)), s.d.Version.Key, strconv.FormatInt(want, 10))
}

// Delete removes block id, then its index entries and its listing.
func (s *Store[T, K]) Delete(ctx context.Context, id K) error {
	return s.delete(ctx, "Delete", id, nil)
}

// delete removes block id, then its index entries and its listing. With
// cond set, the block is read first and kept when cond.keep reports true
// of it (delete then fails with errKept); otherwise the run removes it
// only if it still holds the entry cond.field as read.
func (s *Store[T, K]) delete(ctx context.Context, op string, id K, cond *deleteCond[T]) error {
	if err := s.nameTooLarge(op, id); err != nil {
		return err
	}
	for range runtime.MaxAttempts {
		var st *state[T]
		if len(s.d.Lookups) > 0 || cond != nil {
			read, err := s.read(ctx, op, id)
			if err != nil {
				return err
			}
			st = &read
			if cond != nil && st.found && cond.keep(st.t) {
				return errKept
			}
		}
		w, err := s.deleteWrite(op, id, st, cond)
		if err != nil {
			return err
		}
		if _, err := s.commit(ctx, w); err != nil {
			if _, changed := failed(err, "changed"); changed {
				continue
			}
			return s.checkFailed(op, id, err)
		}
		return nil
	}
	return s.contended(op, id)
}

// deleteWrite is the write of a Delete of block id, whose state is st
// (nil when it was not read: an aggregate without lookups, no cond). With
// cond, the run removes the block only if it still holds the entry
// cond.field as read.
func (s *Store[T, K]) deleteWrite(op string, id K, st *state[T], cond *deleteCond[T]) (*write[K], error) {
	bk := s.d.Keys.Bytes(id)
	w := &write[K]{op: op, id: id, bk: bk, list: -1}
	p := &prog{}
	b := p.k(s.blockKey(bk))
	if st != nil && !st.found {
		return nil, s.fail(op, id, runtime.ErrNotFound, nil)
	}
	if cond != nil {
		p.check("", "heq", b, cond.field, st.h[cond.field])
	}
	if st != nil && len(s.d.Lookups) > 0 {
		w.inc, w.seq = st.inc, nextSeq(parseSeq(st.seq))
		w.before = s.values(st.t, nil)
		p.check("", "seq", b, st.seq)
	}
	p.check("", "exists", b)
	p.change("del", b)
	w.block = p
	return w, nil
}

// changes adds the changes of u to p (block b): the entries they name and
// the version bump; elements they replace must exist.
func (s *Store[T, K]) changes(op string, id K, p *prog, b string, u runtime.Update[T]) error {
	for _, c := range u.Changes {
		switch {
		case c.Add:
			lo, hi, _ := c.AddBounds()
			loh, lol := split64(lo)
			hih, hil := split64(hi)
			p.check(c.Field.Key, "range", b, c.Field.Key, loh, lol, hih, hil)
			dh, dl := split64(c.Delta)
			p.change("hadd", b, c.Field.Key, dh, dl, s.intWidth(c.Field))
		case c.Elem:
			if c.Index < 0 {
				return s.failAt(op, id, c.Entry(), runtime.ErrNotFound)
			}
			p.check(c.Entry(), "elem", b, c.Field.Key, strconv.Itoa(c.Index))
			v, err := s.encode(op, id, c.Entry(), c.Value)
			if err != nil {
				return err
			}
			p.change("hset", b, c.Entry(), v)
		case c.Field.Kind == runtime.KindPartition:
			tmp := new(T)
			if err := c.Field.Assign(tmp, c.Value); err != nil {
				return s.fail(op, id, nil, err)
			}
			p.change("clear", b, c.Field.Key)
			n := c.Field.Len(tmp)
			for i := range n {
				v, err := s.encode(op, id, elemField(c.Field.Key, i), c.Field.Elem(tmp, i))
				if err != nil {
					return err
				}
				p.change("hset", b, elemField(c.Field.Key, i), v)
			}
			p.change("hset", b, c.Field.Key, strconv.Itoa(n))
		default:
			v, err := s.encode(op, id, c.Field.Key, c.Value)
			if err != nil {
				return err
			}
			p.change("hset", b, c.Field.Key, v)
			if c.Field == s.d.Expires {
				exp, _ := c.Value.(time.Time)
				s.expireKey(p, b, exp)
			}
		}
	}
	if len(u.Changes) > 0 && s.d.Version != nil {
		p.change("hincr", b, s.d.Version.Key, "1")
	}
	return nil
}

// addOf is the add change of u to the field with key key.
func addOf[T any](u runtime.Update[T], key string) runtime.Change[T] {
	for _, c := range u.Changes {
		if c.Add && c.Field.Key == key {
			return c
		}
	}
	return runtime.Change[T]{}
}

// intWidth is how number field f is stored, for the script's hadd: "4"
// (a BSON int32), "8" (an int64), or "min" (the smaller that holds the
// value, as Go's int encodes).
func (s *Store[T, K]) intWidth(f *runtime.Field[T]) string {
	t := new(T)
	f.SetInt(t, 0)
	small, _ := bsonval.Encode(f.Value(t))
	f.SetInt(t, f.Max)
	large, _ := bsonval.Encode(f.Value(t))
	switch {
	case len(small) == 0 || len(large) == 0:
		return "8"
	case small[0] != large[0]:
		return "min"
	case small[0] == 0x10:
		return "4"
	}
	return "8"
}

// Update writes the changes of u in one script run (with the lookup
// protocol on a cluster when they change lookup values).
func (s *Store[T, K]) Update(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	if err := s.nameTooLarge(op, id); err != nil {
		return err
	}
	bk := s.d.Keys.Bytes(id)
	ls := s.lookupsOf(u.Keys()...)
	for range runtime.MaxAttempts {
		w := &write[K]{op: op, id: id, bk: bk, seq: nextSeq(0)}
		w.appends = slices.ContainsFunc(u.Changes, func(c runtime.Change[T]) bool { return c.Result != nil })
		p := &prog{}
		b := p.k(s.blockKey(bk))
		p.once = b
		p.check("", "exists", b)
		if len(u.Changes) > 0 {
			s.guard(p, b)
		}
		if u.IfVersion != 0 && s.d.Version != nil {
			p.check(fmt.Sprintf("expected %d", u.IfVersion), "ver", b, s.d.Version.Key, strconv.FormatInt(u.IfVersion, 10))
		}
		if len(ls) > 0 {
			st, err := s.readFor(ctx, op, id, ls, u.Keys())
			if err != nil {
				return err
			}
			if !st.found {
				return s.fail(op, id, runtime.ErrNotFound, nil)
			}
			if u.IfVersion != 0 && s.d.Version != nil {
				if err := runtime.CheckVersion(op, s.d.Aggregate, id, true, s.d.VersionOf(st.t), u.IfVersion); err != nil {
					return err
				}
			}
			nw, err := s.decode(id, st.h)
			if err != nil {
				return s.fail(op, id, nil, err)
			}
			for _, c := range u.Changes {
				if err := c.Apply(nw); err != nil {
					if errors.Is(err, runtime.ErrNotFound) {
						return s.failAt(op, id, c.Entry(), runtime.ErrNotFound)
					}
					return s.fail(op, id, nil, err)
				}
			}
			w.inc, w.seq = st.inc, nextSeq(parseSeq(st.seq))
			w.before, w.after = s.values(st.t, ls), s.values(nw, ls)
			p.check("", "seq", b, st.seq)
		}
		if err := s.changes(op, id, p, b, u); err != nil {
			return err
		}
		if len(u.Changes) > 0 {
			p.change("stamp", b, pad(w.seq))
		}
		w.block = p
		n, err := s.commit(ctx, w)
		if err != nil {
			if _, changed := failed(err, "changed"); changed {
				continue
			}
			if _, other := failed(err, "layout"); other {
				return s.updateAcross(ctx, op, id, u)
			}
			if f, ok := failed(err, "range"); ok {
				return runtime.OutOfRange(op, s.d.Aggregate, id, addOf(u, f.detail))
			}
			if f, ok := failed(err, "notnum"); ok {
				return s.failAt(op, id, "entry "+f.detail+" (not an integer)", runtime.ErrUnreadable)
			}
			return s.checkFailed(op, id, err)
		}
		for _, c := range u.Changes {
			if c.Result != nil {
				*c.Result = n
			}
		}
		return nil
	}
	return s.contended(op, id)
}

// Append writes elem as the next element of partition f and bumps the
// element count and the version in one script run: the new element is
// the only value sent, whatever the partition's size.
func (s *Store[T, K]) Append(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with ...runtime.Change[T]) (int, error) {
	if err := s.nameTooLarge(op, id); err != nil {
		return 0, err
	}
	bk := s.d.Keys.Bytes(id)
	ls := s.lookupsOf(f.Key)
	for range runtime.MaxAttempts {
		w := &write[K]{op: op, id: id, bk: bk, seq: nextSeq(0)}
		p := &prog{}
		b := p.k(s.blockKey(bk))
		p.once = b
		p.check("", "exists", b)
		s.guard(p, b)
		if len(ls) > 0 {
			// Only the incarnation is read: the new element's values are
			// added, nothing is removed.
			vals, err := s.c.HMGet(ctx, s.blockKey(bk), incField, seqField).Result()
			if err != nil {
				return 0, s.fail(op, id, nil, err)
			}
			inc, _ := vals[0].(string)
			seq, _ := vals[1].(string)
			if seq == "" {
				return 0, s.fail(op, id, runtime.ErrNotFound, nil)
			}
			partial := new(T)
			f.Reset(partial, 1)
			if err := f.AppendValue(partial, elem); err != nil {
				return 0, s.fail(op, id, nil, err)
			}
			w.inc, w.seq = inc, nextSeq(parseSeq(seq))
			w.after = s.values(partial, ls)
			p.check("", "heq", b, incField, inc)
		}
		v, err := s.encode(op, id, f.Key+"[]", elem)
		if err != nil {
			return 0, err
		}
		p.change("append", b, f.Key, v)
		w.appends = true
		for _, c := range with {
			// Top-level fields (the updated timestamp), in the same run.
			v, err := s.encode(op, id, c.Field.Key, c.Value)
			if err != nil {
				return 0, err
			}
			p.change("hset", b, c.Field.Key, v)
		}
		if s.d.Version != nil {
			p.change("hincr", b, s.d.Version.Key, "1")
		}
		p.change("stamp", b, pad(w.seq))
		w.block = p
		i, err := s.commit(ctx, w)
		if err != nil {
			if _, changed := failed(err, "changed"); changed {
				continue
			}
			if _, other := failed(err, "layout"); other {
				return s.appendAcross(ctx, op, id, f, elem, with)
			}
			return 0, s.checkFailed(op, id, err)
		}
		return int(i), nil
	}
	return 0, s.contended(op, id)
}

// ReadElems reads elements of partition f of block id from index start
// on with one HMGET of their fields (and the count). With desc it reads
// down from index start; a first page (start < 0) reads the count with an
// HMGET of its own first.
func (s *Store[T, K]) ReadElems(ctx context.Context, op string, id K, f *runtime.Field[T], start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	fields := make([]string, 0, n+3)
	fields = append(fields, seqField, f.Key)
	if s.d.Expires != nil {
		fields = append(fields, s.expiresField())
	}
	first := len(fields)
	// The window assuming the count allows it; the count read with the
	// elements trims it.
	idx, _ := runtime.ElemWindow(start+n, start, n, false)
	if desc {
		if start < 0 {
			vals, err := s.c.HMGet(ctx, s.BlockKey(id), fields...).Result()
			if err != nil {
				return false, s.fail(op, id, nil, err)
			}
			if c, ok := vals[1].(string); vals[0] != nil && ok && isCount(c) {
				start, _ = strconv.Atoi(c)
				start--
			}
		}
		idx, _ = runtime.ElemWindow(start+1, start, n, true)
	}
	for _, i := range idx {
		fields = append(fields, elemField(f.Key, i))
	}
	vals, err := s.c.HMGet(ctx, s.BlockKey(id), fields...).Result()
	if err != nil {
		return false, s.fail(op, id, nil, err)
	}
	if vals[0] == nil {
		return false, s.fail(op, id, runtime.ErrNotFound, nil)
	}
	if s.d.Expires != nil {
		if err := s.notExpired(op, id, vals[2]); err != nil {
			return false, err
		}
	}
	count := 0
	c, ok := vals[1].(string)
	switch {
	case ok && isCount(c):
		if count, err = strconv.Atoi(c); err != nil {
			return false, s.fail(op, id, nil, fmt.Errorf("entry %s: bad element count %q", f.Key, c))
		}
	case ok:
		// Stored whole (an earlier layout of the model).
		return s.readWhole(op, id, f, c, start, n, desc, fn)
	default:
		// No count: a partition added since the block was written, or
		// stored whole in an EAO block's root entry (evolve.go).
		if v, ok, err := s.rootMember(ctx, op, id, f.Key); err != nil || ok {
			if err != nil {
				return false, err
			}
			return s.readWhole(op, id, f, v, start, n, desc, fn)
		}
	}
	for j, v := range vals[first:] {
		i := idx[j]
		if i >= count {
			if desc {
				continue // the partition was rewritten shorter meanwhile
			}
			return false, nil
		}
		str, ok := v.(string)
		if !ok {
			return false, s.fail(op, id, nil, fmt.Errorf("entry %s is missing: the block is corrupt", elemField(f.Key, i)))
		}
		if err := fn(i, decoder(str)); err != nil {
			return false, s.fail(op, id, nil, err)
		}
	}
	if desc {
		return len(idx) > 0 && idx[len(idx)-1] > 0, nil
	}
	return start+n < count, nil
}

// readRange reads up to n members of sorted set key in [from, to) after
// after (lexicographic, score 0), resolving each with resolve (which
// skips stale members by returning nil): it reads in batches until it has
// n items or the range ends. It returns the items, the member of the last
// one and whether more follow. With desc it reads the members before
// after (nil: from the end of the range) in descending order (ZRANGE
// BYLEX REV).
func (s *Store[T, K]) readRange(ctx context.Context, key string, from, to []byte, after []byte, n int, desc bool, resolve func([]string) ([]*T, error)) ([]*T, []byte, bool, error) {
	lo := "[" + string(from)
	if from == nil {
		lo = "-"
	}
	hi := "+"
	if to != nil {
		hi = "(" + string(to)
	}
	if after != nil {
		if desc {
			hi = "(" + string(after)
		} else {
			lo = "(" + string(after)
		}
	}
	var items []*T
	var members []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, false, err
		}
		want := n + 1 - len(items)
		batch, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: lo, Stop: hi, ByLex: true, Rev: desc, Count: int64(want)}).Result()
		if err != nil {
			return nil, nil, false, err
		}
		got, err := resolve(batch)
		var bad *badBlock
		if err != nil && !errors.As(err, &bad) {
			return nil, nil, false, err
		}
		for i, t := range got {
			if t != nil && (bad == nil || i < bad.i) {
				items = append(items, t)
				members = append(members, batch[i])
			}
		}
		if bad != nil && len(items) <= n {
			// The blocks before the unreadable one; resume after it.
			return items, []byte(batch[bad.i]), true, bad.err
		}
		if len(batch) < want || len(items) > n {
			break
		}
		if desc {
			hi = "(" + batch[len(batch)-1]
		} else {
			lo = "(" + batch[len(batch)-1]
		}
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last []byte
	if len(items) > 0 {
		last = []byte(members[len(items)-1])
	}
	return items, last, more, nil
}

// blocks resolves listing members (encoded block keys) to their blocks
// with one pipeline; members whose block is gone are nil.
func (s *Store[T, K]) blocks(ctx context.Context, op string, members []string) ([]*T, error) {
	ids := make([]K, len(members))
	for i, m := range members {
		r := runtime.NewKeyReader([]byte(m))
		id, err := s.d.Keys.Read(r)
		if err != nil || !r.Done() {
			return nil, s.fail(op, nil, nil, fmt.Errorf("listing %s: member %x is no %s block key", s.listKey(), m, s.d.Aggregate))
		}
		ids[i] = id
	}
	return s.getMany(ctx, op, ids)
}

// ReadBlocks reads up to n blocks in block-key order after position after
// (an encoded block key; desc: before it, in descending order): one
// ZRANGE BYLEX (REV) of the listing and one pipeline of HGETALLs per
// batch.
func (s *Store[T, K]) ReadBlocks(ctx context.Context, op string, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	if after != nil {
		r := runtime.NewKeyReader(after)
		if _, err := s.d.Keys.Read(r); err != nil || !r.Done() {
			return nil, nil, false, fmt.Errorf("%w: bad position", runtime.ErrBadCursor)
		}
	}
	items, last, more, err := s.readRange(ctx, s.listKey(), nil, nil, after, n, desc, func(ms []string) ([]*T, error) { return s.blocks(ctx, op, ms) })
	if err != nil {
		if errors.Is(err, runtime.ErrUnreadable) {
			return items, last, more, err // last: the unreadable block
		}
		return nil, nil, false, s.errOf(op, nil, err)
	}
	return items, last, more, nil
}

// ReadScope reads blocks of the counter scope of key scope in number
// order after number after (desc: in descending order below number
// after, 0: from the highest): one key range of the listing.
func (s *Store[T, K]) ReadScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) ([]*T, int64, bool, error) {
	prefix, _ := s.d.Counter.Split(scope)
	from := s.d.Keys.Bytes(s.d.Counter.With(scope, 1))
	var pos []byte
	if !desc {
		from = s.d.Keys.Bytes(s.d.Counter.With(scope, after+1))
	} else if after > 0 {
		pos = s.d.Keys.Bytes(s.d.Counter.With(scope, after))
	}
	items, at, more, err := s.readRange(ctx, s.listKey(), from, runtime.TupleEnd(prefix), pos, n, desc, func(ms []string) ([]*T, error) { return s.blocks(ctx, op, ms) })
	if err != nil {
		if errors.Is(err, runtime.ErrUnreadable) {
			// Resume after the unreadable block's number.
			if id, kerr := s.d.Keys.Read(runtime.NewKeyReader(at)); kerr == nil {
				_, num := s.d.Counter.Split(id)
				return items, num, more, err
			}
		}
		return nil, 0, false, s.errOf(op, nil, err)
	}
	var last int64
	if len(items) > 0 {
		_, last = s.d.Counter.Split(*s.d.ID(items[len(items)-1]))
	}
	return items, last, more, nil
}

// lookupIndex finds lookup l.
func (s *Store[T, K]) lookupIndex(l *runtime.Lookup[T]) int {
	for i, x := range s.d.Lookups {
		if x == l {
			return i
		}
	}
	panic("redisstore: " + s.d.Aggregate + " has no lookup " + l.Name)
}

// split splits an index member into the value (of parts components)
// and the block key.
func split(parts int, m []byte) (value, bk []byte, err error) {
	r := runtime.NewKeyReader(m)
	for range parts {
		if len(r.Rest()) == 0 {
			return nil, nil, errors.New("short member")
		}
		switch r.Rest()[0] {
		case tagString:
			_, err = r.String()
		case tagInt:
			_, err = r.Int()
		case tagUint:
			_, err = r.Uint()
		default:
			err = errors.New("bad component")
		}
		if err != nil {
			return nil, nil, err
		}
	}
	n := len(m) - len(r.Rest())
	return m[:n], m[n:], nil
}

// ReadLookup reads aggregates through lookup l in key range rng after
// position after (an index key), verified against their blocks (the
// engine's Range): a script run per batch of index items and one pipeline
// of HGETALLs.
func (s *Store[T, K]) ReadLookup(ctx context.Context, op string, l *runtime.Lookup[T], rng *runtime.KeyRange, after []byte, n int, desc bool) ([]*T, []byte, bool, error) {
	r := *rng
	r.After = after
	return s.eng.Range(ctx, op, s.lookupIndex(l), &r, n, desc)
}

// GetBy reads the aggregate holding value of unique lookup l: the claim,
// then the block, verified (the engine's Get).
func (s *Store[T, K]) GetBy(ctx context.Context, op string, l *runtime.Lookup[T], value []byte) (*T, error) {
	return s.eng.Get(ctx, op, s.lookupIndex(l), value)
}

// loadScripts loads the write script and the index script on c.
func loadScripts(ctx context.Context, c redis.Scripter) error {
	if err := vm.Load(ctx, c).Err(); err != nil {
		return err
	}
	return ix.Load(ctx, c).Err()
}

// Ensure loads the scripts on the server (on every master of a cluster);
// Redis needs nothing else created up front. Under
// Options.StrictDeadlines it fails with ErrNoContextTimeout if the client
// ignores context deadlines.
func (s *Store[T, K]) Ensure(ctx context.Context) error {
	if !ContextTimeouts(s.c) {
		return s.fail("EnsureIndexes", nil, nil, ErrNoContextTimeout)
	}
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			runtime.RoundTrip(ctx) // a node's client, which has no hook
			return loadScripts(ctx, c)
		})
	} else {
		err = loadScripts(ctx, s.c)
	}
	if err != nil {
		return s.fail("EnsureIndexes", nil, nil, err)
	}
	return nil
}

// Layout lists the entries of block id as its hash holds them, without
// the hidden fields.
func (s *Store[T, K]) Layout(ctx context.Context, id K) ([]string, error) {
	keys, err := s.c.HKeys(ctx, s.BlockKey(id)).Result()
	if err != nil {
		return nil, s.fail("Layout", id, nil, err)
	}
	if len(keys) == 0 {
		return nil, s.fail("Layout", id, runtime.ErrNotFound, nil)
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if k != seqField && k != incField && k != onceField {
			out = append(out, k)
		}
	}
	return out, nil
}
