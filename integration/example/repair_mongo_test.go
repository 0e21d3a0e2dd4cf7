package example

import (
	"context"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// TestMongoRepairReadsLookupFields: Repair reads of the documents only
// what it derives index keys from (the key, the stamp and the lookup
// fields), in both passes: every find it sends to the hotels' collection
// has a projection, and no document it gets back holds the rooms. Its
// second pass (the documents the index entries point at) runs: it
// removes the entries of a hotel deleted behind the repository's back.
func TestMongoRepairReadsLookupFields(t *testing.T) {
	var mu sync.Mutex
	record := false
	finds := map[int64]bson.Raw{} // request id -> command, of the finds sent while recording
	var replies []bson.Raw
	mon := &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			mu.Lock()
			defer mu.Unlock()
			if record && e.CommandName == "find" {
				finds[e.RequestID] = append(bson.Raw(nil), e.Command...)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := finds[e.RequestID]; ok {
				replies = append(replies, append(bson.Raw(nil), e.Reply...))
			}
		},
	}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(mon))
	r := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, r.EnsureIndexes(bg))
	rooms := make([]hotel.Room, 50)
	for i := range rooms {
		rooms[i] = hotel.Room{Number: 100 + i, Kind: strings.Repeat("suite ", 20)}
	}
	for _, id := range []string{"h1", "h2", "h3"} {
		must(t, r.Create(bg, &hotel.Hotel{ID: id, Name: "Hotel " + id, City: "Bonn", Stars: 3, Tags: []string{"spa"}, Address: hotel.Address{Zip: "53111"}, Rooms: rooms}))
	}
	coll := r.Collection()
	if _, err := coll.DeleteOne(bg, bson.D{{Key: "_id", Value: "h3"}}); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	record = true
	mu.Unlock()
	rep, err := r.Repair(bg)
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	// h3's name, cityStars, tag and zip entries.
	if rep.Removed != 4 || rep.Added != 0 || rep.Aggregates != 2 {
		t.Errorf("Repair: %v, want h3's 4 entries removed and nothing added, over 2 aggregates", rep)
	}
	byID := 0
	for _, cmd := range finds {
		if cmd.Lookup("find").StringValue() != coll.Name() {
			continue
		}
		if _, err := cmd.LookupErr("projection"); err != nil {
			t.Errorf("Repair read whole documents: %v", cmd)
		}
		// The first pass's pages are {} and {_id: {$gt: ...}}; the
		// second pass's reads {_id: key} and {_id: {$in: [...]}}.
		id, err := cmd.Lookup("filter").Document().LookupErr("_id")
		if err != nil {
			continue
		}
		if d, ok := id.DocumentOK(); !ok {
			byID++
		} else if _, err := d.LookupErr("$in"); err == nil {
			byID++
		}
	}
	if byID == 0 {
		t.Errorf("Repair sent no find of documents by key (its second pass): %v", finds)
	}
	for _, reply := range replies {
		docs, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
		for _, d := range docs {
			if doc, ok := d.DocumentOK(); ok {
				if _, err := doc.LookupErr("rooms"); err == nil {
					t.Errorf("Repair read hotel %v with its rooms", doc.Lookup("_id"))
				}
			}
		}
	}
}
