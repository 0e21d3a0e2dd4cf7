package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// Deadline is the deadline Deadlines gives every operation.
const Deadline = 200 * time.Millisecond

// deadlineSlack is what Deadlines allows on top of the deadline and
// runtime.CleanupTimeout: scheduling on a loaded machine, not a command
// timeout (a call that waits for one, 3 s for go-redis, fails).
const deadlineSlack = 2 * time.Second

// deadlineCleanup is the runtime.CleanupTimeout Deadlines runs with.
const deadlineCleanup = 500 * time.Millisecond

// Deadlines is the deadline test of a store: with the store paused
// (DB.Pause: a stopped server, a held write lock), every repository
// operation with a Deadline deadline (Get, GetMany, Create, Create with a
// counted key, Put, Delete, CreateMany, PutMany, DeleteMany, a setter,
// Update, Append, List, All, GetByF, ListByF, ListElems, Repair (a read
// here: the lookups are healthy), EnsureIndexes) returns within the
// deadline plus runtime.CleanupTimeout (plus 2 s of scheduling slack: the
// machine may be loaded), with an error that is an *runtime.Error and
// matches context.DeadlineExceeded (a read may succeed instead when
// h.PauseReadsPass). The operations run concurrently, each measured from
// its own start. Once the store is resumed, a Repair leaves every lookup
// right and every block readable, and no write lied: one (or a batch
// item) that failed with another error than runtime.ErrUnknownOutcome
// did not take effect, and a batch item reported written did.
//
// The database h.Open returns must be the test's own, with DB.Pause set.
func Deadlines(t *testing.T, h Harness) {
	defer func(d time.Duration) { runtime.CleanupTimeout = d }(runtime.CleanupTimeout)
	runtime.CleanupTimeout = deadlineCleanup

	e := open(t, h, true)
	if e.db.Pause == nil {
		t.Fatalf("storetest: the database of %s has no Pause (Deadlines needs the test's own database)", h.Name)
	}
	// Blocks for the operations to find: m1 (read, set, updated,
	// appended to), m2 (deleted), m3 (replaced).
	for _, id := range []string{"m1", "m2", "m3", "m5", "m6"} {
		e.createMatch(t, id, 2)
	}
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	// A player (no lookup, no counter: its Put is the block write
	// alone, in flight at the deadline), put while paused and put with a
	// context done before.
	players := etfPlayers.On(t, e.db)
	must(t, players.EnsureIndexes(bg))
	for _, id := range []string{"q1", "q2", "q3"} {
		must(t, players.Create(bg, &etf.Player{ID: id, Name: "a"}))
	}
	paused, never := &etf.Player{ID: "q1", Name: "paused"}, &etf.Player{ID: "q1", Name: "never"}
	match := func(id string, ok func(m *model.Match) bool) func() bool {
		return func() bool { m, err := e.Matches.Get(bg, id); return err == nil && ok(m) }
	}
	playerNamed := func(id, n string) func() bool {
		return func() bool { got, err := players.Get(bg, id); return err == nil && got.Name == n }
	}
	named := func(n string) func() bool { return playerNamed("q1", n) }
	gone := func(id string) func() bool {
		return func() bool { _, err := e.Matches.Get(bg, id); return errors.Is(err, runtime.ErrNotFound) }
	}
	exists := func(id string) func() bool { return match(id, func(*model.Match) bool { return true }) }

	// A write's took, when set, reports (once the store is resumed)
	// whether it took effect; a batch's items report it for each item, in
	// batch order. expired runs the call on a context done before it.
	type call struct {
		name    string
		read    bool
		fn      func(ctx context.Context) error
		took    func() bool
		items   []func() bool
		expired bool
	}
	first := func(seq func(yield func(*model.Match, error) bool)) error {
		for _, err := range seq {
			if err != nil {
				return err
			}
		}
		return nil
	}
	page := runtime.PageRequest{Limit: 10}
	put := newMatch("m3", 1)
	put.Region = "east"
	put.Version = 1
	calls := []call{
		{name: "Get", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.Get(ctx, "m1"); return err }},
		{name: "GetMany", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.GetMany(ctx, []string{"m1", "m2"}); return err }},
		{name: "GetByCode", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.GetByCode(ctx, "code-m1"); return err }},
		{name: "ListByTags", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.ListByTags(ctx, "t1", page); return err }},
		{name: "ListByRegionLevel", read: true, fn: func(ctx context.Context) error {
			_, err := e.Matches.ListByRegionLevel(ctx, model.MatchRegionLevelQuery{Region: runtime.Eq("north")}, page)
			return err
		}},
		{name: "ListRounds", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.ListRounds(ctx, "m1", page); return err }},
		{name: "List", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.List(ctx, page); return err }},
		{name: "All", read: true, fn: func(ctx context.Context) error { return first(e.Matches.All(ctx)) }},
		{name: "Create", fn: func(ctx context.Context) error { return e.Matches.Create(ctx, newMatch("m4", 1)) }, took: match("m4", func(*model.Match) bool { return true })},
		{name: "Create (counted key)", read: false, fn: func(ctx context.Context) error {
			return e.Journals.Create(ctx, &model.Journal{Owner: "p", Lines: []model.Line{{Kind: "q"}}})
		}},
		{name: "Put", fn: func(ctx context.Context) error { return e.Matches.Put(ctx, put) }, took: match("m3", func(m *model.Match) bool { return m.Region == "east" })},
		{name: "Delete", fn: func(ctx context.Context) error { return e.Matches.Delete(ctx, "m2") }, took: func() bool {
			_, err := e.Matches.Get(bg, "m2")
			return errors.Is(err, runtime.ErrNotFound)
		}},
		{name: "SetCode", fn: func(ctx context.Context) error { return e.Matches.SetCode(ctx, "m1", "code-m1-new") }, took: match("m1", func(m *model.Match) bool { return m.Code == "code-m1-new" })},
		{name: "SetRegion", fn: func(ctx context.Context) error { return e.Matches.SetRegion(ctx, "m1", "west") }, took: match("m1", func(m *model.Match) bool { return m.Region == "west" })},
		{name: "Update", fn: func(ctx context.Context) error {
			return e.Matches.Update(ctx, "m1", model.MatchUpdate{Level: ptr(9), Tags: ptr([]string{"t2"})})
		}, took: match("m1", func(m *model.Match) bool { return m.Level == 9 })},
		{name: "Put (no lookups)", fn: func(ctx context.Context) error { return players.Put(ctx, paused) }, took: named("paused")},
		{name: "Put (context done before)", fn: func(ctx context.Context) error { return players.Put(ctx, never) }, took: named("never"), expired: true},
		{name: "CreateMany", fn: func(ctx context.Context) error {
			return e.Matches.CreateMany(ctx, []*model.Match{newMatch("m7", 1), newMatch("m8", 1)})
		}, items: []func() bool{exists("m7"), exists("m8")}},
		{name: "PutMany (no lookups)", fn: func(ctx context.Context) error {
			return players.PutMany(ctx, []*etf.Player{{ID: "q2", Name: "many"}, {ID: "q3", Name: "many"}})
		}, items: []func() bool{playerNamed("q2", "many"), playerNamed("q3", "many")}},
		{name: "DeleteMany", fn: func(ctx context.Context) error { return e.Matches.DeleteMany(ctx, []string{"m5", "m6"}) },
			items: []func() bool{gone("m5"), gone("m6")}},
		{name: "AppendRounds", read: false, fn: func(ctx context.Context) error {
			_, err := e.Matches.AppendRounds(ctx, "m1", newRound("m1", 7))
			return err
		}},
		// Repair writes only what it fixes: over these healthy lookups it
		// only reads.
		{name: "Repair", read: true, fn: func(ctx context.Context) error { _, err := e.Matches.Repair(ctx); return err }},
		{name: "EnsureIndexes", read: false, fn: func(ctx context.Context) error { return e.Matches.EnsureIndexes(ctx) }},
	}

	resume := e.db.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			resume()
		}
	}()
	bound := Deadline + runtime.CleanupTimeout + deadlineSlack
	type result struct {
		took time.Duration
		err  error
	}
	results := make([]result, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, Deadline)
			if c.expired {
				ctx, cancel = context.WithDeadline(bg, time.Now().Add(-time.Second))
			}
			defer cancel()
			start := time.Now()
			err := c.fn(ctx)
			results[i] = result{time.Since(start), err}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(bound + 5*time.Second):
		// Hung: resume the store, so that they return (late).
	}
	resume()
	resumed = true
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("%s: operations still running a minute after the store was resumed", h.Name)
	}

	var failures []string
	for i, c := range calls {
		r := results[i]
		var re *runtime.Error
		switch {
		case r.took > bound:
			failures = append(failures, fmt.Sprintf("%s returned after %v (deadline %v, bound %v): %v", c.name, r.took.Round(time.Millisecond), Deadline, bound, r.err))
		case c.expired && r.err != nil && errors.Is(r.err, runtime.ErrUnknownOutcome):
			failures = append(failures, fmt.Sprintf("%s failed with %v: a write never sent has a known outcome (nothing written), not ErrUnknownOutcome", c.name, r.err))
		case r.err == nil && c.read && h.PauseReadsPass:
		case r.err == nil:
			failures = append(failures, fmt.Sprintf("%s returned nil after %v on a paused store", c.name, r.took.Round(time.Millisecond)))
		case !errors.Is(r.err, context.DeadlineExceeded):
			failures = append(failures, fmt.Sprintf("%s failed with %v, not matching context.DeadlineExceeded", c.name, r.err))
		case !errors.As(r.err, &re):
			failures = append(failures, fmt.Sprintf("%s failed with %T %v, not a *runtime.Error", c.name, r.err, r.err))
		default:
			t.Logf("%s: %v after %v", c.name, r.err, r.took.Round(time.Millisecond))
		}
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		t.Errorf("%s, with a %v deadline on a paused store:\n%s", h.Name, Deadline, strings.Join(failures, "\n"))
	}

	// Resumed: what the cut writes left is Repair's; then every block
	// reads and every lookup is right. Commands a paused server had
	// received but not run (the client gave up on them) run once it
	// resumes, so Repair runs until it finds nothing more to fix.
	for name, repair := range map[string]func(context.Context) (runtime.RepairReport, error){
		"Match": e.Matches.Repair, "Journal": e.Journals.Repair, "Card": e.Cards.Repair, "Reply": e.Replies.Repair,
	} {
		for i := 0; ; i++ {
			rep, err := repair(bg)
			if err != nil {
				t.Fatalf("Repair of %s after resuming: %v", name, err)
			}
			if rep.Added == 0 && rep.Removed == 0 && len(rep.Conflicts) == 0 {
				break
			}
			if i == 20 {
				t.Fatalf("Repair of %s after resuming still fixes entries after 20 runs: %v", name, rep)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A write that took effect may not have said it failed for sure:
	// sent and unanswered at its deadline, its outcome is unknown.
	unknown := 0
	var lies []string
	for i, c := range calls {
		err := results[i].err
		if errors.Is(err, runtime.ErrUnknownOutcome) {
			unknown++
		}
		if c.items != nil {
			lies = append(lies, batchLies(c.name, err, c.items)...)
			continue
		}
		if c.took == nil || err == nil || errors.Is(err, runtime.ErrUnknownOutcome) || !c.took() {
			continue
		}
		if c.expired {
			lies = append(lies, fmt.Sprintf("%s, called with its context done, took effect (%v)", c.name, err))
		} else {
			lies = append(lies, fmt.Sprintf("%s failed with %v, not runtime.ErrUnknownOutcome, and took effect", c.name, err))
		}
	}
	t.Logf("%d writes returned runtime.ErrUnknownOutcome; %d returned another error and took effect", unknown, len(lies))
	if len(lies) > 0 {
		t.Errorf("%s, writes in flight at their deadline:\n%s", h.Name, strings.Join(lies, "\n"))
	}
	for _, id := range []string{"m1", "m3"} {
		e.getMatch(t, id)
	}
	e.snapshot(t)
	e.lookupsClean(t, "resuming")
	deadlinesMidBatch(t, h, e)
}

// midBatch is the number of items of each batch deadlinesMidBatch cuts.
const midBatch = 60

// deadlinesMidBatch cuts batches in the middle: each of a DeleteMany, a
// PutMany and a CreateMany of midBatch blocks (of an aggregate with
// lookups, so that most stores write them item by item) runs with a
// 1 s deadline, and the store is paused as soon as its first item has
// taken effect, until the call has returned. Then no item lies: one
// reported failed (not with runtime.ErrUnknownOutcome) has not taken
// effect, one reported written has; and after Repair every lookup is
// right.
func deadlinesMidBatch(t *testing.T, h Harness, e *env) {
	name := func(p string, i int) string { return fmt.Sprintf("%s%03d", p, i) }
	seed := make([]*model.Match, 0, 2*midBatch)
	for i := range midBatch {
		seed = append(seed, newMatch(name("d", i), 1), newMatch(name("p", i), 1))
	}
	must(t, e.Matches.CreateMany(bg, seed))
	gone := func(id string) func() bool {
		return func() bool { _, err := e.Matches.Get(bg, id); return errors.Is(err, runtime.ErrNotFound) }
	}
	is := func(id, region string) func() bool {
		return func() bool { m, err := e.Matches.Get(bg, id); return err == nil && m.Region == region }
	}
	type batch struct {
		name  string
		fn    func(ctx context.Context) error
		items []func() bool
	}
	var del, put, create batch
	del.name, put.name, create.name = "DeleteMany", "PutMany", "CreateMany"
	var dels []string
	var puts, creates []*model.Match
	for i := range midBatch {
		dels = append(dels, name("d", i))
		del.items = append(del.items, gone(name("d", i)))
		m := newMatch(name("p", i), 1)
		m.Region, m.Version = "cut", 1
		puts = append(puts, m)
		put.items = append(put.items, is(m.ID, "cut"))
		creates = append(creates, newMatch(name("c", i), 1))
		create.items = append(create.items, is(name("c", i), "north"))
	}
	del.fn = func(ctx context.Context) error { return e.Matches.DeleteMany(ctx, dels) }
	put.fn = func(ctx context.Context) error { return e.Matches.PutMany(ctx, puts) }
	create.fn = func(ctx context.Context) error { return e.Matches.CreateMany(ctx, creates) }

	var lies []string
	cut := 0
	for _, b := range []batch{del, put, create} {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, time.Second)
			defer cancel()
			done <- b.fn(ctx)
		}()
		// Paused once the first item shows (or the batch is over).
		var err error
		returned := false
	wait:
		for !b.items[0]() {
			select {
			case err = <-done:
				returned = true
				break wait
			case <-time.After(time.Millisecond):
			}
		}
		resume := e.db.Pause(t)
		if !returned {
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				resume()
				t.Fatalf("%s: %s still running a minute after its 1 s deadline", h.Name, b.name)
			}
		}
		resume()
		if err != nil {
			cut++
			t.Logf("%s cut: %.300v", b.name, err)
		}
		// Commands a paused server had received run once it resumes.
		time.Sleep(100 * time.Millisecond)
		lies = append(lies, batchLies(b.name, err, b.items)...)
	}
	t.Logf("%d of 3 batches cut by the pause", cut)
	if len(lies) > 0 {
		t.Errorf("%s, batches cut by a pause:\n%s", h.Name, strings.Join(lies, "\n"))
	}
	for i := 0; ; i++ {
		rep, err := e.Matches.Repair(bg)
		must(t, err)
		if rep.Added == 0 && rep.Removed == 0 && len(rep.Conflicts) == 0 {
			break
		}
		if i == 20 {
			t.Fatalf("Repair of Match after the cut batches still fixes entries after 20 runs: %v", rep)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.snapshot(t)
}

// batchLies checks a batch write's outcome item by item against took (one
// per item, in batch order): an item reported failed, not with
// runtime.ErrUnknownOutcome, that took effect, and an item reported
// written that did not. err is the batch's error: a *runtime.BatchError
// names its failed items; any other error is the whole batch's.
func batchLies(name string, err error, took []func() bool) []string {
	failed := make([]error, len(took))
	var be *runtime.BatchError
	switch {
	case errors.As(err, &be):
		for _, it := range be.Items {
			failed[it.Index] = it.Err
		}
	case err != nil:
		for i := range failed {
			failed[i] = err
		}
	}
	var lies []string
	for i, ok := range took {
		switch did := ok(); {
		case failed[i] == nil && !did:
			lies = append(lies, fmt.Sprintf("%s item %d reported written and did not take effect", name, i))
		case failed[i] != nil && did && !errors.Is(failed[i], runtime.ErrUnknownOutcome):
			lies = append(lies, fmt.Sprintf("%s item %d failed with %v, not runtime.ErrUnknownOutcome, and took effect", name, i, failed[i]))
		}
	}
	return lies
}
