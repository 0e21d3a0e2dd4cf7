package dynamostore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

// TestSingleTableOverTablePerCollection: a deployment whose hotels are in
// a table per collection (Options without SingleTable) moves to the
// single table. Its EnsureIndexes refuses with runtime.ErrLayout naming
// both tables and the way to move, and creates nothing, instead of
// serving the collection as empty; once the hotels are moved (List of
// the old repository, PutMany of the new one, into an empty single table
// under another prefix) and the old table emptied, EnsureIndexes of the
// single table goes through and the hotels are found by their lookups.
func TestSingleTableOverTablePerCollection(t *testing.T) {
	sv := dynalitetest.Shared(t)
	prefix := sv.Prefix(t)
	c := sv.Client()
	old := hotel.NewHotelDynamoRepository(c, dynamostore.Options{TablePrefix: prefix})
	must(t, old.EnsureIndexes(ctx))
	for _, h := range []hotel.Hotel{{ID: "h1", Name: "Ritz", City: "Paris", Stars: 5}, {ID: "h2", Name: "Savoy", City: "London", Stars: 5}} {
		must(t, old.Create(ctx, &h))
	}

	single := hotel.NewHotelDynamoRepository(c, dynamostore.Options{TablePrefix: prefix, SingleTable: "app"})
	err := single.EnsureIndexes(ctx)
	if !errors.Is(err, runtime.ErrLayout) {
		t.Fatalf("EnsureIndexes of the single table over a table per collection with data: %v, want ErrLayout", err)
	}
	for _, s := range []string{prefix + "Hotel", prefix + "app", "PutMany", "SingleTable"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error %q does not name %q", err, s)
		}
	}
	if _, err := single.Get(ctx, "h1"); !errors.Is(err, runtime.ErrNotReady) {
		t.Errorf("Get through the refused single table: %v, want ErrNotReady (nothing created)", err)
	}

	// The move the error describes: into the single table of another
	// prefix (where no table per collection is), then the old table
	// emptied.
	moved := hotel.NewHotelDynamoRepository(c, dynamostore.Options{TablePrefix: prefix + "v2_", SingleTable: "app"})
	must(t, moved.EnsureIndexes(ctx))
	page, err := old.List(ctx, runtime.PageRequest{Limit: 100})
	must(t, err)
	must(t, moved.PutMany(ctx, page.Items))
	must(t, old.DeleteMany(ctx, []string{"h1", "h2"}))
	must(t, single.EnsureIndexes(ctx)) // the old table is empty now
	got, err := moved.GetByName(ctx, "Savoy")
	must(t, err)
	if got.ID != "h2" || got.City != "London" {
		t.Errorf("GetByName(Savoy) after the move: %+v", got)
	}
}
