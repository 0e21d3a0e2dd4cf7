package storetest

import (
	"regexp"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/stamped"
)

var uuidTests = []subtest{
	{name: "UUIDKeys", startUp: true, fn: testUUIDKeys},
}

// uuidForm is a UUID in the canonical form; its version digit is the
// group after the second dash's first character.
var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-([47])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func wantUUID(t *testing.T, what, id, version string) {
	t.Helper()
	m := uuidForm.FindStringSubmatch(id)
	if m == nil || m[1] != version {
		t.Fatalf("%s: id %q, want a canonical version %s UUID", what, id, version)
	}
}

// testUUIDKeys checks `noam:"id,uuid"`: Create and CreateMany give an
// aggregate with an empty id a new UUID and set it, keep a given one, and
// version 7 ids list in creation order where the store lists in key
// order.
func testUUIDKeys(t *testing.T, e *env) {
	r := stampModel.On(t, e.db)
	events, tokens := r.events, r.tokens
	must(t, events.EnsureIndexes(bg))
	must(t, tokens.EnsureIndexes(bg))

	ev := &stamped.Event{Kind: "signup"}
	must(t, events.Create(bg, ev))
	wantUUID(t, "Create", ev.ID, "7")
	got, err := events.Get(bg, ev.ID)
	must(t, err)
	if got.ID != ev.ID || got.Kind != "signup" || got.Created.IsZero() {
		t.Fatalf("Get(%s) after Create: %+v", ev.ID, got)
	}
	// The id stays set: the same Create again finds the block.
	checkErr(t, events.Create(bg, ev), runtime.ErrDuplicate, "Create of an event whose id the first Create set")
	given := &stamped.Event{ID: "given", Kind: "signup"}
	must(t, events.Create(bg, given))
	if given.ID != "given" {
		t.Fatalf("Create changed a given id to %q", given.ID)
	}

	// Created one after the other, version 7 ids increase: a listing in
	// key order is the creation order.
	want := []string{ev.ID}
	for range 40 {
		e := &stamped.Event{Kind: "click"}
		must(t, events.Create(bg, e))
		want = append(want, e.ID)
	}
	batch := make([]*stamped.Event, 30)
	for i := range batch {
		batch[i] = &stamped.Event{Kind: "batch"}
	}
	batch[7].ID = "given-in-a-batch"
	must(t, events.CreateMany(bg, batch))
	for i, b := range batch {
		if i == 7 {
			if b.ID != "given-in-a-batch" {
				t.Fatalf("CreateMany changed a given id to %q", b.ID)
			}
			continue
		}
		wantUUID(t, "CreateMany", b.ID, "7")
		want = append(want, b.ID)
	}
	if !slices.IsSorted(want) {
		t.Fatalf("version 7 ids in creation order are not increasing: %v", want)
	}
	var listed []string
	for ev, err := range events.All(bg) {
		must(t, err)
		if ev.ID != "given" && ev.ID != "given-in-a-batch" {
			listed = append(listed, ev.ID)
		}
	}
	if !e.h.Caps.OrderedScan {
		slices.Sort(listed)
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %d events %v\nwant %d in creation order %v", len(listed), listed, len(want), want)
	}
	n, err := events.CountByKind(bg, "batch")
	must(t, err)
	if n != 30 {
		t.Fatalf("CountByKind(batch) %d, want 30", n)
	}

	tk := &stamped.Token{Holder: "ann"}
	must(t, tokens.Create(bg, tk))
	wantUUID(t, "Create (uuid=v4)", tk.ID, "4")
	other := &stamped.Token{Holder: "bob"}
	must(t, tokens.Create(bg, other))
	if other.ID == tk.ID {
		t.Fatalf("two tokens got the id %s", tk.ID)
	}
}
