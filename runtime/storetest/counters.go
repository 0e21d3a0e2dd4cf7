package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var counterTests = []subtest{
	{name: "Counter", fn: testCounter},
	{name: "ScopedCounter", fn: testScopedCounter},
	{name: "ScopePages", fn: testScopePages},
}

func testCounter(t *testing.T, e *env) {
	var got []model.JournalID
	for i := range 3 {
		j := &model.Journal{Title: fmt.Sprint("j", i)}
		must(t, e.Journals.Create(bg, j))
		got = append(got, j.ID)
	}
	if !slices.Equal(got, []model.JournalID{1, 2, 3}) {
		t.Fatalf("allocated ids %v, want [1 2 3]", got)
	}
	j, err := e.Journals.Get(bg, 2)
	must(t, err)
	if j.Title != "j1" || j.Version != 1 {
		t.Fatalf("journal 2: %+v", j)
	}
	// An explicit id is kept; allocation never returns an id in use (the
	// generated documentation says it skips them; a store may also move its
	// counter past explicit ids), and ids only grow.
	must(t, e.Journals.Create(bg, &model.Journal{ID: 5, Title: "explicit"}))
	inUse := map[model.JournalID]bool{1: true, 2: true, 3: true, 5: true}
	last := model.JournalID(3)
	alloc := func(what string, put bool) model.JournalID {
		t.Helper()
		j := &model.Journal{Title: what}
		if put {
			must(t, e.Journals.Put(bg, j))
		} else {
			must(t, e.Journals.Create(bg, j))
		}
		if inUse[j.ID] || j.ID <= last || j.Version != 1 {
			t.Fatalf("%s allocated id %d (version %d): want a fresh id above %d, not one in use", what, j.ID, j.Version, last)
		}
		t.Logf("%s allocated %d", what, j.ID)
		inUse[j.ID], last = true, j.ID
		return j.ID
	}
	alloc("Create after an explicit 5", false)
	alloc("Create after an explicit 5", false)
	must(t, e.Journals.Create(bg, &model.Journal{ID: 100}))
	inUse[100] = true
	// Deleted ids are not reused.
	gone := alloc("Create", false)
	must(t, e.Journals.Delete(bg, gone))
	delete(inUse, gone)
	alloc("Create after a Delete of the last id", false)
	// Put allocates too.
	alloc("Put with a zero id", true)
	wantErr(t, e.Journals.Create(bg, &model.Journal{ID: last}), runtime.ErrDuplicate, "Create of an existing journal")
	var want []model.JournalID
	for id := range inUse {
		want = append(want, id)
	}
	slices.Sort(want)
	js := collect(t, 3, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) { return e.Journals.List(bg, req) })
	checkListed(t, "the journals", keysOf(js, func(j *model.Journal) model.JournalID { return j.ID }), want, e.h.Caps.OrderedScan)
}

func testScopedCounter(t *testing.T, e *env) {
	var keys []model.ReplyKey
	for _, thread := range []string{"a", "a", "b", "a", "", "b"} {
		r := &model.Reply{Key: model.ReplyKey{Thread: thread}, Body: "hi"}
		must(t, e.Replies.Create(bg, r))
		keys = append(keys, r.Key)
	}
	want := []model.ReplyKey{{Thread: "a", Seq: 1}, {Thread: "a", Seq: 2}, {Thread: "b", Seq: 1}, {Thread: "a", Seq: 3}, {Thread: "", Seq: 1}, {Thread: "b", Seq: 2}}
	if !slices.Equal(keys, want) {
		t.Fatalf("allocated keys %v, want %v", keys, want)
	}
	// An explicit number is kept; allocation never returns a number in
	// use, per scope, and numbers only grow.
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a", Seq: 5}}))
	used := map[model.ReplyKey]bool{{Thread: "a", Seq: 1}: true, {Thread: "a", Seq: 2}: true, {Thread: "a", Seq: 3}: true, {Thread: "a", Seq: 5}: true, {Thread: "b", Seq: 1}: true, {Thread: "b", Seq: 2}: true}
	last := map[string]int64{"a": 3, "b": 2} // the last allocated
	for _, th := range []string{"a", "a", "b"} {
		r := &model.Reply{Key: model.ReplyKey{Thread: th}}
		must(t, e.Replies.Create(bg, r))
		if r.Key.Thread != th || used[r.Key] || r.Key.Seq <= last[th] {
			t.Fatalf("allocated %v in thread %q: want a fresh number above %d, not one in use", r.Key, th, last[th])
		}
		t.Logf("allocated %v", r.Key)
		used[r.Key], last[th] = true, r.Key.Seq
	}
	// A thread whose name is a prefix of another is another scope.
	r := &model.Reply{Key: model.ReplyKey{Thread: "ab"}}
	must(t, e.Replies.Create(bg, r))
	if r.Key.Seq != 1 {
		t.Fatalf("first reply of thread ab: %v", r.Key)
	}
	wantErr(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a", Seq: 2}}), runtime.ErrDuplicate, "Create of an existing reply key")
	must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: last["a"]}))
	r = &model.Reply{Key: model.ReplyKey{Thread: "a"}}
	must(t, e.Replies.Put(bg, r))
	if r.Key.Seq <= last["a"] {
		t.Fatalf("Put with seq 0 after deleting a/%d allocated %v: a deleted or older number", last["a"], r.Key)
	}
}

func (e *env) threadSeqs(t *testing.T, thread string, limit int) ([]int64, []int) {
	t.Helper()
	var seqs []int64
	var sizes []int
	req := runtime.PageRequest{Limit: limit}
	for range 100 {
		page, err := e.Replies.ListByThread(bg, thread, req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		for _, r := range page.Items {
			if r.Key.Thread != thread {
				t.Fatalf("reply %v listed for thread %q", r.Key, thread)
			}
			seqs = append(seqs, r.Key.Seq)
		}
		if page.Next == "" {
			return seqs, sizes
		}
		req.Cursor = page.Next
	}
	t.Fatal("ListByThread does not end")
	return nil, nil
}

// wantThreadCount checks that CountByThread counts what ListByThread
// lists over all its pages.
func (e *env) wantThreadCount(t *testing.T, thread string, want int) {
	t.Helper()
	seqs, _ := e.threadSeqs(t, thread, 100)
	n, err := e.Replies.CountByThread(bg, thread)
	must(t, err)
	if n != int64(want) || len(seqs) != want {
		t.Fatalf("thread %q: CountByThread %d, ListByThread lists %d (%v), want %d", thread, n, len(seqs), seqs, want)
	}
}

func testScopePages(t *testing.T, e *env) {
	for range 7 {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a"}}))
	}
	for _, th := range []string{"ab", "", "b"} {
		must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: th}}))
	}
	seqs, sizes := e.threadSeqs(t, "a", 3)
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6, 7}) || !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Fatalf("ListByThread pages %v: %v", sizes, seqs)
	}
	// A count is the scope's alone: "a" is a prefix of "ab".
	for th, want := range map[string]int{"a": 7, "ab": 1, "": 1, "b": 1, "zz": 0} {
		e.wantThreadCount(t, th, want)
	}
	if seqs, _ := e.threadSeqs(t, "a", 7); len(seqs) != 7 {
		t.Fatalf("ListByThread with a limit equal to the count: %v", seqs)
	}
	page, err := e.Replies.ListByThread(bg, "a", runtime.PageRequest{Limit: 7})
	must(t, err)
	if page.Next != "" {
		t.Errorf("ListByThread with a limit equal to the count returned a Next cursor")
	}
	// Deleted numbers leave gaps that pages skip; explicit numbers far
	// ahead are found.
	for _, seq := range []int64{2, 3, 4, 7} {
		must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: seq}))
	}
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "a", Seq: 1000}}))
	seqs, _ = e.threadSeqs(t, "a", 2)
	if !slices.Equal(seqs, []int64{1, 5, 6, 1000}) {
		t.Fatalf("ListByThread after deletes: %v, want [1 5 6 1000]", seqs)
	}
	e.wantThreadCount(t, "a", 4)
	// Changes between pages.
	first, err := e.Replies.ListByThread(bg, "a", runtime.PageRequest{Limit: 2}) // 1, 5
	must(t, err)
	must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: 1}))
	must(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "a", Seq: 5}))
	r := &model.Reply{Key: model.ReplyKey{Thread: "a"}}
	must(t, e.Replies.Create(bg, r)) // 1001
	rest, err := e.Replies.ListByThread(bg, "a", runtime.PageRequest{Limit: 10, Cursor: first.Next})
	must(t, err)
	got := keysOf(rest.Items, func(r *model.Reply) int64 { return r.Key.Seq })
	if !slices.Equal(got, []int64{6, 1000, 1001}) {
		t.Fatalf("ListByThread after changes between pages: %v, want [6 1000 1001]", got)
	}
	for _, th := range []string{"", "ab", "zz"} {
		want := 1
		if th == "zz" {
			want = 0
		}
		if seqs, _ := e.threadSeqs(t, th, 2); len(seqs) != want {
			t.Fatalf("ListByThread(%q): %v", th, seqs)
		}
	}
	e.wantThreadCount(t, "a", 3)
	// More blocks than a count reads per page where the store counts
	// through the listing.
	big := make([]*model.Reply, 300)
	for i := range big {
		big[i] = &model.Reply{Key: model.ReplyKey{Thread: "big"}}
	}
	must(t, e.Replies.CreateMany(bg, big))
	must(t, e.Replies.Delete(bg, big[100].Key))
	e.wantThreadCount(t, "big", 299)
	// Cursors are bound to the scope.
	page, err = e.Replies.ListByThread(bg, "a", runtime.PageRequest{Limit: 1})
	must(t, err)
	for what, c := range map[string]string{"of another scope": "", "extended": page.Next + "A", "truncated": page.Next[:len(page.Next)-1]} {
		th := "a"
		if c == "" {
			th, c = "ab", page.Next
		}
		noPanic(t, "ListByThread with a cursor "+what, func() {
			_, err := e.Replies.ListByThread(bg, th, runtime.PageRequest{Limit: 1, Cursor: c})
			checkErr(t, err, runtime.ErrBadCursor, "ListByThread with a cursor "+what)
		})
	}
}
