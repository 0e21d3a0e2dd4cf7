// Package memindex is an in-memory store of blocks and index items that
// implements index.Primitives: the reference the engine's protocol is
// tested on, and the model other stores' primitives are checked against
// (runtime/storetest/indextest). Every call can be made to fail as a
// crash of the process or a lost reply (Hook). It is test support, not
// production code.
package memindex

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/noamgen/noamgen/runtime/index"
)

// Fault is what Hook injects into a call.
type Fault uint8

const (
	None  Fault = iota
	Crash       // the process stops: this call and every later one fail, unapplied
	Lost        // the call is applied but its reply is lost: it fails with ErrLost
)

var (
	// ErrCrashed is the error of every call after a Crash.
	ErrCrashed = errors.New("memindex: the process stopped")
	// ErrLost is the error of a call whose reply was lost.
	ErrLost = errors.New("memindex: reply lost")
)

type block[T any] struct {
	st index.Stamp
	v  T
}

// Store is an in-memory collection of blocks (of values T, keyed by
// encoded block key) with index tables. The zero value is not usable: use
// New. It is safe for concurrent use.
type Store[T any] struct {
	mu     sync.Mutex
	blocks map[string]block[T]
	items  []map[string]index.Item
	// Hook, when set, is called before every call with the number of
	// calls made so far and the call's name (the Primitives method, or
	// Insert, Replace, Update, Remove); it returns the fault to inject.
	// It may cancel the caller's context (a cancellation before the call):
	// the call then fails with the context's error, unapplied.
	Hook func(n int, call string) Fault
	// After, when set, is called after every call that ran (applied or
	// not) with its number and name, without holding the store's lock:
	// it may cancel the caller's context (a cancellation after a reply).
	After   func(n int, call string)
	calls   int
	crashed bool
	cur     int    // the number of the call holding mu
	curName string // and its name
	// Decode, when set, says why a value does not decode (Block.Err).
	Decode func(T) error
}

// New returns an empty store with lookups index tables.
func New[T any](lookups int) *Store[T] {
	s := &Store[T]{blocks: map[string]block[T]{}}
	for range lookups {
		s.items = append(s.items, map[string]index.Item{})
	}
	return s
}

// enter starts call name: it runs Hook (without holding s.mu, so that a
// Hook may block while other calls run) and reports the fault, or the
// error to fail with unapplied. It returns with s.mu held.
func (s *Store[T]) enter(ctx context.Context, name string) (lost bool, err error) {
	s.mu.Lock()
	n, hook := s.calls, s.Hook
	s.calls++
	s.cur, s.curName = n, name
	s.mu.Unlock()
	f := None
	if hook != nil {
		f = hook(n, name)
	}
	s.mu.Lock()
	if s.crashed {
		return false, ErrCrashed
	}
	if f == Crash {
		s.crashed = true
		return false, ErrCrashed
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return f == Lost, nil
}

// exit ends a call entered with enter: it releases s.mu and runs After.
func (s *Store[T]) exit() {
	n, name, after := s.cur, s.curName, s.After
	s.mu.Unlock()
	if after != nil {
		after(n, name)
	}
}

// leave is the error of a call that was applied.
func leave(lost bool) error {
	if lost {
		return ErrLost
	}
	return nil
}

// Calls returns the number of calls made so far.
func (s *Store[T]) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Restart ends a crash: later calls run again (with no Hook).
func (s *Store[T]) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashed, s.Hook, s.After = false, nil, nil
}

func clone(it index.Item) index.Item {
	it.Key, it.Block = bytes.Clone(it.Key), bytes.Clone(it.Block)
	return it
}

func matches(cur index.Item, found bool, c index.Cond) bool {
	switch c.Kind {
	case index.Always:
		return true
	case index.Absent:
		return !found
	case index.Same:
		return found && bytes.Equal(cur.Block, c.Item.Block) && cur.Seq == c.Item.Seq && cur.W == c.Item.W
	case index.Marked:
		return found && cur.W == c.W
	case index.Held:
		return found && bytes.Equal(cur.Block, c.Block) && cur.Inc == c.Inc && (c.Before == 0 || cur.Seq < c.Before)
	}
	return false
}

// PutItem implements index.Primitives.
func (s *Store[T]) PutItem(ctx context.Context, l int, it index.Item, c index.Cond) (bool, *index.Item, error) {
	lost, err := s.enter(ctx, "PutItem")
	defer s.exit()
	if err != nil {
		return false, nil, err
	}
	cur, found := s.items[l][string(it.Key)]
	if !matches(cur, found, c) {
		return false, nil, leave(lost)
	}
	it = clone(it)
	if c.Kind == index.Always && found {
		it.Seq = max(it.Seq, cur.Seq)
	}
	s.items[l][string(it.Key)] = it
	var prev *index.Item
	if found {
		prev = &cur
	}
	return true, prev, leave(lost)
}

// GetItems implements index.Primitives.
func (s *Store[T]) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	lost, err := s.enter(ctx, "GetItems")
	defer s.exit()
	if err != nil || lost {
		return nil, errors.Join(err, leave(lost))
	}
	var out []index.Item
	for _, k := range keys {
		if it, ok := s.items[l][string(k)]; ok {
			out = append(out, clone(it))
		}
	}
	return out, nil
}

// DeleteItems implements index.Primitives.
func (s *Store[T]) DeleteItems(ctx context.Context, l int, keys [][]byte, c index.Cond) (int, error) {
	lost, err := s.enter(ctx, "DeleteItems")
	defer s.exit()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if cur, ok := s.items[l][string(k)]; ok && matches(cur, true, c) {
			delete(s.items[l], string(k))
			n++
		}
	}
	return n, leave(lost)
}

// ClaimItems implements index.Batcher: one call whose writes are each
// on condition Absent. A fault applies to the whole call (a crash: none is
// written; a lost reply: all are applied, every item gets ErrLost).
func (s *Store[T]) ClaimItems(ctx context.Context, l int, its []index.Item) ([]bool, []error) {
	ok, errs := make([]bool, len(its)), make([]error, len(its))
	lost, err := s.enter(ctx, "ClaimItems")
	defer s.exit()
	for j, it := range its {
		if err != nil {
			errs[j] = err
			continue
		}
		if _, found := s.items[l][string(it.Key)]; !found {
			s.items[l][string(it.Key)] = clone(it)
			ok[j] = true
		}
		errs[j] = leave(lost)
		if lost {
			ok[j] = false
		}
	}
	return ok, errs
}

// DeleteEach implements index.Batcher: one call deleting each key on its
// own condition.
func (s *Store[T]) DeleteEach(ctx context.Context, l int, keys [][]byte, conds []index.Cond) error {
	lost, err := s.enter(ctx, "DeleteEach")
	defer s.exit()
	if err != nil {
		return err
	}
	for j, k := range keys {
		if cur, ok := s.items[l][string(k)]; ok && matches(cur, true, conds[j]) {
			delete(s.items[l], string(k))
		}
	}
	return leave(lost)
}

// ScanItems implements index.Primitives.
func (s *Store[T]) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	lost, err := s.enter(ctx, "ScanItems")
	defer s.exit()
	if err != nil || lost {
		return nil, errors.Join(err, leave(lost))
	}
	var keys []string
	for k := range s.items[l] {
		if k >= string(from) && (to == nil || k < string(to)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if desc {
		slices.Reverse(keys)
	}
	var out []index.Item
	for _, k := range keys[:min(len(keys), limit)] {
		out = append(out, clone(s.items[l][k]))
	}
	return out, nil
}

func (s *Store[T]) get(k string) index.Block[T] {
	b := s.blocks[k]
	out := index.Block[T]{Key: []byte(k), Stamp: b.st, Value: b.v}
	if s.Decode != nil {
		if err := s.Decode(b.v); err != nil {
			var zero T
			out.Value, out.Err = zero, err
		}
	}
	return out
}

// ReadBlocks implements index.Primitives.
func (s *Store[T]) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[T], error) {
	lost, err := s.enter(ctx, "ReadBlocks")
	defer s.exit()
	if err != nil || lost {
		return nil, errors.Join(err, leave(lost))
	}
	var out []index.Block[T]
	for _, k := range keys {
		if _, ok := s.blocks[string(k)]; ok {
			out = append(out, s.get(string(k)))
		}
	}
	return out, nil
}

// FenceBlock implements index.Primitives.
func (s *Store[T]) FenceBlock(ctx context.Context, key []byte, old index.Stamp, seq int64) (bool, error) {
	lost, err := s.enter(ctx, "FenceBlock")
	defer s.exit()
	if err != nil {
		return false, err
	}
	b, ok := s.blocks[string(key)]
	if !ok || b.st != old {
		return false, leave(lost)
	}
	b.st.Seq = seq
	s.blocks[string(key)] = b
	return true, leave(lost)
}

// DeleteBlock implements index.Primitives.
func (s *Store[T]) DeleteBlock(ctx context.Context, key []byte, st index.Stamp) (bool, error) {
	lost, err := s.enter(ctx, "DeleteBlock")
	defer s.exit()
	if err != nil {
		return false, err
	}
	b, ok := s.blocks[string(key)]
	if !ok || b.st != st {
		return false, leave(lost)
	}
	delete(s.blocks, string(key))
	return true, leave(lost)
}

// ScanBlocks implements index.Primitives.
func (s *Store[T]) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[T], []byte, error) {
	lost, err := s.enter(ctx, "ScanBlocks")
	defer s.exit()
	if err != nil || lost {
		return nil, nil, errors.Join(err, leave(lost))
	}
	var keys []string
	for k := range s.blocks {
		if after == nil || k > string(after) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []index.Block[T]
	for _, k := range keys[:min(len(keys), limit)] {
		out = append(out, s.get(k))
	}
	return out, index.NextAfter(out, limit), nil
}

// Ambiguous implements index.Primitives: a lost reply, a crash, or a
// context error.
func (s *Store[T]) Ambiguous(err error) bool {
	return errors.Is(err, ErrLost) || errors.Is(err, ErrCrashed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Insert creates block key holding v with stamp st, unless it exists
// (then it reports false). It is the block command of a create.
func (s *Store[T]) Insert(ctx context.Context, key []byte, st index.Stamp, v T) (bool, error) {
	lost, err := s.enter(ctx, "Insert")
	defer s.exit()
	if err != nil {
		return false, err
	}
	if _, ok := s.blocks[string(key)]; ok {
		return false, leave(lost)
	}
	s.blocks[string(key)] = block[T]{st, v}
	return true, leave(lost)
}

// Replace writes block key holding v with stamp st, on condition that it
// exists with stamp old. It is the block command of a write.
func (s *Store[T]) Replace(ctx context.Context, key []byte, old, st index.Stamp, v T) (bool, error) {
	lost, err := s.enter(ctx, "Replace")
	defer s.exit()
	if err != nil {
		return false, err
	}
	if b, ok := s.blocks[string(key)]; !ok || b.st != old {
		return false, leave(lost)
	}
	s.blocks[string(key)] = block[T]{st, v}
	return true, leave(lost)
}

// Remove deletes block key and returns it as it was (found false if
// there was none). It is the block command of a delete.
func (s *Store[T]) Remove(ctx context.Context, key []byte) (index.Block[T], bool, error) {
	lost, err := s.enter(ctx, "Remove")
	defer s.exit()
	if err != nil {
		return index.Block[T]{}, false, err
	}
	if _, ok := s.blocks[string(key)]; !ok {
		return index.Block[T]{}, false, leave(lost)
	}
	b := s.get(string(key))
	delete(s.blocks, string(key))
	return b, true, leave(lost)
}

// Set writes block key as it is, without a Hook or a fault (test setup).
func (s *Store[T]) Set(key []byte, st index.Stamp, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks[string(key)] = block[T]{st, v}
}

// SetItem writes item it of lookup l as it is (test setup).
func (s *Store[T]) SetItem(l int, it index.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[l][string(it.Key)] = clone(it)
}

// Blocks returns every block, in key order.
func (s *Store[T]) Blocks() []index.Block[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]index.Block[T], 0, len(keys))
	for _, k := range keys {
		out = append(out, s.get(k))
	}
	return out
}

// Items returns every item of lookup l, in key order.
func (s *Store[T]) Items(l int) []index.Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []index.Item
	for _, it := range s.items[l] {
		out = append(out, clone(it))
	}
	slices.SortFunc(out, func(a, b index.Item) int { return bytes.Compare(a.Key, b.Key) })
	return out
}
