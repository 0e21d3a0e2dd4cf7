package lookups

// This test is not part of the golden comparison (only the non-test files
// are inputs): templates/dynamo runs it to check the DynamoDB code
// generated for the cases the examples lack (see bolt_test.go), on
// dynalite or NOAM_DYNAMO_ENDPOINT.

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

type dynamo struct {
	c *dynamodb.Client
	o dynamostore.Options
}

// openDynamo starts a test server (or uses NOAM_DYNAMO_ENDPOINT) and
// returns a client and a fresh table prefix.
func openDynamo(t *testing.T) dynamo {
	t.Helper()
	srv := dynalitetest.Start(t)
	return dynamo{c: srv.Client(), o: dynamostore.Options{TablePrefix: srv.Prefix(t)}}
}

// indexItems counts the index items of one lookup of a collection.
func (d dynamo) indexItems(t *testing.T, collection, lookup string) int {
	t.Helper()
	out, err := d.c.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(d.o.TablePrefix + dynamostore.IndexTable(collection)), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("p = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: lookup}},
	})
	must(t, err)
	return len(out.Items)
}

// TestDynamoPartitionLookups: a lookup on the elements of a partitioned
// field is kept right by Create, AppendEvents, SetEventsAt, Update (root
// and elements), Put and Delete.
func TestDynamoPartitionLookups(t *testing.T) {
	dyn := openDynamo(t)
	tickets := NewTicketDynamoRepository(dyn.c, dyn.o)
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
	before, err := tickets.Get(ctx, 1)
	must(t, err)
	wantErr(t, tickets.Update(ctx, 1, TicketUpdate{Root: &Ticket{Owner: "cid"}, EventsAt: map[int]Event{0: {Kind: "new"}, 9: {}}}), runtime.ErrNotFound, "Update of a missing element")
	wantErr(t, tickets.SetEventsAt(ctx, 1, 9, Event{Kind: "new"}), runtime.ErrNotFound, "SetEventsAt of a missing element")
	if after, err := tickets.Get(ctx, 1); err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("failed writes changed the ticket: %+v, %v", after, err)
	}
	clean(t, tickets.Repair)

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
	if got := dyn.indexItems(t, "Ticket", "eventsKind"); got != 1 {
		t.Fatalf("Ticket.eventsKind holds %d index items, want 1", got)
	}
}

// TestDynamoUniqueElements: a unique lookup on slice elements gives each
// value to one shop at most, and frees values a write drops.
func TestDynamoUniqueElements(t *testing.T) {
	dyn := openDynamo(t)
	shops := NewShopDynamoRepository(dyn.c, dyn.o)
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
	clean(t, shops.Repair)
}

// TestDynamoScopedCounterConversions: a scoped counter whose parts are a
// named unsigned type and an int16.
func TestDynamoScopedCounterConversions(t *testing.T) {
	dyn := openDynamo(t)
	replies := NewReplyDynamoRepository(dyn.c, dyn.o)
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

// TestDynamoUniqueZeros: with the zeros option a unique lookup indexes the
// zero value like any other, so a second badge without a code is a
// duplicate, and GetByCode("") finds the first.
func TestDynamoUniqueZeros(t *testing.T) {
	dyn := openDynamo(t)
	badges := NewBadgeDynamoRepository(dyn.c, dyn.o)
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
