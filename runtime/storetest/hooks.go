package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var hookTests = []subtest{
	{name: "Hooks", fn: testHooks},
	{name: "HookRefuses", fn: testHookRefuses},
	{name: "HooksSeeEveryCall", fn: testHooksSeeEveryCall},
}

// call is what a recording hook saw of one runtime.Call once it ended.
type call struct {
	Op, Aggregate, Collection, Store string
	Keys                             []any
	Entries                          []string
	RoundTrips                       int
	Err                              error
	ran                              bool   // next was called
	store                            string // the harness's Caps.Name
}

// recorder is a hook that records every call, and runs next unless refuse
// says otherwise (with the context wrap makes of the caller's).
type recorder struct {
	mu     sync.Mutex
	calls  []call
	store  string // the harness's store (Caps.Name), which every call names
	refuse func(op string) error
	wrap   func(ctx context.Context) context.Context
}

func (r *recorder) hook(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
	rec := call{Op: c.Op, Aggregate: c.Aggregate, Collection: c.Collection, Store: c.Store, store: r.store}
	var err error
	if r.refuse != nil {
		err = r.refuse(c.Op)
	}
	if err == nil {
		if r.wrap != nil {
			ctx = r.wrap(ctx)
		}
		rec.ran = true
		err = next(ctx)
	}
	rec.Keys, rec.Entries, rec.RoundTrips, rec.Err = slices.Clone(c.Keys), slices.Clone(c.Entries), c.RoundTrips, err
	r.mu.Lock()
	r.calls = append(r.calls, rec)
	r.mu.Unlock()
	return err
}

// last returns the only call recorded since the previous last.
func (r *recorder) last(t *testing.T) call {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 1 {
		t.Fatalf("the hook saw %d calls, want 1: %+v", len(r.calls), r.calls)
	}
	c := r.calls[0]
	r.calls = nil
	return c
}

// matchEntries are the entries of a Match block with n rounds.
func matchEntries(n int) []string {
	out := []string{"code", "region", "level", "tags", "venue", "start", "meta", "tree", "rounds"}
	for i := range n {
		out = append(out, fmt.Sprintf("rounds[%d]", i))
	}
	return append(out, "version")
}

// check compares a recorded call with the operation, keys and entries
// (in any order) wanted, and checks that it sent requests to the store.
func (c call) check(t *testing.T, op string, keys []any, entries ...string) {
	t.Helper()
	if c.Op != op || c.Aggregate != "Match" || c.Collection != "matches" {
		t.Errorf("%s: the hook saw Op %q, Aggregate %q, Collection %q", op, c.Op, c.Aggregate, c.Collection)
	}
	if c.Store != c.store {
		t.Errorf("%s: the hook saw Store %q, the store's Caps say %q", op, c.Store, c.store)
	}
	if keys != nil && !slices.Equal(sortedKeys(c.Keys), sortedKeys(keys)) {
		t.Errorf("%s: the hook saw Keys %v, want %v", op, c.Keys, keys)
	}
	got, want := slices.Sorted(slices.Values(c.Entries)), slices.Sorted(slices.Values(entries))
	if !slices.Equal(got, want) {
		t.Errorf("%s: the hook saw Entries %q, want %q", op, c.Entries, entries)
	}
	if c.Err != nil {
		t.Errorf("%s: the hook saw the error %v", op, c.Err)
	}
	if !c.ran || c.RoundTrips < 1 {
		t.Errorf("%s: the hook saw %d round trips (next called: %v), want at least 1", op, c.RoundTrips, c.ran)
	}
}

// testHooks checks what a hook sees of each kind of operation: the
// operation, the block keys, the entries written or read, the round trips.
func testHooks(t *testing.T, e *env) {
	rec := &recorder{store: e.h.Caps.Name}
	r := repos.On(t, e.db, runtime.WithHook(rec.hook)).Matches

	m := newMatch("h1", 2)
	must(t, r.Create(bg, m))
	rec.last(t).check(t, "Create", []any{"h1"}, matchEntries(2)...)

	got, err := r.Get(bg, "h1")
	must(t, err)
	e.wantSame(t, "Get through a hook", got, m)
	rec.last(t).check(t, "Get", []any{"h1"}, matchEntries(2)...)

	_, err = r.Get(bg, "missing")
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a missing block: %v", err)
	}
	if c := rec.last(t); !errors.Is(c.Err, runtime.ErrNotFound) || len(c.Entries) != 0 {
		t.Errorf("Get of a missing block: the hook saw the error %v and the entries %q", c.Err, c.Entries)
	}

	must(t, r.SetRegion(bg, "h1", "south"))
	rec.last(t).check(t, "SetRegion", []any{"h1"}, "region", "version")

	i, err := r.AppendRounds(bg, "h1", model.Round{Serial: "h1-s2"})
	must(t, err)
	if i != 2 {
		t.Fatalf("AppendRounds returned %d, want 2", i)
	}
	rec.last(t).check(t, "AppendRounds", []any{"h1"}, "rounds[2]", "rounds", "version")

	must(t, r.Update(bg, "h1", model.MatchUpdate{Level: runtime.Ptr(3), RoundsAt: map[int]model.Round{0: {Serial: "h1-s0b"}}}))
	rec.last(t).check(t, "Update", []any{"h1"}, "level", "rounds[0]", "version")

	rounds, err := r.ListRounds(bg, "h1", runtime.PageRequest{Limit: 2})
	must(t, err)
	rec.last(t).check(t, "ListRounds", []any{"h1"}, "rounds[0]", "rounds[1]")
	_, err = r.ListRounds(bg, "h1", runtime.PageRequest{Limit: 2, Cursor: rounds.Next})
	must(t, err)
	rec.last(t).check(t, "ListRounds", []any{"h1"}, "rounds[2]")

	_, err = r.GetByCode(bg, "code-h1")
	must(t, err)
	rec.last(t).check(t, "GetByCode", []any{"h1"}, matchEntries(3)...)

	must(t, e.Matches.Create(bg, newMatch("h2", 0))) // not through the hook
	_, err = r.List(bg, runtime.PageRequest{Limit: 10})
	must(t, err)
	rec.last(t).check(t, "List", []any{"h1", "h2"}, append(matchEntries(3), matchEntries(0)...)...)

	many, err := r.GetMany(bg, []string{"h2", "none"})
	must(t, err)
	if len(many) != 1 {
		t.Fatalf("GetMany: %v", many)
	}
	rec.last(t).check(t, "GetMany", []any{"h2", "none"}, matchEntries(0)...)

	n := 0
	for _, err := range r.All(bg) {
		must(t, err)
		n++
	}
	if n != 2 {
		t.Fatalf("All yielded %d blocks, want 2", n)
	}
	rec.last(t).check(t, "All", []any{"h1", "h2"}, append(matchEntries(3), matchEntries(0)...)...)

	must(t, r.Delete(bg, "h2"))
	rec.last(t).check(t, "Delete", []any{"h2"})
}

var errRefused = errors.New("refused by the hook")

// testHookRefuses checks that a hook can refuse a call, which then sends
// nothing and writes nothing, and can give next a context of its own.
func testHookRefuses(t *testing.T, e *env) {
	m := e.createMatch(t, "r1", 1)
	rec := &recorder{store: e.h.Caps.Name, refuse: func(op string) error {
		if op == "SetRegion" || op == "All" {
			return errRefused
		}
		return nil
	}}
	r := repos.On(t, e.db, runtime.WithHook(rec.hook)).Matches
	if err := r.SetRegion(bg, "r1", "west"); !errors.Is(err, errRefused) {
		t.Fatalf("SetRegion refused by a hook: %v", err)
	}
	if c := rec.last(t); c.ran || c.RoundTrips != 0 {
		t.Errorf("a refused call ran (%v) or sent %d requests", c.ran, c.RoundTrips)
	}
	e.wantSame(t, "the block after a refused SetRegion", e.getMatch(t, "r1"), m)
	n := 0
	for got, err := range r.All(bg) {
		if got != nil || !errors.Is(err, errRefused) {
			t.Errorf("All refused by a hook yielded %v, %v", got, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("All refused by a hook yielded %d pairs, want 1", n)
	}
	rec.last(t)

	// A hook that gives next a cancelled context: the write fails with it
	// and changes nothing.
	rec = &recorder{store: e.h.Caps.Name, wrap: func(ctx context.Context) context.Context {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		return ctx
	}}
	r = repos.On(t, e.db, runtime.WithHook(rec.hook)).Matches
	if err := r.SetRegion(bg, "r1", "east"); !errors.Is(err, context.Canceled) {
		t.Fatalf("SetRegion with the hook's cancelled context: %v", err)
	}
	if c := rec.last(t); !c.ran || !errors.Is(c.Err, context.Canceled) {
		t.Errorf("the hook saw next called %v, error %v", c.ran, c.Err)
	}
	e.wantSame(t, "the block after a SetRegion with a cancelled context", e.getMatch(t, "r1"), m)

	// Hooks run in the order given, the first outermost.
	var order []string
	mark := func(name string) runtime.Hook {
		return func(ctx context.Context, c *runtime.Call, next func(context.Context) error) error {
			order = append(order, name+" "+c.Op)
			return next(ctx)
		}
	}
	r = repos.On(t, e.db, runtime.WithHook(mark("a")), runtime.WithHook(mark("b"))).Matches
	must(t, r.SetRegion(bg, "r1", "east"))
	if want := []string{"a SetRegion", "b SetRegion"}; !slices.Equal(order, want) {
		t.Errorf("hooks ran in the order %q, want %q", order, want)
	}
}

// sortedKeys are keys in order of their printed forms (List on DynamoDB
// is not in key order).
func sortedKeys(keys []any) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprint(k)
	}
	slices.Sort(out)
	return out
}

// testHooksSeeEveryCall checks that hooks see the calls refused before
// anything is sent (a nil aggregate, a key that is not valid UTF-8), with
// their error, and the number a counter gave a block (a Create, a Put of
// number zero, a CreateMany), not the zero the caller asked for.
func testHooksSeeEveryCall(t *testing.T, e *env) {
	rec := &recorder{store: e.h.Caps.Name}
	rs := repos.On(t, e.db, runtime.WithHook(rec.hook))
	refused := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, runtime.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", op, err)
		}
		c := rec.last(t)
		if c.Op != op || !c.ran || !errors.Is(c.Err, runtime.ErrInvalid) || len(c.Keys) != 0 || len(c.Entries) != 0 {
			t.Errorf("%s: the hook saw Op %q, next called %v, error %v, Keys %v, Entries %q; want %s, called, ErrInvalid, none",
				op, c.Op, c.ran, c.Err, c.Keys, c.Entries, op)
		}
	}
	refused("Create", rs.Matches.Create(bg, nil))
	refused("Put", rs.Matches.Put(bg, nil))
	if err := rs.Matches.SetRegion(bg, "bad\xff", "x"); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("SetRegion of a key not valid UTF-8: %v", err)
	}
	if c := rec.last(t); c.Op != "SetRegion" || !errors.Is(c.Err, runtime.ErrInvalid) {
		t.Errorf("SetRegion of a key not valid UTF-8: the hook saw Op %q, error %v", c.Op, c.Err)
	}

	// Counted keys: the hook sees the number the block got.
	j := &model.Journal{Owner: "o"}
	must(t, rs.Journals.Create(bg, j))
	if c := rec.last(t); j.ID == 0 || !slices.Equal(c.Keys, []any{j.ID}) {
		t.Errorf("Journal Create: the hook saw Keys %v, the block got %v", c.Keys, j.ID)
	}
	p := &model.Journal{Owner: "p"}
	must(t, rs.Journals.Put(bg, p))
	if c := rec.last(t); p.ID == 0 || !slices.Equal(c.Keys, []any{p.ID}) {
		t.Errorf("Journal Put of number zero: the hook saw Keys %v, the block got %v", c.Keys, p.ID)
	}
	r := &model.Reply{Key: model.ReplyKey{Thread: "ht"}, Author: "a"}
	must(t, rs.Replies.Create(bg, r))
	if c := rec.last(t); r.Key.Seq == 0 || !slices.Equal(c.Keys, []any{r.Key}) {
		t.Errorf("Reply Create: the hook saw Keys %v, the block got %v", c.Keys, r.Key)
	}
	js := []*model.Journal{{Owner: "q"}, nil, {Owner: "r"}}
	err := rs.Journals.CreateMany(bg, js)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 1 {
		t.Fatalf("CreateMany with a nil item: %v", err)
	}
	if c := rec.last(t); js[0].ID == 0 || js[2].ID == 0 || !slices.Equal(c.Keys, []any{js[0].ID, js[2].ID}) || !errors.Is(c.Err, runtime.ErrInvalid) {
		t.Errorf("Journal CreateMany: the hook saw Keys %v and error %v, the blocks got %v and %v", c.Keys, c.Err, js[0].ID, js[2].ID)
	}
}
