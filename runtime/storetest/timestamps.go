package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/stamped"
)

// The timestamps of noam:"created" and noam:"updated" (package stamped):
// Create sets both, every write sets updated in its own atomic write, a
// Put keeps the created of a block that exists, a failed write changes
// neither, and the times are the repository's clock in UTC milliseconds.
var stampTests = []subtest{
	{name: "Timestamps", startUp: true, fn: testTimestamps},
}

// testClock is a clock the test sets: a time in another zone, with
// nanoseconds, that the repository must store in UTC milliseconds.
type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time { return c.now }

// set moves the clock to minute m of the test's day and returns the time
// the stores must keep of it.
func (c *testClock) set(m int) time.Time {
	c.now = time.Date(2031, 5, 6, 7, m, 9, 123456789, time.FixedZone("UTC+1", 3600))
	return time.Date(2031, 5, 6, 6, m, 9, 123000000, time.UTC)
}

// stampRepos makes the stamped model's repositories over db, with clock c.
func stampRepos(t *testing.T, db DB, c *testClock, opts ...runtime.Option) (stamped.PostRepository, stamped.NoteRepository) {
	t.Helper()
	opts = append([]runtime.Option{runtime.WithClock(c.Now)}, opts...)
	r := stampModel.On(t, db, opts...)
	posts, notes := r.posts, r.notes
	must(t, posts.EnsureIndexes(bg))
	must(t, notes.EnsureIndexes(bg))
	return posts, notes
}

// wantWrote fails t unless the last call rec saw is op writing entries
// (a hook sees the updated timestamp among them).
func wantWrote(t *testing.T, rec *recorder, op string, entries ...string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) == 0 {
		t.Fatalf("%s: the hook saw no call", op)
	}
	if c := rec.calls[len(rec.calls)-1]; c.Op != op || !slices.Equal(c.Entries, entries) {
		t.Errorf("%s: the hook saw %s writing %q, want %q", op, c.Op, c.Entries, entries)
	}
}

// wantStamps fails t unless created and updated are the times want
// (UTC, milliseconds).
func wantStamps(t *testing.T, what string, created, updated, wantCreated, wantUpdated time.Time) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{{"created", created, wantCreated}, {"updated", updated, wantUpdated}} {
		if !c.got.Equal(c.want) || c.got.Location() != time.UTC {
			t.Errorf("%s: %s is %v, want %v", what, c.name, c.got, c.want)
		}
	}
}

func testTimestamps(t *testing.T, e *env) {
	c := &testClock{}
	rec := &recorder{store: e.h.Caps.Name}
	posts, notes := stampRepos(t, e.db, c, runtime.WithHook(rec.hook))

	// Create sets both, in the caller's aggregate and in the block.
	t1 := c.set(1)
	p := &stamped.Post{ID: "p1", Title: "first"}
	must(t, posts.Create(bg, p))
	wantStamps(t, "Create, the caller's post", p.Created, p.Updated, t1, t1)
	got, err := posts.Get(bg, "p1")
	must(t, err)
	wantStamps(t, "Get after Create", got.Created, got.Updated, t1, t1)

	// Every entry-level write sets updated only.
	get := func(what string, wantUpdated time.Time) *stamped.Post {
		t.Helper()
		got, err := posts.Get(bg, "p1")
		must(t, err)
		wantStamps(t, what, got.Created, got.Updated, t1, wantUpdated)
		return got
	}
	t2 := c.set(2)
	must(t, posts.SetTitle(bg, "p1", "second"))
	wantWrote(t, rec, "SetTitle", "title", "changed", "version")
	get("SetTitle", t2)
	t3 := c.set(3)
	if _, err := posts.AppendEdits(bg, "p1", "e0"); err != nil {
		t.Fatal(err)
	}
	wantWrote(t, rec, "AppendEdits", "edits[0]", "edits", "changed", "version")
	get("AppendEdits", t3)
	t4 := c.set(4)
	must(t, posts.SetEditsAt(bg, "p1", 0, "e0'"))
	get("SetEditsAt", t4)
	t5 := c.set(5)
	title := "third"
	must(t, posts.Update(bg, "p1", stamped.PostUpdate{Title: &title, EditsAt: map[int]string{0: "e0''"}}))
	got = get("Update", t5)
	if got.Title != "third" || len(got.Edits) != 1 || got.Edits[0] != "e0''" || got.Version != 5 {
		t.Errorf("after the writes: %+v", got)
	}
	// An update that writes nothing only checks: updated stays.
	c.set(6)
	must(t, posts.Update(bg, "p1", stamped.PostUpdate{}))
	get("an empty Update", t5)

	// A failed write changes neither timestamp.
	c.set(7)
	wantErr(t, posts.SetTitle(bg, "none", "x"), runtime.ErrNotFound, "SetTitle of a missing block")
	wantErr(t, posts.SetEditsAt(bg, "p1", 5, "x"), runtime.ErrNotFound, "SetEditsAt of a missing element")
	_, err = posts.AppendEdits(bg, "none", "x")
	wantErr(t, err, runtime.ErrNotFound, "AppendEdits of a missing block")
	wantErr(t, posts.Update(bg, "p1", stamped.PostUpdate{Title: &title, IfVersion: 1}), runtime.ErrConflict, "Update at an old version")
	dup := &stamped.Post{ID: "p1", Title: "dup"}
	wantErr(t, posts.Create(bg, dup), runtime.ErrDuplicate, "Create of an existing block")
	if !dup.Created.IsZero() || !dup.Updated.IsZero() {
		t.Errorf("a failed Create set the caller's timestamps: %v, %v", dup.Created, dup.Updated)
	}
	old := *got
	old.Version = 1
	stale := old
	wantErr(t, posts.Put(bg, &stale), runtime.ErrConflict, "Put at an old version")
	if !stale.Created.Equal(old.Created) || !stale.Updated.Equal(old.Updated) || stale.Version != 1 {
		t.Errorf("a failed Put changed the caller's post: %+v, was %+v", stale, old)
	}
	got = get("after the failed writes", t5)

	// Put over a block that exists keeps its created, whatever the
	// caller's holds, and tells the caller.
	t8 := c.set(8)
	got.Created, got.Title = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), "put"
	must(t, posts.Put(bg, got))
	wantStamps(t, "Put over a block, the caller's post", got.Created, got.Updated, t1, t8)
	get("Put over a block", t8)
	t9 := c.set(9)
	fresh := &stamped.Post{ID: "p1", Title: "fresh", Version: got.Version}
	must(t, posts.Put(bg, fresh))
	wantStamps(t, "Put of a new value over a block, the caller's post", fresh.Created, fresh.Updated, t1, t9)
	get("Put of a new value over a block", t9)

	// Put of a new block sets both.
	t10 := c.set(10)
	p2 := &stamped.Post{ID: "p2", Title: "new", Created: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
	must(t, posts.Put(bg, p2))
	wantStamps(t, "Put of a new block, the caller's post", p2.Created, p2.Updated, t10, t10)
	got, err = posts.Get(bg, "p2")
	must(t, err)
	wantStamps(t, "Put of a new block", got.Created, got.Updated, t10, t10)

	// Without a version, and with a lookup (an index table on most
	// stores): the same.
	n1 := c.set(11)
	n := &stamped.Note{ID: "n1", Author: "ann"}
	must(t, notes.Create(bg, n))
	wantStamps(t, "Note Create", n.Created, n.Updated, n1, n1)
	n2 := c.set(12)
	n = &stamped.Note{ID: "n1", Author: "bob", Lines: []string{"l0"}}
	must(t, notes.Put(bg, n))
	wantStamps(t, "Note Put over a block, the caller's note", n.Created, n.Updated, n1, n2)
	n3 := c.set(13)
	if _, err := notes.AppendLines(bg, "n1", "l1"); err != nil {
		t.Fatal(err)
	}
	ng, err := notes.Get(bg, "n1")
	must(t, err)
	wantStamps(t, "Note AppendLines", ng.Created, ng.Updated, n1, n3)
	n4 := c.set(14)
	must(t, notes.SetAuthor(bg, "n1", "cat"))
	page, err := notes.ListByAuthor(bg, "cat", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || len(page.Items[0].Lines) != 2 {
		t.Fatalf("ListByAuthor(cat): %+v", page.Items)
	}
	wantStamps(t, "Note after SetAuthor", page.Items[0].Created, page.Items[0].Updated, n1, n4)
	c.set(15)
	_, err = notes.AppendLines(bg, "none", "x")
	wantErr(t, err, runtime.ErrNotFound, "Note AppendLines of a missing block")
	ng, err = notes.Get(bg, "n1")
	must(t, err)
	wantStamps(t, "Note after a failed write", ng.Created, ng.Updated, n1, n4)
	n5 := c.set(16)
	must(t, notes.Put(bg, &stamped.Note{ID: "n2", Author: "dan"}))
	ng, err = notes.Get(bg, "n2")
	must(t, err)
	wantStamps(t, "Note Put of a new block", ng.Created, ng.Updated, n5, n5)
}
