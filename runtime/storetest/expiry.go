package storetest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
)

// Expiry (noam:"expires", package expiring), by the repository's clock:
// from the moment a block's expires time passes, every read leaves it out
// (Get, GetMany, GetBy, the listings with their pages still full, All,
// the partition's elements, the counts), a Create or a Put of a new block
// takes its key and its unique values, a write of its expires entry fails
// with ErrNotFound, the zero time never expires, and Sweep removes the
// expired blocks with their index entries, a bounded batch at a time.
// The clock is set decades ahead, so that the stores' native expiry (by
// the real clock) leaves the blocks to the repository.
var expiryTests = []subtest{
	{name: "Expiry", startUp: true, fn: testExpiry},
	{name: "ExpiryWrites", startUp: true, fn: testExpiryWrites},
	{name: "ExpiryPassedOnTheServer", startUp: true, fn: testExpiryPassedOnTheServer},
	{name: "ExpiryUniqueFreedOnTheServer", startUp: true, fn: testExpiryUniqueFreedOnTheServer},
	{name: "ExpiryDeletes", startUp: true, fn: testExpiryDeletes},
	{name: "ExpiryDeletesOnTheServer", startUp: true, fn: testExpiryDeletesOnTheServer},
}

// expiryBase is the test's moment 0: far ahead of the real clock.
var expiryBase = time.Date(2061, 3, 4, 5, 0, 0, 0, time.UTC)

// at is minute m after expiryBase.
func at(m int) time.Time { return expiryBase.Add(time.Duration(m) * time.Minute) }

// expiryRepos makes the expiring model's repositories over db, with clock
// c, their indexes ensured.
func expiryRepos(t *testing.T, db DB, c *testClock) (expiring.SessionRepository, expiring.LeaseRepository, expiring.TicketRepository) {
	t.Helper()
	opts := []runtime.Option{runtime.WithClock(c.Now)}
	r := expiryModel.On(t, db, opts...)
	sessions, leases, tickets := r.sessions, r.leases, r.tickets
	must(t, sessions.EnsureIndexes(bg))
	must(t, leases.EnsureIndexes(bg))
	must(t, tickets.EnsureIndexes(bg))
	return sessions, leases, tickets
}

// sessionIDs returns the sorted keys of ss.
func sessionIDs(ss []*expiring.Session) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	sort.Strings(out)
	return out
}

// allSessions reads every session through All.
func allSessions(t *testing.T, sessions expiring.SessionRepository) []*expiring.Session {
	t.Helper()
	var out []*expiring.Session
	for s, err := range sessions.All(bg) {
		must(t, err)
		out = append(out, s)
	}
	return out
}

// rawOf returns the runtime.Repo of repo, a generated repository of
// package expiring, failing t if it does not reveal it.
func rawOf[T any](t *testing.T, repo any) runtime.Repo[T, string] {
	t.Helper()
	r, ok := repoOf[T, string](repo)
	if !ok {
		t.Fatalf("the %T repository does not reveal its runtime.Repo", repo)
	}
	return r
}

// wantCount fails t unless count returned want.
func wantExpiryCount(t *testing.T, what string, n int64, err error, want int64) {
	t.Helper()
	must(t, err)
	if n != want {
		t.Errorf("%s = %d, want %d", what, n, want)
	}
}

// wantRepaired fails t if Repair of a repository finds lookup entries to fix.
func wantRepaired(t *testing.T, what string, repair func(context.Context) (runtime.RepairReport, error)) {
	t.Helper()
	rep, err := repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Errorf("%s: Repair found lookup entries to fix: %+v", what, rep)
	}
}

func testExpiry(t *testing.T, e *env) {
	c := &testClock{now: at(0)}
	sessions, leases, tickets := expiryRepos(t, e.db, c)
	raw := rawOf[expiring.Session](t, sessions)

	// s1 expires at minute 10, s2 never, s3 at minute 20.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s1", Token: "t1", User: "u", Expires: at(10)}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s2", Token: "t2", User: "u"}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s3", Token: "t3", User: "u", Expires: at(20)}))
	for _, ev := range []string{"e0", "e1"} {
		if _, err := sessions.AppendEvents(bg, "s1", ev); err != nil {
			t.Fatal(err)
		}
	}

	// The store's conditional delete: a live block and a missing one are
	// no error and stay as they are.
	for _, id := range []string{"s1", "nope"} {
		if removed, err := raw.S.DeleteExpired(bg, id, at(9)); err != nil || removed {
			t.Fatalf("DeleteExpired(%s) of a live or missing block = %v, %v; want false, nil", id, removed, err)
		}
	}

	// Before the moment (a millisecond before) s1 is there.
	c.now = at(10).Add(-time.Millisecond)
	got, err := sessions.Get(bg, "s1")
	must(t, err)
	if !got.Expires.Equal(at(10)) {
		t.Errorf("Get: expires %v, want %v", got.Expires, at(10))
	}
	_, err = sessions.GetByToken(bg, "t1")
	must(t, err)
	events := collect(t, 10, func(r runtime.PageRequest) (runtime.Page[string], error) { return sessions.ListEvents(bg, "s1", r) })
	eqStrings(t, "ListEvents before the moment", events, "e0", "e1")
	eqStrings(t, "ListByUser before the moment", sessionIDs(collect(t, 10, func(r runtime.PageRequest) (runtime.Page[*expiring.Session], error) {
		return sessions.ListByUser(bg, "u", r)
	})), "s1", "s2", "s3")
	n, err := sessions.Count(bg)
	wantExpiryCount(t, "Count before the moment", n, err, 3)

	// From the moment on (expires == now) s1 is absent from every read.
	c.now = at(10)
	wantErr(t, func() error { _, err := sessions.Get(bg, "s1"); return err }(), runtime.ErrNotFound, "Get of an expired block")
	wantErr(t, func() error { _, err := sessions.GetByToken(bg, "t1"); return err }(), runtime.ErrNotFound, "GetByToken of an expired block")
	many, err := sessions.GetMany(bg, []string{"s1", "s2"})
	must(t, err)
	if _, ok := many["s1"]; ok || len(many) != 1 {
		t.Errorf("GetMany returned %d sessions (s1 among them: %v), want s2 alone", len(many), ok)
	}
	wantErr(t, func() error { _, err := sessions.ListEvents(bg, "s1", runtime.PageRequest{}); return err }(), runtime.ErrNotFound, "ListEvents of an expired block")
	for _, limit := range []int{1, 2, 10} {
		eqStrings(t, "List", sessionIDs(collect(t, limit, func(r runtime.PageRequest) (runtime.Page[*expiring.Session], error) { return sessions.List(bg, r) })), "s2", "s3")
		eqStrings(t, "ListByUser", sessionIDs(collect(t, limit, func(r runtime.PageRequest) (runtime.Page[*expiring.Session], error) {
			return sessions.ListByUser(bg, "u", r)
		})), "s2", "s3")
		eqStrings(t, "ListByToken t1", sessionIDs(collect(t, limit, func(r runtime.PageRequest) (runtime.Page[*expiring.Session], error) {
			return sessions.ListByToken(bg, "t1", r)
		})))
	}
	// A page is full while live blocks follow the expired one.
	page, err := sessions.List(bg, runtime.PageRequest{Limit: 2})
	must(t, err)
	if len(page.Items) != 2 {
		t.Errorf("List with limit 2 over 1 expired and 2 live blocks: a page of %d", len(page.Items))
	}
	page, err = sessions.ListByUser(bg, "u", runtime.PageRequest{Limit: 2})
	must(t, err)
	if len(page.Items) != 2 {
		t.Errorf("ListByUser with limit 2 over 1 expired and 2 live blocks: a page of %d", len(page.Items))
	}
	eqStrings(t, "All", sessionIDs(allSessions(t, sessions)), "s2", "s3")
	n, err = sessions.Count(bg)
	wantExpiryCount(t, "Count", n, err, 2)
	n, err = sessions.CountByUser(bg, "u")
	wantExpiryCount(t, "CountByUser", n, err, 2)
	n, err = sessions.CountByToken(bg, "t1")
	wantExpiryCount(t, "CountByToken of the expired block's value", n, err, 0)
	expiryCounts(t, e.h, c, sessions, "sessions", []expiryCount{
		{what: "Count a millisecond before s1's moment", at: at(10).Add(-time.Millisecond), n: 3},
		{what: "Count at s1's moment", at: at(10), n: 2},
		{what: "CountByUser u a millisecond before s1's moment", at: at(10).Add(-time.Millisecond), lookup: "user", value: "u", n: 3},
		{what: "CountByUser u at s1's moment", at: at(10), lookup: "user", value: "u", n: 2},
		{what: "CountByUser u at s3's moment", at: at(20), lookup: "user", value: "u", n: 1},
		{what: "CountByToken t1 at s1's moment", at: at(10), lookup: "token", value: "t1", n: 0},
		{what: "CountByToken t2 (never expires) far ahead", at: at(100000), lookup: "token", value: "t2", n: 1},
	})
	c.now = at(10)

	// Reads leave the block in the store; the store's DeleteExpired
	// removes it only once it has expired at the time it is given.
	if _, err := raw.S.Get(bg, "s1"); err != nil {
		t.Fatalf("the store no longer holds s1 before anything removed it: %v", err)
	}
	if removed, err := raw.S.DeleteExpired(bg, "s1", at(10).Add(-time.Millisecond)); err != nil || removed {
		t.Fatalf("DeleteExpired of s1 before its moment = %v, %v; want false, nil", removed, err)
	}
	if _, err := raw.S.Get(bg, "s1"); err != nil {
		t.Fatalf("DeleteExpired before the moment removed s1: %v", err)
	}

	// A write of the expires entry of an expired block fails: renewing it
	// would bring back what has gone. It removes the block.
	renewed := at(60)
	wantErr(t, sessions.SetExpires(bg, "s1", at(60)), runtime.ErrNotFound, "SetExpires of an expired block")
	wantErr(t, sessions.Update(bg, "s1", expiring.SessionUpdate{Expires: &renewed}), runtime.ErrNotFound, "Update of the expires of an expired block")
	wantErr(t, func() error { _, err := raw.S.Get(bg, "s1"); return err }(), runtime.ErrNotFound, "the store's Get of s1 after SetExpires removed it")
	if removed, err := raw.S.DeleteExpired(bg, "s1", at(10)); err != nil || removed {
		t.Fatalf("DeleteExpired of a removed block = %v, %v; want false, nil", removed, err)
	}
	wantRepaired(t, "after SetExpires removed s1", sessions.Repair)

	// A live block's expiry moves, and the zero time clears it.
	must(t, sessions.SetExpires(bg, "s2", at(30)))
	c.now = at(30)
	wantErr(t, func() error { _, err := sessions.Get(bg, "s2"); return err }(), runtime.ErrNotFound, "Get of s2 after SetExpires moved its expiry")
	c.now = at(29)
	must(t, sessions.SetExpires(bg, "s2", time.Time{}))
	c.now = at(100000)
	_, err = sessions.Get(bg, "s2")
	must(t, err)

	// A Create of an expired block's key takes it, its unique value with
	// it; the new block starts at version 1.
	c.now = at(20)
	s3 := &expiring.Session{ID: "s3", Token: "t3", User: "v"}
	must(t, sessions.Create(bg, s3))
	got, err = sessions.Get(bg, "s3")
	must(t, err)
	if got.User != "v" || got.Version != 1 || !got.Expires.IsZero() {
		t.Errorf("the new s3 reads %+v, want user v, version 1, no expiry", got)
	}
	// A Create of another key with a unique value an expired block holds.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s4", Token: "t4", User: "u", Expires: at(25)}))
	c.now = at(25)
	must(t, sessions.Create(bg, &expiring.Session{ID: "s5", Token: "t4", User: "w"}))
	got, err = sessions.GetByToken(bg, "t4")
	must(t, err)
	if got.ID != "s5" {
		t.Errorf("GetByToken(t4) = %s, want s5", got.ID)
	}
	wantErr(t, func() error { _, err := raw.S.Get(bg, "s4"); return err }(), runtime.ErrNotFound, "the store's Get of s4, which held t4")
	// A Put of a new block (NotStored) over an expired one.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s6", Token: "t6", User: "u", Expires: at(26)}))
	c.now = at(26)
	s6 := &expiring.Session{ID: "s6", Token: "t6", User: "x", Version: runtime.NotStored}
	must(t, sessions.Put(bg, s6))
	if s6.Version != 1 {
		t.Errorf("Put over an expired block: version %d, want 1", s6.Version)
	}
	// A live block is still in the way.
	wantErr(t, sessions.Create(bg, &expiring.Session{ID: "s6", Token: "t7"}), runtime.ErrDuplicate, "Create of a live block's key")
	wantErr(t, sessions.Create(bg, &expiring.Session{ID: "s7", Token: "t6"}), runtime.ErrDuplicate, "Create with a live block's unique value")
	wantRepaired(t, "after the writes over expired blocks", sessions.Repair)

	// Sweep removes the expired blocks with their index entries, Limit
	// blocks per call, resuming where the last one stopped.
	expired := []string{"x1", "x2", "x3", "x4", "x5"}
	for i, id := range expired {
		must(t, sessions.Create(bg, &expiring.Session{ID: id, Token: "tx" + id, User: "u", Expires: at(40 + i)}))
	}
	if _, err := sessions.AppendEvents(bg, "x1", "e"); err != nil {
		t.Fatal(err)
	}
	c.now = at(50)
	live := sessionIDs(allSessions(t, sessions))
	eqStrings(t, "All before Sweep", live, "s2", "s3", "s5", "s6")
	var total runtime.SweepReport
	resume := ""
	for calls := 0; ; calls++ {
		if calls > 20 {
			t.Fatal("Sweep does not end")
		}
		rep, err := sessions.Sweep(bg, runtime.SweepOptions{Batch: 1, Limit: 3, Resume: resume})
		must(t, err)
		if rep.Scanned > 3 {
			t.Fatalf("Sweep with Limit 3 scanned %d blocks", rep.Scanned)
		}
		total.Scanned += rep.Scanned
		total.Deleted += rep.Deleted
		if rep.Resume == "" {
			break
		}
		resume = rep.Resume
	}
	if total.Deleted != len(expired) || total.Scanned != len(expired)+len(live) {
		t.Errorf("Sweep scanned %d blocks and deleted %d, want %d and %d", total.Scanned, total.Deleted, len(expired)+len(live), len(expired))
	}
	for _, id := range expired {
		wantErr(t, func() error { _, err := raw.S.Get(bg, id); return err }(), runtime.ErrNotFound, "the store's Get of a swept block")
		wantErr(t, func() error { _, err := raw.S.Layout(bg, id); return err }(), runtime.ErrNotFound, "the Layout of a swept block")
	}
	wantRepaired(t, "after Sweep", sessions.Repair)
	rep, err := sessions.Sweep(bg, runtime.SweepOptions{})
	must(t, err)
	if rep.Deleted != 0 || rep.Resume != "" {
		t.Errorf("a second Sweep: %+v, want nothing deleted", rep)
	}
	eqStrings(t, "All after Sweep", sessionIDs(allSessions(t, sessions)), live...)
	n, err = sessions.CountByUser(bg, "u")
	wantExpiryCount(t, "CountByUser after Sweep", n, err, 1)

	// An EAO aggregate: the expires field in the root entry.
	testExpiryEAO(t, e.h, c, leases)
	testExpiryNoLookups(t, e.h, c, tickets)
}

// testExpiryNoLookups: an aggregate without lookups or version, whose
// blocks the stores delete without index entries.
func testExpiryNoLookups(t *testing.T, h Harness, c *testClock, tickets expiring.TicketRepository) {
	raw := rawOf[expiring.Ticket](t, tickets)
	c.now = at(500)
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k1", Seat: "a", Expires: at(510)}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k2", Seat: "b", Expires: at(520)}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k3", Seat: "c"}))
	if removed, err := raw.S.DeleteExpired(bg, "k1", at(509)); err != nil || removed {
		t.Fatalf("DeleteExpired of a live ticket = %v, %v; want false, nil", removed, err)
	}
	expiryCounts(t, h, c, tickets, "tickets", []expiryCount{
		{what: "Count of tickets before k1's moment", at: at(509), n: 3},
		{what: "Count of tickets at k1's moment", at: at(510), n: 2},
		{what: "Count of tickets at k2's moment", at: at(520), n: 1},
	})
	c.now = at(510)
	wantErr(t, func() error { _, err := tickets.Get(bg, "k1"); return err }(), runtime.ErrNotFound, "Get of an expired ticket")
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k1", Seat: "new"}))
	got, err := tickets.Get(bg, "k1")
	must(t, err)
	if got.Seat != "new" {
		t.Errorf("the new k1 reads %+v", got)
	}
	c.now = at(520)
	wantErr(t, tickets.SetExpires(bg, "k2", at(600)), runtime.ErrNotFound, "SetExpires of an expired ticket")
	wantErr(t, func() error { _, err := raw.S.Get(bg, "k2"); return err }(), runtime.ErrNotFound, "the store's Get of k2 after SetExpires removed it")
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k4", Seat: "d", Expires: at(530)}))
	c.now = at(530)
	rep, err := tickets.Sweep(bg, runtime.SweepOptions{})
	must(t, err)
	if rep.Deleted != 1 || rep.Scanned != 3 {
		t.Errorf("Sweep of tickets: %+v, want 3 scanned and k4 deleted", rep)
	}
	wantErr(t, func() error { _, err := raw.S.Get(bg, "k4"); return err }(), runtime.ErrNotFound, "the store's Get of a swept ticket")
}

func testExpiryEAO(t *testing.T, h Harness, c *testClock, leases expiring.LeaseRepository) {
	c.now = at(200)
	must(t, leases.Create(bg, &expiring.Lease{ID: "l1", Holder: "h1", Until: at(210)}))
	must(t, leases.Create(bg, &expiring.Lease{ID: "l2", Holder: "h2", Until: at(220)}))
	must(t, leases.Create(bg, &expiring.Lease{ID: "l3", Holder: "h3"}))
	c.now = at(210)
	wantErr(t, func() error { _, err := leases.Get(bg, "l1"); return err }(), runtime.ErrNotFound, "Get of an expired lease")
	wantErr(t, func() error { _, err := leases.GetByHolder(bg, "h1"); return err }(), runtime.ErrNotFound, "GetByHolder of an expired lease")
	n, err := leases.Count(bg)
	wantExpiryCount(t, "Count of leases", n, err, 2)
	expiryCounts(t, h, c, leases, "leases", []expiryCount{
		{what: "Count of leases at l1's moment", at: at(210), n: 2},
		{what: "Count of leases before l1's moment", at: at(210).Add(-time.Millisecond), n: 3},
		{what: "CountByHolder h1 at l1's moment", at: at(210), lookup: "holder", value: "h1", n: 0},
		{what: "CountByHolder h2 at l1's moment", at: at(210), lookup: "holder", value: "h2", n: 1},
	})
	c.now = at(210)
	// Another lease takes h1.
	must(t, leases.Create(bg, &expiring.Lease{ID: "l4", Holder: "h1", Until: at(300)}))
	got, err := leases.GetByHolder(bg, "h1")
	must(t, err)
	if got.ID != "l4" {
		t.Errorf("GetByHolder(h1) = %s, want l4", got.ID)
	}
	// A Put (EAO has no setters) renews a live lease.
	must(t, leases.Put(bg, &expiring.Lease{ID: "l3", Holder: "h3", Until: at(230)}))
	c.now = at(230)
	var ids []string
	for l, err := range leases.All(bg) {
		must(t, err)
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	eqStrings(t, "All leases", ids, "l4")
	rep, err := leases.Sweep(bg, runtime.SweepOptions{})
	must(t, err)
	if rep.Deleted != 2 {
		t.Errorf("Sweep of leases deleted %d, want 2 (l2, l3)", rep.Deleted)
	}
	wantRepaired(t, "leases after Sweep", leases.Repair)
	must(t, leases.Create(bg, &expiring.Lease{ID: "l5", Holder: "h3"}))
}

// expiryCount is one count of an expiring aggregate: Count, or CountBy of
// lookup at value (a string), at time at.
type expiryCount struct {
	what   string
	at     time.Time
	lookup string
	value  string
	n      int64
}

// expiryCounts checks counts of repository repo (a generated repository
// of package expiring, its keys strings) at the times they name, with the
// repository clock c moved there: each is n, whether the store counts it
// natively or the repository through the listing; and a store whose
// harness h says it counts expiring aggregates natively
// (Harness.ExpiringCounts) must
// answer Count, and CountBy of each lookup it keeps atomically with its
// blocks or on a native index, itself (runtime.CountStore), without
// reading the listing. c is left at the last count's time.
func expiryCounts(t *testing.T, h Harness, c *testClock, repo any, what string, counts []expiryCount) {
	t.Helper()
	switch r := repo.(type) {
	case expiring.SessionRepository:
		countExpiring[expiring.Session](t, h, c, r, what, counts)
	case expiring.LeaseRepository:
		countExpiring[expiring.Lease](t, h, c, r, what, counts)
	case expiring.TicketRepository:
		countExpiring[expiring.Ticket](t, h, c, r, what, counts)
	default:
		t.Fatalf("expiryCounts of a %T", repo)
	}
}

func countExpiring[T any](t *testing.T, h Harness, c *testClock, repo any, what string, counts []expiryCount) {
	t.Helper()
	r, ok := repoOf[T, string](repo)
	if !ok {
		t.Fatalf("the %T repository does not reveal its runtime.Repo", repo)
	}
	lookup := func(name string) *runtime.Lookup[T] {
		for _, l := range r.D.Lookups {
			if l.Name == name {
				return l
			}
		}
		t.Fatalf("%s have no lookup %s", what, name)
		return nil
	}
	run := func(repo runtime.Repo[T, string], x expiryCount) int64 {
		t.Helper()
		c.now = x.at
		var n int64
		var err error
		if x.lookup == "" {
			n, err = repo.Count(bg)
		} else {
			n, err = repo.CountBy(bg, "CountBy"+x.lookup, lookup(x.lookup), runtime.NewKeyRange(runtime.AppendString(nil, x.value)))
		}
		must(t, err)
		return n
	}
	clock := runtime.WithClock(c.Now)
	listing := runtime.NewRepo(r.D, runtime.Store[T, string](noCounts[T, string]{r.S}), clock)
	for _, x := range counts {
		if got := run(listing, x); got != x.n {
			t.Errorf("%s: %s through the listing = %d, want %d", what, x.what, got, x.n)
		}
	}
	cs, ok := r.S.(runtime.CountStore[T, string])
	if !ok {
		if h.ExpiringCounts {
			t.Errorf("%s: the harness says the store counts expiring aggregates natively, but it does not count (runtime.CountStore)", h.Name)
		}
		return
	}
	native, _ := r.S.(interface{ Native(name string) bool })
	for _, x := range counts {
		spy := &countSpy[T, string]{Store: r.S, cs: cs}
		if got := run(runtime.NewRepo(r.D, runtime.Store[T, string](spy), clock), x); got != x.n {
			t.Errorf("%s: %s = %d, want %d (counted natively: %v)", what, x.what, got, x.n, len(spy.answered) > 0)
		}
		want := h.ExpiringCounts && (x.lookup == "" || (native != nil && native.Native(x.lookup)) || (native == nil && r.S.Caps().AtomicLookups))
		if want && len(spy.answered) == 0 {
			t.Errorf("%s: %s: the store declined to count natively (it reads the listing), but its harness says it counts expiring aggregates natively", what, x.what)
		}
	}
}

// testExpiryWrites: an expired block that no one has removed yet is
// absent to every write. A Put over it creates the block anew (created
// now; a Put with its version fails as over a missing block), an
// entry-level write of it (setters, appends, Update) fails with
// ErrNotFound and writes nothing, and a unique value it holds is free to
// another block at once, whichever write takes it.
func testExpiryWrites(t *testing.T, e *env) {
	c := &testClock{now: at(0)}
	sessions, leases, tickets := expiryRepos(t, e.db, c)
	rawSessions := rawOf[expiring.Session](t, sessions)
	rawTickets := rawOf[expiring.Ticket](t, tickets)

	// 1. A Put over an expired block is a create.
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k1", Seat: "a", Expires: at(10)}))
	c.now = at(10)
	k1 := &expiring.Ticket{ID: "k1", Seat: "b"}
	must(t, tickets.Put(bg, k1))
	if !k1.Created.Equal(at(10)) {
		t.Errorf("Put over an expired ticket: created %v, want now (%v), not the expired block's", k1.Created, at(10))
	}
	if got, err := tickets.Get(bg, "k1"); err != nil {
		t.Errorf("Get after the Put over an expired ticket: %v", err)
	} else if got.Seat != "b" || !got.Created.Equal(at(10)) {
		t.Errorf("after the Put over an expired ticket, Get reads %+v, want seat b created %v", got, at(10))
	}
	// With a version: a Put with the expired block's version fails as a
	// Put with that version of a missing block does.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s1", Token: "t1", User: "u", Expires: at(20)}))
	c.now = at(20)
	checkErr(t, sessions.Put(bg, &expiring.Session{ID: "s1", Token: "t1", User: "v", Version: 1}), runtime.ErrConflict, "Put with the version of an expired block")
	checkErr(t, sessions.Put(bg, &expiring.Session{ID: "nope", Token: "tn", User: "v", Version: 1}), runtime.ErrConflict, "Put with version 1 of a missing block")
	checkErr(t, func() error { _, err := sessions.Get(bg, "s1"); return err }(), runtime.ErrNotFound, "Get of s1 after the refused Put")
	s1 := &expiring.Session{ID: "s1", Token: "t1", User: "w", Version: runtime.NotStored}
	if checkErr(t, sessions.Put(bg, s1), nil, "Put (NotStored) over an expired block") && s1.Version != 1 {
		t.Errorf("Put (NotStored) over an expired block: version %d, want 1", s1.Version)
	}

	// 2. Entry-level writes of an expired block fail with ErrNotFound
	// and write nothing.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s2", Token: "t2", User: "u", Expires: at(30)}))
	if _, err := sessions.AppendEvents(bg, "s2", "e0"); err != nil {
		t.Fatal(err)
	}
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k2", Seat: "a", Expires: at(30)}))
	c.now = at(30)
	user, token := "x", "t2x"
	checkErr(t, sessions.SetUser(bg, "s2", "x"), runtime.ErrNotFound, "SetUser of an expired block")
	checkErr(t, sessions.SetToken(bg, "s2", "t2x"), runtime.ErrNotFound, "SetToken of an expired block")
	checkErr(t, func() error { _, err := sessions.AppendEvents(bg, "s2", "e1"); return err }(), runtime.ErrNotFound, "AppendEvents of an expired block")
	checkErr(t, sessions.SetEventsAt(bg, "s2", 0, "ex"), runtime.ErrNotFound, "SetEventsAt of an expired block")
	checkErr(t, sessions.Update(bg, "s2", expiring.SessionUpdate{User: &user, Token: &token}), runtime.ErrNotFound, "Update of an expired block")
	checkErr(t, sessions.Update(bg, "s2", expiring.SessionUpdate{User: &user, IfVersion: 2}), runtime.ErrNotFound, "Update with the version of an expired block")
	checkErr(t, tickets.SetSeat(bg, "k2", "b"), runtime.ErrNotFound, "SetSeat of an expired ticket")
	seat := "c"
	checkErr(t, tickets.Update(bg, "k2", expiring.TicketUpdate{Seat: &seat}), runtime.ErrNotFound, "Update of an expired ticket")
	// Nothing written: the block, if still stored, is as it was.
	if got, err := rawSessions.S.Get(bg, "s2"); err == nil {
		if got.User != "u" || got.Token != "t2" || got.Version != 2 || !slices.Equal(got.Events, []string{"e0"}) {
			t.Errorf("the writes of an expired block wrote into it: the store holds %+v", got)
		}
	} else {
		checkErr(t, err, runtime.ErrNotFound, "the store's Get of s2")
	}
	if got, err := rawTickets.S.Get(bg, "k2"); err == nil {
		if got.Seat != "a" {
			t.Errorf("the writes of an expired ticket wrote into it: the store holds %+v", got)
		}
	} else {
		checkErr(t, err, runtime.ErrNotFound, "the store's Get of k2")
	}
	// The value the refused SetToken named is free.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s2x", Token: "t2x", User: "u"}))

	// 3. A unique value held by an expired block is free at once, to a
	// Create, a Put and an entry-level write of another block.
	c.now = at(40)
	must(t, sessions.Create(bg, &expiring.Session{ID: "s3", Token: "t3", User: "u", Expires: at(50)}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s4", Token: "t4", User: "u", Expires: at(50)}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s5", Token: "t5", User: "u", Expires: at(50)}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s6", Token: "t6", User: "u"}))
	must(t, leases.Create(bg, &expiring.Lease{ID: "l1", Holder: "h1", Until: at(50)}))
	c.now = at(50)
	checkErr(t, sessions.Create(bg, &expiring.Session{ID: "s3n", Token: "t3", User: "v"}), nil, "Create with the unique value of an expired block")
	checkErr(t, sessions.Put(bg, &expiring.Session{ID: "s4n", Token: "t4", User: "v"}), nil, "Put with the unique value of an expired block")
	checkErr(t, sessions.SetToken(bg, "s6", "t5"), nil, "SetToken to the unique value of an expired block")
	checkErr(t, leases.Put(bg, &expiring.Lease{ID: "l2", Holder: "h1"}), nil, "Put of a lease with the unique value of an expired one")
	for token, want := range map[string]string{"t3": "s3n", "t4": "s4n", "t5": "s6"} {
		if got, err := sessions.GetByToken(bg, token); err != nil {
			t.Errorf("GetByToken(%s): %v, want %s", token, err, want)
		} else if got.ID != want {
			t.Errorf("GetByToken(%s) = %s, want %s", token, got.ID, want)
		}
	}
	if got, err := leases.GetByHolder(bg, "h1"); err != nil || got.ID != "l2" {
		t.Errorf("GetByHolder(h1) = %v, %v; want l2", got, err)
	}

	// 4. PutMany too: a block of the batch over an expired one is
	// created anew, and one with the expired block's version fails as
	// over a missing block, the others written.
	c.now = at(60)
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k3", Seat: "a", Expires: at(70)}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k4", Seat: "a"}))
	must(t, sessions.Create(bg, &expiring.Session{ID: "s7", Token: "t7", User: "u", Expires: at(70)}))
	c.now = at(70)
	k3, k4 := &expiring.Ticket{ID: "k3", Seat: "b"}, &expiring.Ticket{ID: "k4", Seat: "b"}
	must(t, tickets.PutMany(bg, []*expiring.Ticket{k3, k4}))
	if !k3.Created.Equal(at(70)) {
		t.Errorf("PutMany over an expired ticket: created %v, want now (%v), not the expired block's", k3.Created, at(70))
	}
	if !k4.Created.Equal(at(60)) {
		t.Errorf("PutMany over a live ticket: created %v, want the stored %v", k4.Created, at(60))
	}
	err := sessions.PutMany(bg, []*expiring.Session{
		{ID: "s7", Token: "t7", User: "v", Version: 1},
		{ID: "s8", Token: "t8", User: "v"},
	})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 0 || !errors.Is(be.Items[0].Err, runtime.ErrConflict) {
		t.Errorf("PutMany with the version of an expired block: %v, want a BatchError with item 0 ErrConflict", err)
	}
	checkErr(t, func() error { _, err := sessions.Get(bg, "s7"); return err }(), runtime.ErrNotFound, "Get of s7 after the refused PutMany item")
	if got, err := sessions.Get(bg, "s8"); err != nil || got.User != "v" {
		t.Errorf("Get of s8, written by the same PutMany: %v %v", got, err)
	}

	wantRepaired(t, "sessions after the writes over expired blocks", sessions.Repair)
	wantRepaired(t, "leases after the writes over expired blocks", leases.Repair)
}

// testExpiryPassedOnTheServer: with the real clock, a block written with
// an expires time already past (an aggregate ended at once, or written
// late) is absent from the write on: Get, GetBy and the listing leave it
// out, an entry-level write fails with ErrNotFound and leaves nothing
// behind, and its key takes a new block (ExpiryUniqueFreedOnTheServer
// reuses unique values). A store whose native expiry
// removes it at once (Redis's PEXPIREAT of a past time) must remove it
// whole, leaving no stray entry that reads as a block of zero fields.
func testExpiryPassedOnTheServer(t *testing.T, e *env) {
	r := expiryModel.On(t, e.db)
	sessions, leases, tickets := r.sessions, r.leases, r.tickets
	must(t, sessions.EnsureIndexes(bg))
	must(t, leases.EnsureIndexes(bg))
	must(t, tickets.EnsureIndexes(bg))
	past := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)

	absent := func(what string, get func() error, write func() error) {
		t.Helper()
		if err := get(); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s: Get = %v, want ErrNotFound", what, err)
		}
		if err := write(); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s: an entry-level write = %v, want ErrNotFound", what, err)
		}
		if err := get(); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s: Get after the refused write = %v, want ErrNotFound", what, err)
		}
	}
	getSession := func() error { _, err := sessions.Get(bg, "s"); return err }
	setUser := func() error { return sessions.SetUser(bg, "s", "eve") }

	// ETF with a partition and lookups: created expired, ended by
	// SetExpires, put expired.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "p1", User: "ann", Events: []string{"a"}, Expires: past}))
	absent("a session created expired", getSession, setUser)
	must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "p2", User: "ann", Expires: later}))
	must(t, sessions.SetExpires(bg, "s", past))
	absent("a session ended with SetExpires", getSession, setUser)
	must(t, sessions.Put(bg, &expiring.Session{ID: "s", Token: "p3", User: "bob", Expires: past}))
	absent("a session put expired", getSession, func() error { _, err := sessions.AppendEvents(bg, "s", "b"); return err })
	if _, err := sessions.GetByToken(bg, "p3"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByToken of the expired session's token = %v, want ErrNotFound", err)
	}
	if got := sessionIDs(allSessions(t, sessions)); len(got) != 0 {
		t.Fatalf("All lists %v, want no session", got)
	}
	// The key takes a new block, whole.
	must(t, sessions.Create(bg, &expiring.Session{ID: "s", Token: "p4", User: "cy", Expires: later}))
	got, err := sessions.Get(bg, "s")
	must(t, err)
	if got.Token != "p4" || got.User != "cy" || len(got.Events) != 0 || !got.Expires.Equal(later) {
		t.Fatalf("the new session reads %+v", got)
	}

	// EAO (no entry-level write: the lookup read stands for it), then a
	// new block in its key.
	must(t, leases.Create(bg, &expiring.Lease{ID: "l", Holder: "h1", Until: past}))
	absent("a lease created expired", func() error { _, err := leases.Get(bg, "l"); return err },
		func() error { _, err := leases.GetByHolder(bg, "h1"); return err })
	must(t, leases.Create(bg, &expiring.Lease{ID: "l", Holder: "h2", Until: later}))
	if l, err := leases.Get(bg, "l"); err != nil || l.Holder != "h2" {
		t.Fatalf("the new lease reads %+v, %v", l, err)
	}

	// No lookup, no version.
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "k", Seat: "a", Expires: past}))
	absent("a ticket created expired", func() error { _, err := tickets.Get(bg, "k"); return err },
		func() error { return tickets.SetSeat(bg, "k", "b") })
}

// wantDeleteExpired checks that Delete of an expired block and DeleteMany
// of expired blocks, with a live one and a missing one, fail with
// ErrNotFound for the expired and missing items, delete the live one,
// and leave none of the expired blocks in the store: the store's Get
// finds none. With mk, which makes a session holding token, their unique
// values are free again and Repair finds nothing to fix (a store's native
// expiry leaves index entries behind, which Repair removes: the real
// clock's test passes no mk).
func wantDeleteExpired(t *testing.T, sessions expiring.SessionRepository, tickets expiring.TicketRepository, mk func(id, token string) *expiring.Session) {
	t.Helper()
	raw := rawOf[expiring.Session](t, sessions)
	checkErr(t, sessions.Delete(bg, "d1"), runtime.ErrNotFound, "Delete of an expired session")
	checkErr(t, tickets.Delete(bg, "dk1"), runtime.ErrNotFound, "Delete of an expired ticket")
	err := sessions.DeleteMany(bg, []string{"d2", "live", "missing"})
	var be *runtime.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("DeleteMany of an expired, a live and a missing session: %v", err)
	}
	checkErr(t, be.Failed(0), runtime.ErrNotFound, "DeleteMany: the expired session's item")
	checkErr(t, be.Failed(1), nil, "DeleteMany: the live session's item")
	checkErr(t, be.Failed(2), runtime.ErrNotFound, "DeleteMany: the missing session's item")
	err = tickets.DeleteMany(bg, []string{"dk2"})
	if !errors.As(err, &be) {
		t.Fatalf("DeleteMany of an expired ticket: %v", err)
	}
	checkErr(t, be.Failed(0), runtime.ErrNotFound, "DeleteMany: the expired ticket's item")
	for _, id := range []string{"d1", "d2", "live"} {
		checkErr(t, func() error { _, err := raw.S.Get(bg, id); return err }(), runtime.ErrNotFound, "the store's Get of "+id+" after its Delete")
	}
	for _, id := range []string{"dk1", "dk2"} {
		checkErr(t, func() error { _, err := rawOf[expiring.Ticket](t, tickets).S.Get(bg, id); return err }(), runtime.ErrNotFound, "the store's Get of ticket "+id+" after its Delete")
	}
	if mk == nil {
		return
	}
	// The tokens the expired sessions held are free.
	must(t, sessions.Create(bg, mk("n1", "dt1")))
	must(t, sessions.Create(bg, mk("n2", "dt2")))
	wantRepaired(t, "sessions after the deletes of expired ones", sessions.Repair)
}

// testExpiryDeletes: Delete and DeleteMany of a block expired by the
// repository's clock fail with ErrNotFound, as for a missing block, on
// every store, and remove the expired block with its lookup entries.
func testExpiryDeletes(t *testing.T, e *env) {
	c := &testClock{now: at(0)}
	sessions, _, tickets := expiryRepos(t, e.db, c)
	mk := func(id, token string) *expiring.Session {
		return &expiring.Session{ID: id, Token: token, User: "u", Events: []string{"e"}, Expires: at(10)}
	}
	must(t, sessions.Create(bg, mk("d1", "dt1")))
	must(t, sessions.Create(bg, mk("d2", "dt2")))
	must(t, sessions.Create(bg, &expiring.Session{ID: "live", Token: "lt", User: "u"}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "dk1", Seat: "a", Expires: at(10)}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "dk2", Seat: "b", Expires: at(10)}))
	c.now = at(10)
	wantDeleteExpired(t, sessions, tickets, func(id, token string) *expiring.Session {
		return &expiring.Session{ID: id, Token: token, User: "v", Expires: at(20)}
	})
}

// testExpiryDeletesOnTheServer is testExpiryDeletes by the real clock:
// blocks written expired, which a store's native expiry may have removed
// already (Redis), or not (the others).
func testExpiryDeletesOnTheServer(t *testing.T, e *env) {
	r := expiryModel.On(t, e.db)
	sessions, tickets := r.sessions, r.tickets
	must(t, sessions.EnsureIndexes(bg))
	must(t, tickets.EnsureIndexes(bg))
	past := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for _, id := range []string{"d1", "d2"} {
		must(t, sessions.Create(bg, &expiring.Session{ID: id, Token: "dt" + id[1:], User: "u", Events: []string{"e"}, Expires: past}))
	}
	must(t, sessions.Create(bg, &expiring.Session{ID: "live", Token: "lt", User: "u"}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "dk1", Seat: "a", Expires: past}))
	must(t, tickets.Create(bg, &expiring.Ticket{ID: "dk2", Seat: "b", Expires: past}))
	wantDeleteExpired(t, sessions, tickets, nil)
}
