package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// Expiry. A block hash gets the native expiry of its expires time
// (PEXPIREAT, by the server's clock; on a cluster StaleAfter later, see
// expireKey) in the run of every write that sets the expires entry, and
// loses it (PERSIST) when the entry becomes zero.
// What Redis removes is the block hash alone: its listing member, its
// index members and its claims stay behind. Reads verify them (a member
// whose block is gone answers nothing), a unique value whose claim names
// a block that is gone is free to the next write (freeClaim), and Repair
// removes the rest. DeleteExpired removes a block the repository's clock
// says has expired before the server's does.

// errKept is what delete returns when its condition keeps the block.
var errKept = errors.New("redisstore: the block is kept")

// deleteCond is the condition of a conditional delete: the block (read
// whole) is kept when keep reports true; the run checks that field still
// holds what was read.
type deleteCond[T any] struct {
	field string
	keep  func(*T) bool
}

// expiresField is the hash field holding the expires time: its entry,
// or the root entry of an EAO block (expiresEntry).
func (s *Store[T, K]) expiresField() string {
	if s.d.EAO {
		return ""
	}
	return s.d.Expires.Key
}

// expiresEntry is the entry expiresField holds.
func (s *Store[T, K]) expiresEntry() *runtime.Field[T] {
	if s.d.EAO {
		return s.d.Root
	}
	return s.d.Expires
}

// DeleteExpired removes block id, its index entries and its listing
// member, as Delete does, if its expires entry is set and not after now:
// the run checks that the block still holds the expires entry it was
// decided on. It reads the expires entry alone first (one HGET), so that
// the check of a block that has not expired, what every write of an
// expiring aggregate sends first, does not read the whole hash.
func (s *Store[T, K]) DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	if s.d.Expires == nil {
		return false, nil
	}
	if err := s.nameTooLarge("DeleteExpired", id); err != nil {
		return false, err
	}
	v, err := s.c.HGet(ctx, s.BlockKey(id), s.expiresField()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil // no block, or one that never expires
	case err != nil:
		return false, s.fail("DeleteExpired", id, nil, err)
	}
	if s.d.NotExpired("DeleteExpired", id, s.expiresEntry(), decoder(v), now) == nil {
		return false, nil
	}
	// Expired, or unreadable: the conditional delete reads the block whole
	// and decides on it (an unreadable block fails there, as it would on
	// any read).
	err = s.delete(ctx, "DeleteExpired", id, &deleteCond[T]{
		field: s.expiresField(),
		keep:  func(t *T) bool { return !s.d.Expired(t, now) },
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errKept), errors.Is(err, runtime.ErrNotFound):
		return false, nil
	}
	return false, err
}

// notExpired fails with runtime.ErrNotFound when v, the stored expires
// field of block id (nil: none), has passed by the store's clock.
func (s *Store[T, K]) notExpired(op string, id K, v any) error {
	str, ok := v.(string)
	if !ok {
		return nil
	}
	return s.d.NotExpired(op, id, s.expiresEntry(), decoder(str), s.now())
}

// expire adds to p the native expiry of block bk at exp (none when exp is
// zero), for an aggregate with an expires field.
func (s *Store[T, K]) expire(p *prog, bk []byte, exp time.Time) {
	if s.d.Expires != nil {
		s.expireKey(p, p.k(s.blockKey(bk)), exp)
	}
}

// expireKey adds to p the native expiry of key k (a KEYS index) at exp.
func (s *Store[T, K]) expireKey(p *prog, k string, exp time.Time) {
	if exp.IsZero() {
		p.change("persist", k)
		return
	}
	if s.cluster {
		// On a cluster a unique claim without its block may be a write
		// in flight, taken over only once StaleAfter old: the server
		// removes the block StaleAfter after it expires (or is written
		// expired), and until then a write that needs one of its unique
		// values finds it expired and removes it with its claims
		// (runtime's purge), so that the value is free at once.
		if now := s.now(); exp.Before(now) {
			exp = now
		}
		exp = exp.Add(StaleAfter)
	}
	p.change("pexpireat", k, strconv.FormatInt(exp.UnixMilli(), 10))
}

// freeClaim removes the claim of a unique value (the note of a failed
// claim check, "<lookup index>:<value>", held by block key f.detail) if
// the block it names does not hold the value: the block is gone (removed
// by its native expiry, or by a write that left the claim behind) or
// holds another value. It runs one script that checks the block is still
// as read (absent, or with the stamp read); it reports whether it removed
// the claim, so that the write that found it runs again. A single node
// writes a block and its claims in one run, so a claim is never one of a
// write in flight there.
func (s *Store[T, K]) freeClaim(ctx context.Context, f *failure) (bool, error) {
	if f.detail == "" {
		return false, nil
	}
	idx, v, ok := cutNote(f.note)
	if !ok || idx >= len(s.d.Lookups) || !s.d.Lookups[idx].Unique {
		return false, nil
	}
	holder := []byte(f.detail)
	h, err := s.c.HGetAll(ctx, s.blockKey(holder)).Result()
	if err != nil {
		return false, err
	}
	lk := s.lookupKeys(idx)
	p := &prog{}
	b := p.k(s.blockKey(holder))
	if len(h) == 0 {
		p.check("", "absent", b)
	} else {
		t, err := s.px.decode(holder, h)
		if err != nil || index.Holds(index.LookupKeys(true, s.d.Lookups[idx].Keys(t), holder), []byte(v)) {
			return false, nil // held (an unreadable holder is taken to hold it)
		}
		p.check("", "seq", b, h[seqField])
	}
	p.change("hdelif", p.k(lk.claims), v, f.detail)
	if _, err := p.run(ctx, s.w); err != nil {
		if _, exists := failed(err, "exists"); exists {
			return false, nil
		}
		if _, changed := failed(err, "changed"); changed {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// cutNote splits the note of a claim check, "<lookup index>:<value>".
func cutNote(note string) (int, string, bool) {
	for i := 0; i < len(note); i++ {
		if note[i] == ':' {
			n, err := strconv.Atoi(note[:i])
			return n, note[i+1:], err == nil
		}
	}
	return 0, "", false
}
