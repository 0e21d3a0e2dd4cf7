package lookups

// This test is not part of the golden comparison (only the non-test files
// are inputs): templates/bolt runs it to check the bbolt code generated for
// the cases the examples lack, lookups on a partitioned field's elements,
// on an EAO root and on unique slice elements, and counters on integer
// types that need conversions.

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

var ctx = context.Background()

func openBolt(t *testing.T) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "lookups.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

func dump(t *testing.T, db *bbolt.DB) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	must(t, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			m := map[string]string{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
		})
	}))
	return out
}

func clean(t *testing.T, repair func(context.Context) (runtime.RepairReport, error)) {
	t.Helper()
	rep, err := repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair found problems: %v %q", rep, rep.Conflicts)
	}
}

func ticketIDs(t *testing.T, list func(context.Context, string, runtime.PageRequest) (runtime.Page[*Ticket], error), v string) []TicketID {
	t.Helper()
	page, err := list(ctx, v, runtime.PageRequest{})
	must(t, err)
	out := []TicketID{}
	for _, tk := range page.Items {
		out = append(out, tk.ID)
	}
	return out
}

// TestBoltPartitionLookups: a lookup on the elements of a partitioned
// field is kept right by Create, AppendEvents, SetEventsAt, Update (root
// and elements), Put and Delete.
func TestBoltPartitionLookups(t *testing.T) {
	db := openBolt(t)
	tickets := NewTicketBoltRepository(db)
	must(t, tickets.EnsureIndexes(ctx))
	kind := func(k string) []TicketID {
		return ticketIDs(t, tickets.ListByEventsKind, k)
	}
	owner := func(o string) []TicketID {
		return ticketIDs(t, tickets.ListByOwner, o)
	}
	check := func(what string, got []TicketID, want ...TicketID) {
		t.Helper()
		if want == nil {
			want = []TicketID{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}

	t1 := &Ticket{Owner: "ann", Events: []Event{{Kind: "open"}}}
	must(t, tickets.Create(ctx, t1))
	t2 := &Ticket{Owner: "bob", Events: []Event{{Kind: "open"}, {Kind: "open"}}}
	must(t, tickets.Create(ctx, t2))
	if t1.ID != 1 || t2.ID != 2 || t1.Version != 1 {
		t.Fatalf("allocated tickets %d and %d, version %d", t1.ID, t2.ID, t1.Version)
	}
	check("open", kind("open"), 1, 2)

	_, err := tickets.AppendEvents(ctx, 1, Event{Kind: "comment"})
	must(t, err)
	_, err = tickets.AppendEvents(ctx, 1, Event{Kind: "comment"})
	must(t, err)
	check("comment after appends", kind("comment"), 1)
	check("open after appends", kind("open"), 1, 2)

	must(t, tickets.SetEventsAt(ctx, 1, 0, Event{Kind: "closed"}))
	check("open after SetEventsAt", kind("open"), 2)
	check("closed after SetEventsAt", kind("closed"), 1)
	must(t, tickets.SetEventsAt(ctx, 1, 1, Event{Kind: "x"}))
	check("comment is still held by events[2]", kind("comment"), 1)
	must(t, tickets.SetEventsAt(ctx, 2, 0, Event{Kind: "y"}))
	check("open is still held by ticket 2's events[1]", kind("open"), 2)

	must(t, tickets.Update(ctx, 1, TicketUpdate{Root: &Ticket{Owner: "bob"}, EventsAt: map[int]Event{2: {Kind: "z"}}}))
	check("owner ann after Update", owner("ann"))
	check("owner bob after Update", owner("bob"), 1, 2)
	check("comment after Update", kind("comment"))
	check("z after Update", kind("z"), 1)
	check("closed after Update", kind("closed"), 1)
	must(t, tickets.Update(ctx, 1, TicketUpdate{EventsAt: map[int]Event{1: {Kind: "z"}}}))
	check("x after an elements-only Update", kind("x"))
	check("owner bob after an elements-only Update", owner("bob"), 1, 2)
	clean(t, tickets.Repair)

	// A failed Update changes no lookup entry.
	before := dump(t, db)
	wantErr(t, tickets.Update(ctx, 1, TicketUpdate{Root: &Ticket{Owner: "cid"}, EventsAt: map[int]Event{0: {Kind: "new"}, 9: {}}}), runtime.ErrNotFound, "Update of a missing element")
	wantErr(t, tickets.SetEventsAt(ctx, 1, 9, Event{Kind: "new"}), runtime.ErrNotFound, "SetEventsAt of a missing element")
	if !maps.EqualFunc(before, dump(t, db), maps.Equal) {
		t.Fatal("failed writes changed the database")
	}

	tk, err := tickets.Get(ctx, 1)
	must(t, err)
	tk.Events = []Event{{Kind: "reopened"}}
	tk.Owner = "cid"
	must(t, tickets.Put(ctx, tk))
	check("closed after Put", kind("closed"))
	check("z after Put", kind("z"))
	check("reopened after Put", kind("reopened"), 1)
	check("owner cid after Put", owner("cid"), 1)
	must(t, tickets.Delete(ctx, 2))
	check("open after Delete", kind("open"))
	check("y after Delete", kind("y"))
	check("owner bob after Delete", owner("bob"))
	clean(t, tickets.Repair)
	if got := len(dump(t, db)["Ticket.eventsKind"]); got != 1 {
		t.Fatalf("Ticket.eventsKind holds %d entries, want 1", got)
	}
}

// TestBoltUniqueElements: a unique lookup on slice elements gives each
// value to one shop at most, and frees values a write drops.
func TestBoltUniqueElements(t *testing.T) {
	db := openBolt(t)
	shops := NewShopBoltRepository(db)
	must(t, shops.EnsureIndexes(ctx))
	must(t, shops.Create(ctx, &Shop{ID: "s1", Email: "a@x", Codes: []int32{1, 2, 2}}))
	wantErr(t, shops.Create(ctx, &Shop{ID: "s2", Email: "b@x", Codes: []int32{3, 2}}), runtime.ErrDuplicate, "Create with a taken code")
	must(t, shops.Create(ctx, &Shop{ID: "s2", Email: "b@x", Codes: []int32{3}}))
	wantErr(t, shops.SetCodes(ctx, "s1", []int32{3}), runtime.ErrDuplicate, "SetCodes to a taken code")
	must(t, shops.SetCodes(ctx, "s1", []int32{1, 4, 1}))
	if _, err := shops.GetByCodes(ctx, 2); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCodes of a dropped code: %v", err)
	}
	for code, want := range map[int32]string{1: "s1", 3: "s2", 4: "s1"} {
		s, err := shops.GetByCodes(ctx, code)
		must(t, err)
		if s.ID != want {
			t.Fatalf("GetByCodes(%d) = %s, want %s", code, s.ID, want)
		}
	}
	must(t, shops.Update(ctx, "s2", ShopUpdate{Codes: &[]int32{2}, Rank: runtime.Ptr[uint16](7), Region: runtime.Ptr("north")}))
	s, err := shops.GetByCodes(ctx, 2)
	must(t, err)
	if s.ID != "s2" {
		t.Fatalf("GetByCodes(2) after Update: %s", s.ID)
	}
	page, err := shops.ListByRegionRank(ctx, ShopRegionRankQuery{Region: runtime.Eq("north"), Rank: runtime.Gt[uint16](6)}, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "s2" {
		t.Fatalf("north, rank > 6: %v", page.Items)
	}
	// The query's methods take the parts' own types: the constants 6 and
	// 8 convert to uint16 (runtime.Gt(6) would be a Cond[int]).
	for _, q := range []ShopRegionRankQuery{
		ShopRegionRankQuery{}.RegionEq("north").RankGt(6),
		ShopRegionRankQuery{}.RegionEq("north").RankBetween(7, 8),
		{Region: runtime.Eq("north"), Rank: runtime.Lte[uint16](7)},
	} {
		page, err := shops.ListByRegionRank(ctx, q, runtime.PageRequest{})
		must(t, err)
		if len(page.Items) != 1 || page.Items[0].ID != "s2" {
			t.Fatalf("%+v: %v", q, page.Items)
		}
	}
	page, err = shops.ListByRegionRank(ctx, ShopRegionRankQuery{}.RegionEq("north").RankLt(7), runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Fatalf("north, rank < 7: %v", page.Items)
	}
	clean(t, shops.Repair)
}

// TestBoltScopedCounterConversions: a scoped counter whose parts are a
// named unsigned type and an int16.
func TestBoltScopedCounterConversions(t *testing.T) {
	db := openBolt(t)
	replies := NewReplyBoltRepository(db)
	must(t, replies.EnsureIndexes(ctx))
	for _, ticket := range []TicketID{7, 7, 8, 7} {
		must(t, replies.Create(ctx, &Reply{Key: ReplyKey{Ticket: ticket}}))
	}
	must(t, replies.Delete(ctx, ReplyKey{Ticket: 7, Seq: 2}))
	var seqs []int16
	req := runtime.PageRequest{Limit: 1}
	for {
		page, err := replies.ListByTicket(ctx, 7, req)
		must(t, err)
		for _, r := range page.Items {
			seqs = append(seqs, r.Key.Seq)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if !slices.Equal(seqs, []int16{1, 3}) {
		t.Fatalf("replies of ticket 7: %v", seqs)
	}
}

// TestBoltUniqueZeros: with the zeros option a unique lookup indexes the
// zero value like any other, so a second badge without a code is a
// duplicate, and GetByCode("") finds the first.
func TestBoltUniqueZeros(t *testing.T) {
	badges := NewBadgeBoltRepository(openBolt(t))
	must(t, badges.EnsureIndexes(ctx))
	must(t, badges.Create(ctx, &Badge{ID: "b1"}))
	if err := badges.Create(ctx, &Badge{ID: "b2"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("a second badge without a code: %v, want ErrDuplicate", err)
	}
	b, err := badges.GetByCode(ctx, "")
	if err != nil || b.ID != "b1" {
		t.Fatalf("GetByCode(\"\"): %v, %v", b, err)
	}
	must(t, badges.SetCode(ctx, "b1", "x"))
	must(t, badges.Create(ctx, &Badge{ID: "b2"}))
	b, err = badges.GetByCode(ctx, "")
	if err != nil || b.ID != "b2" {
		t.Fatalf("GetByCode(\"\") after the first got a code: %v, %v", b, err)
	}
}
