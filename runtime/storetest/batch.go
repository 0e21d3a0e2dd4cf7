package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// The batch writes (CreateMany, PutMany, DeleteMany): each item is
// written as its single call would write it, the failed ones are reported
// in one *runtime.BatchError with their indexes and kinds, and write
// nothing; the others are written.

var batchTests = []subtest{
	{name: "Batch", fn: testBatch},
}

func testBatch(t *testing.T, e *env) {
	t.Run("CreateMany", func(t *testing.T) { testCreateMany(t, e) })
	t.Run("PartialFailure", func(t *testing.T) { testBatchPartial(t, e) })
	t.Run("PutMany", func(t *testing.T) { testPutMany(t, e) })
	t.Run("Counters", func(t *testing.T) { testBatchCounters(t, e) })
	t.Run("DeleteMany", func(t *testing.T) { testDeleteMany(t, e) })
	t.Run("Hooks", func(t *testing.T) { testBatchHooks(t, e) })
	t.Run("CancelledContext", func(t *testing.T) { testBatchCancelled(t, e) })
}

// batchErr returns err as a *runtime.BatchError of op over total items,
// failing t otherwise, and checks that exactly the items of want failed,
// each with its kind.
func batchErr(t *testing.T, err error, op string, total int, want map[int]error) *runtime.BatchError {
	t.Helper()
	var be *runtime.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("%s: got %v (%T), want a *runtime.BatchError", op, err, err)
	}
	if be.Op != op || be.Total != total {
		t.Errorf("%s: the BatchError says Op %q, Total %d, want %q, %d", op, be.Op, be.Total, op, total)
	}
	var got []int
	for _, it := range be.Items {
		got = append(got, it.Index)
		kind, ok := want[it.Index]
		if !ok {
			t.Errorf("%s: item %d failed unexpectedly: %v", op, it.Index, it.Err)
			continue
		}
		if !errors.Is(it.Err, kind) {
			t.Errorf("%s: item %d failed with %v, want %v", op, it.Index, it.Err, kind)
		}
		if be.Failed(it.Index) != it.Err {
			t.Errorf("%s: Failed(%d) is not the item's error", op, it.Index)
		}
		var re *runtime.Error
		if !errors.As(it.Err, &re) {
			t.Errorf("%s: item %d's error %v (%T) is no *runtime.Error", op, it.Index, it.Err, it.Err)
		}
	}
	if len(got) != len(want) || !slices.IsSorted(got) {
		t.Errorf("%s: items %v failed, want (in order) %d of them: %v", op, got, len(want), want)
	}
	for _, kind := range want {
		if !errors.Is(err, kind) {
			t.Errorf("%s: errors.Is(err, %v) is false", op, kind)
		}
	}
	return be
}

// matchFound checks what the lookups of m answer: GetByCode, the serial of
// every round and ListByTags find it exactly when found is set.
func (e *env) matchFound(t *testing.T, m *model.Match, found bool) {
	t.Helper()
	got, err := e.Matches.GetByCode(bg, m.Code)
	switch {
	case found && err != nil:
		t.Fatalf("GetByCode(%q) of %s: %v", m.Code, m.ID, err)
	case found:
		e.wantSame(t, "GetByCode of "+m.ID, got, m)
	case err == nil && got.ID == m.ID:
		t.Fatalf("GetByCode(%q) finds %s, which was not written", m.Code, m.ID)
	case err != nil && !errors.Is(err, runtime.ErrNotFound):
		t.Fatalf("GetByCode(%q): %v", m.Code, err)
	}
	for _, r := range m.Rounds {
		got, err := e.Matches.GetByRoundsSerial(bg, r.Serial)
		if found != (err == nil && got.ID == m.ID) {
			t.Fatalf("GetByRoundsSerial(%q) of %s (written: %v): %v, %v", r.Serial, m.ID, found, got, err)
		}
	}
	for _, tag := range m.Tags {
		ids := e.tagged(t, tag)
		if found != slices.Contains(ids, m.ID) {
			t.Fatalf("ListByTags(%q) finds %v; %s written: %v", tag, ids, m.ID, found)
		}
	}
}

// tagged returns the ids ListByTags(tag) finds.
func (e *env) tagged(t *testing.T, tag string) []string {
	t.Helper()
	page, err := e.Matches.ListByTags(bg, tag, runtime.PageRequest{Limit: 100})
	must(t, err)
	var ids []string
	for _, m := range page.Items {
		ids = append(ids, m.ID)
	}
	return ids
}

// batchMatch is a match with its own code, tag, and two rounds.
func batchMatch(id string) *model.Match {
	m := newMatch(id, 2)
	m.Tags = []string{"batch", "tag-" + id}
	return m
}

func testCreateMany(t *testing.T, e *env) {
	ms := []*model.Match{batchMatch("c1"), richMatch("c2"), batchMatch("c3")}
	must(t, e.Matches.CreateMany(bg, ms))
	// The same aggregates, created one by one, read back the same.
	singles := []*model.Match{batchMatch("s1"), richMatch("s2"), batchMatch("s3")}
	for _, m := range singles {
		must(t, e.Matches.Create(bg, m))
	}
	for i, m := range ms {
		if m.Version != 1 {
			t.Errorf("CreateMany: item %d has version %d, want 1", i, m.Version)
		}
		got := e.getMatch(t, m.ID)
		e.wantSame(t, "Get after CreateMany", got, m)
		single := e.getMatch(t, singles[i].ID)
		single.ID, single.Code = got.ID, got.Code
		for j := range single.Rounds {
			single.Rounds[j].Serial = got.Rounds[j].Serial
		}
		for j, tag := range single.Tags {
			if tag == "tag-"+singles[i].ID {
				single.Tags[j] = "tag-" + m.ID
			}
		}
		e.wantSame(t, "a block of CreateMany and the same Create", got, single)
		e.matchFound(t, m, true)
	}
	if ids := e.tagged(t, "batch"); len(ids) != 4 {
		t.Errorf("ListByTags(batch) finds %v, want c1, c3, s1, s3", ids)
	}
	checkLayout[model.Match, string](t, e, e.Matches, []func() (string, error){
		func() (string, error) { return "c1", nil },
		func() (string, error) { return "c2", nil },
	})
	// An empty batch writes nothing and succeeds.
	must(t, e.Matches.CreateMany(bg, nil))
}

func testBatchPartial(t *testing.T, e *env) {
	e.createMatch(t, "x", 1)
	a, c := batchMatch("a"), batchMatch("c")
	dupCode := batchMatch("b")
	dupCode.Code = a.Code
	dupSerial := batchMatch("d")
	dupSerial.Rounds[1].Serial = "x/r0" // held by x
	again := batchMatch("a")
	again.Code = "code-a-again"
	before := e.snapshot(t)
	ms := []*model.Match{a, newMatch("x", 0), dupCode, again, nil, newMatch(badUTF8, 0), dupSerial, c}
	err := e.Matches.CreateMany(bg, ms)
	batchErr(t, err, "CreateMany", len(ms), map[int]error{
		1: runtime.ErrDuplicate, // an existing key
		2: runtime.ErrDuplicate, // a unique value of an earlier item
		3: runtime.ErrDuplicate, // a key twice in the batch
		4: runtime.ErrInvalid,   // nil
		5: runtime.ErrInvalid,   // a key that is not valid UTF-8
		6: runtime.ErrDuplicate, // a unique value of a stored block
	})
	if !errors.Is(err, runtime.ErrDuplicate) || !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("errors.Is does not match the items' errors: %v", err)
	}
	for _, m := range []*model.Match{a, c} {
		e.wantSame(t, "a written item", e.getMatch(t, m.ID), m)
		e.matchFound(t, m, true)
	}
	for _, m := range []*model.Match{dupCode, dupSerial} {
		if _, err := e.Matches.Get(bg, m.ID); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get of the failed item %s: %v", m.ID, err)
		}
		if m.Version != 0 {
			t.Errorf("the failed item %s has version %d", m.ID, m.Version)
		}
		e.matchFound(t, m, false)
	}
	if _, err := e.Matches.GetByCode(bg, again.Code); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetByCode of the code of a key given twice: %v", err)
	}
	if _, err := e.Matches.GetByRoundsSerial(bg, "x/r0"); err != nil {
		t.Errorf("the serial of x, given again by a failed item: %v", err)
	}
	// Nothing else changed.
	before["Match a"], before["Match c"] = e.norm(a), e.norm(c)
	e.unchanged(t, "a partly failed CreateMany", before)
}

func testPutMany(t *testing.T, e *env) {
	p1, p2 := batchMatch("p1"), batchMatch("p2")
	must(t, e.Matches.CreateMany(bg, []*model.Match{p1, p2}))
	n1 := clone(p1)
	n1.Tags = []string{"batch", "new-tag"}
	n1.Code = "code-p1-new"
	n1.Rounds = n1.Rounds[:1]
	n2 := clone(p2)
	n2.Version = 7 // stale
	n2.Level = 9
	n3 := batchMatch("p3")
	err := e.Matches.PutMany(bg, []*model.Match{n1, n2, n3})
	batchErr(t, err, "PutMany", 3, map[int]error{1: runtime.ErrConflict})
	if n1.Version != 2 || n3.Version != 1 || n2.Version != 7 {
		t.Errorf("PutMany left versions %d, %d, %d, want 2, 7, 1", n1.Version, n2.Version, n3.Version)
	}
	e.wantSame(t, "p1 after PutMany", e.getMatch(t, "p1"), n1)
	e.wantSame(t, "p2 after a refused PutMany item", e.getMatch(t, "p2"), p2)
	e.wantSame(t, "p3 created by PutMany", e.getMatch(t, "p3"), n3)
	e.matchFound(t, n1, true)
	e.matchFound(t, p2, true)
	e.matchFound(t, n3, true)
	// The old values of p1 answer no lookup.
	if _, err := e.Matches.GetByCode(bg, p1.Code); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetByCode of p1's old code: %v", err)
	}
	if _, err := e.Matches.GetByRoundsSerial(bg, p1.Rounds[1].Serial); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("GetByRoundsSerial of p1's dropped round: %v", err)
	}
	if ids := e.tagged(t, "tag-p1"); len(ids) != 0 {
		t.Errorf("ListByTags of p1's old tag finds %v", ids)
	}
	// The same key twice: the second Put holds the version the first
	// replaced.
	a, b := e.getMatch(t, "p1"), e.getMatch(t, "p1")
	a.Level, b.Level = 21, 22
	batchErr(t, e.Matches.PutMany(bg, []*model.Match{a, b}), "PutMany", 2, map[int]error{1: runtime.ErrConflict})
	if got := e.getMatch(t, "p1"); got.Level != 21 || got.Version != 3 {
		t.Errorf("p1 after two Puts of one batch: level %d, version %d, want 21, 3", got.Level, got.Version)
	}
	// Without a version, Put keeps no check.
	must(t, e.Cards.PutMany(bg, []*model.Card{{ID: 1, Title: "one", Labels: []string{"l"}}, {ID: 2, Title: "two"}}))
	must(t, e.Cards.PutMany(bg, []*model.Card{{ID: 1, Title: "uno"}}))
	if got, err := e.Cards.Get(bg, 1); err != nil || got.Title != "uno" {
		t.Fatalf("Card 1 after PutMany: %v, %v", got, err)
	}
	page, err := e.Cards.ListByLabels(bg, "l", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Errorf("ListByLabels of a label PutMany dropped finds %d cards", len(page.Items))
	}
}

func testBatchCounters(t *testing.T, e *env) {
	js := []*model.Journal{{Owner: "o1"}, {Owner: "o2", Lines: []model.Line{{Kind: "k"}}}, {Owner: "o1"}}
	must(t, e.Journals.CreateMany(bg, js))
	seen := map[model.JournalID]bool{}
	for i, j := range js {
		if j.ID == 0 || seen[j.ID] {
			t.Fatalf("CreateMany: item %d got id %d (ids %v)", i, j.ID, seen)
		}
		seen[j.ID] = true
		got, err := e.Journals.Get(bg, j.ID)
		must(t, err)
		e.wantSame(t, "a journal of CreateMany", got, j)
	}
	page, err := e.Journals.ListByOwner(bg, "o1", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 2 {
		t.Errorf("ListByOwner(o1) finds %d journals, want 2", len(page.Items))
	}
	// A later single Create takes a number none of them has.
	next := &model.Journal{Owner: "o3"}
	must(t, e.Journals.Create(bg, next))
	if seen[next.ID] {
		t.Errorf("Create after CreateMany took id %d again", next.ID)
	}
	// A failed item keeps its zero id and takes no block; the others
	// get theirs.
	bad := []*model.Journal{{Owner: "p"}, {ID: js[0].ID, Owner: "dup"}, {Owner: "q"}}
	batchErr(t, e.Journals.CreateMany(bg, bad), "CreateMany", 3, map[int]error{1: runtime.ErrDuplicate})
	if bad[0].ID == 0 || bad[2].ID == 0 || bad[0].ID == bad[2].ID || seen[bad[0].ID] || seen[bad[2].ID] {
		t.Errorf("the written items got ids %d and %d", bad[0].ID, bad[2].ID)
	}
	if got, err := e.Journals.Get(bg, js[0].ID); err != nil || got.Owner != "o1" {
		t.Errorf("the journal a failed item named: %v, %v", got, err)
	}
	// PutMany allocates zero ids too.
	put := []*model.Journal{{Owner: "r"}, {Owner: "r"}}
	must(t, e.Journals.PutMany(bg, put))
	if put[0].ID == 0 || put[0].ID == put[1].ID || put[0].Version != 1 {
		t.Errorf("PutMany of new journals: ids %d, %d, version %d", put[0].ID, put[1].ID, put[0].Version)
	}
	// A scoped counter numbers each thread's replies.
	rs := []*model.Reply{{Key: model.ReplyKey{Thread: "t"}}, {Key: model.ReplyKey{Thread: "u"}}, {Key: model.ReplyKey{Thread: "t"}, Author: "a"}}
	must(t, e.Replies.CreateMany(bg, rs))
	if rs[0].Key.Seq == 0 || rs[0].Key.Seq == rs[2].Key.Seq || rs[1].Key.Seq == 0 {
		t.Errorf("CreateMany of replies: keys %v, %v, %v", rs[0].Key, rs[1].Key, rs[2].Key)
	}
	seqs, _ := e.threadSeqs(t, "t", 10)
	if len(seqs) != 2 {
		t.Errorf("ListByThread(t) finds %v, want two replies", seqs)
	}
}

func testDeleteMany(t *testing.T, e *env) {
	d1, d2, keep := batchMatch("d1"), batchMatch("d2"), batchMatch("keep")
	must(t, e.Matches.CreateMany(bg, []*model.Match{d1, d2, keep}))
	err := e.Matches.DeleteMany(bg, []string{"d1", "missing", "d2", "d1", badUTF8})
	batchErr(t, err, "DeleteMany", 5, map[int]error{1: runtime.ErrNotFound, 3: runtime.ErrNotFound, 4: runtime.ErrInvalid})
	for _, m := range []*model.Match{d1, d2} {
		if _, err := e.Matches.Get(bg, m.ID); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get after DeleteMany: %v", err)
		}
		e.matchFound(t, m, false)
	}
	e.matchFound(t, keep, true)
	if ids := e.tagged(t, "batch"); !slices.Contains(ids, "keep") || slices.Contains(ids, "d1") || slices.Contains(ids, "d2") {
		t.Errorf("ListByTags(batch) after DeleteMany finds %v", ids)
	}
	// Their unique values are free again.
	must(t, e.Matches.Create(bg, batchMatch("d1")))
	must(t, e.Journals.CreateMany(bg, []*model.Journal{{Owner: "z"}}))
	must(t, e.Cards.DeleteMany(bg, nil))
}

func testBatchHooks(t *testing.T, e *env) {
	rec := &recorder{store: e.h.Caps.Name}
	r := repos.On(t, e.db, runtime.WithHook(rec.hook)).Matches
	const n = 6
	var ms []*model.Match
	var keys []any
	for i := range n {
		ms = append(ms, batchMatch(fmt.Sprint("h", i)))
		keys = append(keys, fmt.Sprint("h", i))
	}
	var entries []string
	for range n {
		entries = append(entries, matchEntries(2)...)
	}
	few := func(c call, op string) {
		t.Helper()
		if e.h.Batches && !(op == "PutMany" && e.h.SinglePuts) && c.RoundTrips >= n {
			t.Errorf("%s of %d blocks took %d round trips on %s, which batches", op, n, c.RoundTrips, e.h.Name)
		}
	}
	must(t, r.CreateMany(bg, ms))
	c := rec.last(t)
	c.check(t, "CreateMany", keys, entries...)
	few(c, "CreateMany")
	for _, m := range ms {
		m.Level++
	}
	must(t, r.PutMany(bg, ms))
	c = rec.last(t)
	c.check(t, "PutMany", keys, entries...)
	few(c, "PutMany")
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.(string))
	}
	must(t, r.DeleteMany(bg, ids))
	c = rec.last(t)
	c.check(t, "DeleteMany", keys)
	few(c, "DeleteMany")
}

func testBatchCancelled(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	must(t, e.Journals.Create(bg, &model.Journal{Owner: "o"}))
	before := e.snapshot(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	for what, call := range map[string]func() error{
		"CreateMany":              func() error { return e.Matches.CreateMany(ctx, []*model.Match{newMatch("n1", 1), newMatch("n2", 0)}) },
		"CreateMany with counter": func() error { return e.Journals.CreateMany(ctx, []*model.Journal{{Owner: "p"}, {Owner: "q"}}) },
		"PutMany":                 func() error { return e.Matches.PutMany(ctx, []*model.Match{e.getMatch(t, "m"), newMatch("n3", 0)}) },
		"DeleteMany":              func() error { return e.Matches.DeleteMany(ctx, []string{"m", "missing"}) },
	} {
		var err error
		noPanic(t, what, func() { err = call() })
		if checkErr(t, err, context.Canceled, what+" with a cancelled context") {
			var re *runtime.Error
			if !errors.As(err, &re) {
				t.Errorf("%s with a cancelled context: %v (%T) is no *runtime.Error", what, err, err)
			}
		}
	}
	e.unchanged(t, "batches with a cancelled context", before)
}
