package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

func TestMain(m *testing.M) {
	// A short grace period, so that stale claims can be taken over
	// within the test's time budget.
	mongostore.StaleAfter = 300 * time.Millisecond
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run()) // the bbolt writer child needs no server
	}
	mongotest.Main(m)
}

var bg = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// base hotels every trial starts from.
func h1() *hotel.Hotel {
	return &hotel.Hotel{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 3, Tags: []string{"pool", "spa"}, Address: hotel.Address{Zip: "44135"}, Rooms: []hotel.Room{}}
}

func h2() *hotel.Hotel {
	return &hotel.Hotel{ID: "h2", Name: "Taken", City: "Bonn", Stars: 4, Tags: []string{"gym"}, Address: hotel.Address{Zip: "53111"}, Rooms: []hotel.Room{}}
}

func h3() *hotel.Hotel {
	return &hotel.Hotel{ID: "h3", Name: "Neu", City: "Essen", Stars: 2, Tags: []string{"spa", "bar"}, Address: hotel.Address{Zip: "45127"}, Rooms: []hotel.Room{}}
}

// writeOp is a write with lookups, run under faults: old and new give the
// states of the hotels it may change (nil: absent) before and after it.
type writeOp struct {
	name     string
	run      func(ctx context.Context, r hotel.HotelRepository) error
	old, new map[string]*hotel.Hotel
	// failsWith is the error kind the write must fail with (nil: it
	// must succeed).
	failsWith error
}

func changed(f func(*hotel.Hotel)) *hotel.Hotel { h := h1(); f(h); return h }

func writeOps() []writeOp {
	base := map[string]*hotel.Hotel{"h1": h1(), "h2": h2(), "h3": nil}
	with := func(id string, h *hotel.Hotel) map[string]*hotel.Hotel {
		m := map[string]*hotel.Hotel{"h1": h1(), "h2": h2(), "h3": nil}
		m[id] = h
		return m
	}
	return []writeOp{
		{name: "Create", run: func(ctx context.Context, r hotel.HotelRepository) error { return r.Create(ctx, h3()) },
			old: base, new: with("h3", h3())},
		{name: "PutNew", run: func(ctx context.Context, r hotel.HotelRepository) error { return r.Put(ctx, h3()) },
			old: base, new: with("h3", h3())},
		{name: "Put", run: func(ctx context.Context, r hotel.HotelRepository) error {
			return r.Put(ctx, changed(func(h *hotel.Hotel) {
				h.Name, h.City, h.Stars, h.Tags, h.Address.Zip = "Wittekind2", "Essen", 5, []string{"spa", "sauna"}, "45128"
			}))
		}, old: base, new: with("h1", changed(func(h *hotel.Hotel) {
			h.Name, h.City, h.Stars, h.Tags, h.Address.Zip = "Wittekind2", "Essen", 5, []string{"spa", "sauna"}, "45128"
		}))},
		{name: "SetName", run: func(ctx context.Context, r hotel.HotelRepository) error {
			return r.SetName(ctx, "h1", "Wittekind2")
		},
			old: base, new: with("h1", changed(func(h *hotel.Hotel) { h.Name = "Wittekind2" }))},
		{name: "SetCity", run: func(ctx context.Context, r hotel.HotelRepository) error { return r.SetCity(ctx, "h1", "Essen") },
			old: base, new: with("h1", changed(func(h *hotel.Hotel) { h.City = "Essen" }))},
		{name: "Update", run: func(ctx context.Context, r hotel.HotelRepository) error {
			return r.Update(ctx, "h1", hotel.HotelUpdate{Name: runtime.Ptr("Wittekind2"), Stars: runtime.Ptr(5), Tags: &[]string{"sauna"}})
		}, old: base, new: with("h1", changed(func(h *hotel.Hotel) { h.Name, h.Stars, h.Tags = "Wittekind2", 5, []string{"sauna"} }))},
		{name: "Delete", run: func(ctx context.Context, r hotel.HotelRepository) error { return r.Delete(ctx, "h1") },
			old: base, new: with("h1", nil)},
		{name: "UpdateToTakenName", run: func(ctx context.Context, r hotel.HotelRepository) error {
			return r.Update(ctx, "h1", hotel.HotelUpdate{Name: runtime.Ptr("Taken"), City: runtime.Ptr("Essen")})
		}, old: base, new: base, failsWith: runtime.ErrDuplicate},
	}
}

// fixture opens a fresh database on the hooked client with h1 and h2.
func fixture(t *testing.T, client *mongo.Client, n int) (*mongo.Database, *hotel.HotelMongoRepository) {
	t.Helper()
	db := client.Database(fmt.Sprintf("faults_%d_%d", dbSeq.Add(1), n))
	t.Cleanup(func() { _ = db.Drop(bg) })
	r := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, r.EnsureIndexes(bg))
	must(t, r.Create(bg, h1()))
	must(t, r.Create(bg, h2()))
	return db, r
}

var trials, dbSeq atomic.Int64

// TestMongoFaults runs every write with lookups of the hotel example under
// every fault at every command position, and checks the invariants of the
// lookup protocol after each (see checkInvariants), after a retry of the
// write, and after Repair.
//
// The writes run in parallel, each on its own client and hook; every trial
// uses a fresh database.
func TestMongoFaults(t *testing.T) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("%d trials in %v", trials.Load(), time.Since(start).Round(time.Millisecond)) })
	for _, op := range writeOps() {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			w := &Wire{}
			client := mongotest.StartWithOptions(t, w.Options()).Client()
			var n int
			// A dry run counts the commands of the write.
			_, r := fixture(t, client, n)
			n++
			w.Arm(0, None, nil, func() {})
			err := op.run(bg, r)
			names, _ := w.Disarm()
			if !errors.Is(err, op.failsWith) || (op.failsWith == nil && err != nil) {
				t.Fatalf("dry run: %v", err)
			}
			t.Logf("%d commands: %v", len(names), names)
			for k := 1; k <= len(names); k++ {
				for _, mode := range []Mode{Crash, LostReply, CancelAfter, CancelInFlight} {
					n++
					trial(t, w, client, n, op, k, mode)
				}
			}
		})
	}
}

func trial(t *testing.T, w *Wire, client *mongo.Client, n int, op writeOp, k int, mode Mode) {
	trials.Add(1)
	what := fmt.Sprintf("%s at command %d", mode, k)
	_, r := fixture(t, client, n)
	ctx, cancel := context.WithCancel(bg)
	w.Arm(k, mode, nil, cancel)
	err := op.run(ctx, r)
	names, fired := w.Disarm()
	cancel()
	if !fired && k <= len(names) {
		t.Fatalf("%s: fault not injected (commands %v)", what, names)
	}
	if err == nil && op.failsWith != nil {
		t.Fatalf("%s: the write succeeded, want %v", what, op.failsWith)
	}
	// Reads right after the fault: old or new state, never a mix, every
	// lookup verified.
	state := checkInvariants(t, what+", after the fault", r, op)
	if err == nil && !reflect.DeepEqual(state, op.new) {
		t.Fatalf("%s: the write returned nil but the state is %v", what, show(state))
	}
	// Repair restores every lookup and reports what it fixed.
	before := countEntries(t, r)
	rep, rerr := r.Repair(bg)
	if rerr != nil {
		t.Fatalf("%s: Repair: %v", what, rerr)
	}
	if len(rep.Conflicts) > 0 {
		t.Fatalf("%s: Repair found conflicts: %v", what, rep.Conflicts)
	}
	after := countEntries(t, r)
	if after-before != rep.Added-rep.Removed {
		t.Fatalf("%s: Repair reported %v, but the index tables went from %d to %d entries", what, rep, before, after)
	}
	checkInvariants(t, what+", after Repair", r, op)
	// A retry of the write succeeds (or finds its work done) and leaves
	// everything indexed.
	if !reflect.DeepEqual(state, op.new) || op.failsWith != nil {
		rerr := op.run(bg, r)
		if !errors.Is(rerr, op.failsWith) || (op.failsWith == nil && rerr != nil) {
			t.Fatalf("%s: retry: %v (first attempt: %v)", what, rerr, err)
		}
	}
	if st := checkInvariants(t, what+", after a retry", r, op); !reflect.DeepEqual(st, op.new) {
		t.Fatalf("%s: after a retry the state is %v", what, show(st))
	}
}

func show(m map[string]*hotel.Hotel) string {
	s := ""
	for _, id := range []string{"h1", "h2", "h3"} {
		s += fmt.Sprintf("%s=%+v ", id, m[id])
	}
	return s
}

// checkInvariants reads the hotels the write may change and checks that
// they are in the old or the new state as a whole, that every lookup of
// every value of both states returns only hotels that hold it (as Get
// returns them), that every stored hotel is found by each of its values
// (exact: entries are never missing), and that no name is held twice. It
// returns the state.
func checkInvariants(t *testing.T, what string, r hotel.HotelRepository, op writeOp) map[string]*hotel.Hotel {
	t.Helper()
	state := map[string]*hotel.Hotel{}
	for id := range op.old {
		h, err := r.Get(bg, id)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			state[id] = nil
		case err != nil:
			t.Fatalf("%s: Get %s: %v", what, id, err)
		default:
			state[id] = h
		}
	}
	if !reflect.DeepEqual(state, op.old) && !reflect.DeepEqual(state, op.new) {
		t.Fatalf("%s: the state is neither the old nor the new one: %s", what, show(state))
	}
	// Values of both states, and of every stored hotel.
	var all []*hotel.Hotel
	for h, err := range r.All(bg) {
		if err != nil {
			t.Fatalf("%s: All: %v", what, err)
		}
		all = append(all, h)
	}
	names := map[string]string{}
	for _, h := range all {
		if other, dup := names[h.Name]; dup {
			t.Fatalf("%s: name %q held by %s and %s", what, h.Name, other, h.ID)
		}
		names[h.Name] = h.ID
	}
	var values []*hotel.Hotel
	for _, m := range []map[string]*hotel.Hotel{op.old, op.new} {
		for _, h := range m {
			if h != nil {
				values = append(values, h)
			}
		}
	}
	values = append(values, all...)
	stored := map[string]*hotel.Hotel{}
	for _, h := range all {
		stored[h.ID] = h
	}
	verify := func(lookup string, got []*hotel.Hotel, holds func(*hotel.Hotel) bool, want *hotel.Hotel) {
		t.Helper()
		found := false
		for _, g := range got {
			if !holds(g) || !reflect.DeepEqual(g, stored[g.ID]) {
				t.Fatalf("%s: %s returned %+v, which does not match (stored: %+v)", what, lookup, g, stored[g.ID])
			}
			found = found || g.ID == want.ID
		}
		if s := stored[want.ID]; s != nil && reflect.DeepEqual(s, want) && !found {
			t.Fatalf("%s: %s misses %s, which holds the value", what, lookup, want.ID)
		}
	}
	page := func(p runtime.Page[*hotel.Hotel], err error) []*hotel.Hotel {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return p.Items
	}
	for _, v := range values {
		g, err := r.GetByName(bg, v.Name)
		var got []*hotel.Hotel
		if err == nil {
			got = append(got, g)
		} else if !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s: GetByName: %v", what, err)
		}
		verify("GetByName("+v.Name+")", got, func(h *hotel.Hotel) bool { return h.Name == v.Name }, v)
		verify("ListByCityStars", page(r.ListByCityStars(bg, hotel.HotelCityStarsQuery{City: runtime.Eq(v.City), Stars: runtime.Eq(v.Stars)}, runtime.PageRequest{})),
			func(h *hotel.Hotel) bool { return h.City == v.City && h.Stars == v.Stars }, v)
		for _, tag := range v.Tags {
			verify("ListByTags("+tag+")", page(r.ListByTags(bg, tag, runtime.PageRequest{})), func(h *hotel.Hotel) bool { return slices.Contains(h.Tags, tag) }, v)
		}
		verify("ListByAddressZip", page(r.ListByAddressZip(bg, v.Address.Zip, runtime.PageRequest{})), func(h *hotel.Hotel) bool { return h.Address.Zip == v.Address.Zip }, v)
	}
	return state
}

// countEntries counts the entries of the hotel's index tables.
func countEntries(t *testing.T, r *hotel.HotelMongoRepository) int {
	t.Helper()
	db := r.Collection().Database()
	total := 0
	for _, l := range []string{"name", "cityStars", "tags", "addressZip"} {
		n, err := db.Collection(mongostore.TableName("Hotel", l)).CountDocuments(bg, bson.D{})
		must(t, err)
		total += int(n)
	}
	return total
}

// TestMongoStalledWrite: a write stalled past StaleAfter loses its unique
// claim to a competing write, and then lands: only one hotel holds the
// name. For an update the takeover fences the stalled write (its
// conditional write no longer matches and it fails with ErrDuplicate); for
// a create the stalled insert finds its claim gone, removes what it
// inserted and fails with ErrDuplicate.
func TestMongoStalledWrite(t *testing.T) {
	w := &Wire{}
	client := mongotest.StartWithOptions(t, w.Options()).Client()
	plain := mongotest.Start(t).Client()
	for i, tc := range []struct {
		name  string
		write func(context.Context, hotel.HotelRepository) error
		cmd   string
	}{
		{"SetName", func(ctx context.Context, r hotel.HotelRepository) error {
			return r.SetName(ctx, "h1", "Wittekind2")
		}, "update"},
		{"Create", func(ctx context.Context, r hotel.HotelRepository) error {
			h := h3()
			h.Name = "Wittekind2"
			return r.Create(ctx, h)
		}, "insert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, r := fixture(t, client, 1000+i)
			other := hotel.NewHotelMongoRepository(plain.Database(db.Name()), mongostore.IndexTables())
			match := func(e *event.CommandStartedEvent) bool {
				return e.CommandName == tc.cmd && e.Command.Lookup(tc.cmd).StringValue() == "Hotel"
			}
			w.Arm(0, Stall, match, func() {})
			done := make(chan error, 1)
			go func() { done <- tc.write(bg, r) }()
			select {
			case <-w.Stalled():
			case err := <-done:
				t.Fatalf("the write did not stall: %v", err)
			}
			time.Sleep(mongostore.StaleAfter + 100*time.Millisecond)
			h9 := &hotel.Hotel{ID: "h9", Name: "Wittekind2", City: "Köln"}
			err9 := other.Create(bg, h9)
			w.Release()
			err1 := <-done
			w.Disarm()
			if err9 != nil {
				t.Fatalf("the competing Create failed: %v", err9)
			}
			if !errors.Is(err1, runtime.ErrDuplicate) {
				t.Fatalf("the stalled write returned %v, want ErrDuplicate", err1)
			}
			var holders []string
			for h, err := range other.All(bg) {
				must(t, err)
				if h.Name == "Wittekind2" {
					holders = append(holders, h.ID)
				}
			}
			if !slices.Equal(holders, []string{"h9"}) {
				t.Fatalf("Wittekind2 held by %v", holders)
			}
			if g, err := other.GetByName(bg, "Wittekind2"); err != nil || g.ID != "h9" {
				t.Fatalf("GetByName: %v, %v", g, err)
			}
		})
	}
}
