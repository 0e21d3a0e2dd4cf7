package example

// The golden case golden/testdata/lookups on MongoDB: lookups on the
// elements of a partitioned field (maintained by AppendEvents, SetEventsAt
// and Update through the lookup protocol), a unique lookup on slice
// elements, an EAO root, and counters with converted integer types.

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/golden/testdata/lookups"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

func repairClean(t *testing.T, repair func(context.Context) (runtime.RepairReport, error)) {
	t.Helper()
	rep, err := repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair found problems: %v %q", rep, rep.Conflicts)
	}
}

func collections(db *mongo.Database, names ...string) []*mongo.Collection {
	var out []*mongo.Collection
	for _, n := range names {
		out = append(out, db.Collection(n))
	}
	return out
}

func TestMongoGoldenPartitionLookups(t *testing.T) {
	db := mongotest.Start(t)
	tickets := lookups.NewTicketMongoRepository(db, mongostore.IndexTables())
	must(t, tickets.EnsureIndexes(bg))
	ids := func(list func(context.Context, string, runtime.PageRequest) (runtime.Page[*lookups.Ticket], error), v string) []lookups.TicketID {
		t.Helper()
		page, err := list(bg, v, runtime.PageRequest{})
		must(t, err)
		out := []lookups.TicketID{}
		for _, tk := range page.Items {
			out = append(out, tk.ID)
		}
		return out
	}
	kind := func(k string) []lookups.TicketID { return ids(tickets.ListByEventsKind, k) }
	owner := func(o string) []lookups.TicketID { return ids(tickets.ListByOwner, o) }
	check := func(what string, got []lookups.TicketID, want ...lookups.TicketID) {
		t.Helper()
		if want == nil {
			want = []lookups.TicketID{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}

	t1 := &lookups.Ticket{Owner: "ann", Events: []lookups.Event{{Kind: "open"}}}
	must(t, tickets.Create(bg, t1))
	t2 := &lookups.Ticket{Owner: "bob", Events: []lookups.Event{{Kind: "open"}, {Kind: "open"}}}
	must(t, tickets.Create(bg, t2))
	if t1.ID != 1 || t2.ID != 2 || t1.Version != 1 {
		t.Fatalf("allocated tickets %d and %d, version %d", t1.ID, t2.ID, t1.Version)
	}
	check("open", kind("open"), 1, 2)

	i, err := tickets.AppendEvents(bg, 1, lookups.Event{Kind: "comment"})
	must(t, err)
	if i != 1 {
		t.Fatalf("AppendEvents index %d, want 1", i)
	}
	i, err = tickets.AppendEvents(bg, 1, lookups.Event{Kind: "comment"})
	must(t, err)
	if i != 2 {
		t.Fatalf("AppendEvents index %d, want 2", i)
	}
	check("comment after appends", kind("comment"), 1)
	check("open after appends", kind("open"), 1, 2)
	_, err = tickets.AppendEvents(bg, 99, lookups.Event{Kind: "x"})
	wantErr(t, err, runtime.ErrNotFound, "AppendEvents to a missing ticket")

	must(t, tickets.SetEventsAt(bg, 1, 0, lookups.Event{Kind: "closed"}))
	check("open after SetEventsAt", kind("open"), 2)
	check("closed after SetEventsAt", kind("closed"), 1)
	must(t, tickets.SetEventsAt(bg, 1, 1, lookups.Event{Kind: "x"}))
	check("comment is still held by events[2]", kind("comment"), 1)
	must(t, tickets.SetEventsAt(bg, 2, 0, lookups.Event{Kind: "y"}))
	check("open is still held by ticket 2's events[1]", kind("open"), 2)

	must(t, tickets.Update(bg, 1, lookups.TicketUpdate{Root: &lookups.Ticket{Owner: "bob"}, EventsAt: map[int]lookups.Event{2: {Kind: "z"}}}))
	check("owner ann after Update", owner("ann"))
	check("owner bob after Update", owner("bob"), 1, 2)
	check("comment after Update", kind("comment"))
	check("z after Update", kind("z"), 1)
	check("closed after Update", kind("closed"), 1)
	must(t, tickets.Update(bg, 1, lookups.TicketUpdate{EventsAt: map[int]lookups.Event{1: {Kind: "z"}}}))
	check("x after an elements-only Update", kind("x"))
	check("owner bob after an elements-only Update", owner("bob"), 1, 2)
	repairClean(t, tickets.Repair)

	// Failed writes change nothing.
	all := collections(db, "Ticket", "Ticket__owner", "Ticket__eventsKind")
	before := dump(t, all...)
	tk, err := tickets.Get(bg, 1)
	must(t, err)
	wantErr(t, tickets.Update(bg, 1, lookups.TicketUpdate{Root: &lookups.Ticket{Owner: "cid"}, EventsAt: map[int]lookups.Event{0: {Kind: "new"}, 9: {}}}), runtime.ErrNotFound, "Update of a missing element")
	wantErr(t, tickets.SetEventsAt(bg, 1, 9, lookups.Event{Kind: "new"}), runtime.ErrNotFound, "SetEventsAt of a missing element")
	wantErr(t, tickets.Update(bg, 1, lookups.TicketUpdate{Root: &lookups.Ticket{Owner: "cid"}, IfVersion: tk.Version - 1}), runtime.ErrConflict, "Update with a stale version")
	stale := *tk
	stale.Version--
	stale.Owner = "cid"
	wantErr(t, tickets.Put(bg, &stale), runtime.ErrConflict, "Put with a stale version")
	if after := dump(t, all...); after != before {
		t.Fatalf("failed writes changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	tk.Events = []lookups.Event{{Kind: "reopened"}}
	tk.Owner = "cid"
	version := tk.Version
	must(t, tickets.Put(bg, tk))
	if tk.Version != version+1 {
		t.Fatalf("version after Put: %d, want %d", tk.Version, version+1)
	}
	check("closed after Put", kind("closed"))
	check("z after Put", kind("z"))
	check("reopened after Put", kind("reopened"), 1)
	check("owner cid after Put", owner("cid"), 1)
	must(t, tickets.Delete(bg, 2))
	check("open after Delete", kind("open"))
	check("y after Delete", kind("y"))
	check("owner bob after Delete", owner("bob"))
	repairClean(t, tickets.Repair)
	if n := count(t, db.Collection("Ticket__eventsKind"), map[string]any{}); n != 1 {
		t.Fatalf("Ticket__eventsKind holds %d entries, want 1", n)
	}
}

func TestMongoGoldenUniqueElements(t *testing.T) {
	db := mongotest.Start(t)
	shops := lookups.NewShopMongoRepository(db, mongotest.NativeOptions()...)
	must(t, shops.EnsureIndexes(bg))
	must(t, shops.Create(bg, &lookups.Shop{ID: "s1", Email: "a@x", Codes: []int32{1, 2, 2}}))
	wantErr(t, shops.Create(bg, &lookups.Shop{ID: "s2", Email: "b@x", Codes: []int32{3, 2}}), runtime.ErrDuplicate, "Create with a taken code")
	must(t, shops.Create(bg, &lookups.Shop{ID: "s2", Email: "b@x", Codes: []int32{3}}))
	wantErr(t, shops.SetCodes(bg, "s1", []int32{3}), runtime.ErrDuplicate, "SetCodes to a taken code")
	must(t, shops.SetCodes(bg, "s1", []int32{1, 4, 1}))
	if _, err := shops.GetByCodes(bg, 2); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCodes of a dropped code: %v", err)
	}
	for code, want := range map[int32]string{1: "s1", 3: "s2", 4: "s1"} {
		s, err := shops.GetByCodes(bg, code)
		must(t, err)
		if s.ID != want {
			t.Fatalf("GetByCodes(%d) = %s, want %s", code, s.ID, want)
		}
	}
	must(t, shops.Update(bg, "s2", lookups.ShopUpdate{Codes: &[]int32{2}, Rank: runtime.Ptr[uint16](7), Region: runtime.Ptr("north")}))
	s, err := shops.GetByCodes(bg, 2)
	must(t, err)
	if s.ID != "s2" {
		t.Fatalf("GetByCodes(2) after Update: %s", s.ID)
	}
	page, err := shops.ListByRegionRank(bg, lookups.ShopRegionRankQuery{Region: runtime.Eq("north"), Rank: runtime.Gt[uint16](6)}, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "s2" {
		t.Fatalf("north, rank > 6: %v", page.Items)
	}
	must(t, shops.SetAddress(bg, "s1", lookups.Location{City: "Köln"}))
	page, err = shops.ListByAddressCity(bg, "Köln", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "s1" {
		t.Fatalf("address.city Köln: %v", page.Items)
	}
	repairClean(t, shops.Repair)
}

func TestMongoGoldenScopedCounterConversions(t *testing.T) {
	db := mongotest.Start(t)
	replies := lookups.NewReplyMongoRepository(db, mongotest.NativeOptions()...)
	must(t, replies.EnsureIndexes(bg))
	for _, ticket := range []lookups.TicketID{7, 7, 8, 7} {
		must(t, replies.Create(bg, &lookups.Reply{Key: lookups.ReplyKey{Ticket: ticket}}))
	}
	must(t, replies.Delete(bg, lookups.ReplyKey{Ticket: 7, Seq: 2}))
	// An explicit number above the counter is listed, and allocation goes on after it.
	must(t, replies.Create(bg, &lookups.Reply{Key: lookups.ReplyKey{Ticket: 7, Seq: 5}}))
	next := &lookups.Reply{Key: lookups.ReplyKey{Ticket: 7}}
	must(t, replies.Put(bg, next))
	if next.Key.Seq != 6 {
		t.Fatalf("Put allocated %d, want 6", next.Key.Seq)
	}
	var seqs []int16
	req := runtime.PageRequest{Limit: 1}
	for range 10 {
		page, err := replies.ListByTicket(bg, 7, req)
		must(t, err)
		for _, r := range page.Items {
			seqs = append(seqs, r.Key.Seq)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if !slices.Equal(seqs, []int16{1, 3, 5, 6}) {
		t.Fatalf("replies of ticket 7: %v", seqs)
	}
}
