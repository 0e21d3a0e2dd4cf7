package storetest

import (
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var miscTests = []subtest{
	{name: "ErrorsNameTheOperation", fn: testErrorsName},
	{name: "GetMany", fn: testGetMany},
	{name: "RepairHealthy", fn: testRepairHealthy},
	{name: "EnsureIndexesIdempotent", fn: testEnsureIdempotent},
	{name: "Layout", fn: testLayout},
}

func testGetMany(t *testing.T, e *env) {
	a := e.createMatch(t, "a", 2)
	b := e.createMatch(t, "b", 0)
	got, err := e.Matches.GetMany(bg, []string{"b", "missing", "a", "b", "a"})
	must(t, err)
	e.wantSame(t, "GetMany with missing and repeated keys", got, map[string]*model.Match{"a": a, "b": b})
	for what, ids := range map[string][]string{"nil": nil, "empty": {}, "only missing": {"x", "y"}} {
		got, err := e.Matches.GetMany(bg, ids)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("GetMany of %s keys: %v", what, got)
		}
	}
	var ids []string
	want := map[string]*model.Match{}
	for i := range 150 { // more than a page of a batched read
		id := string(rune('A'+i%26)) + string(rune('a'+i/26))
		if i%3 == 0 {
			want[id] = e.createMatch(t, id, 1)
		}
		ids = append(ids, id)
	}
	got, err = e.Matches.GetMany(bg, ids)
	must(t, err)
	e.wantSame(t, "GetMany of 150 keys", got, want)

	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	js, err := e.Journals.GetMany(bg, []model.JournalID{j.ID, j.ID + 1, j.ID})
	must(t, err)
	e.wantSame(t, "Journal GetMany", js, map[model.JournalID]*model.Journal{j.ID: j})
	c := &model.Card{ID: -4, Title: "c"}
	must(t, e.Cards.Create(bg, c))
	cs, err := e.Cards.GetMany(bg, []int32{4, -4})
	must(t, err)
	e.wantSame(t, "Card GetMany", cs, map[int32]*model.Card{-4: c})
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}}
	must(t, e.Replies.Create(bg, r))
	rs, err := e.Replies.GetMany(bg, []model.ReplyKey{{Thread: "t", Seq: 1}, {Thread: "t", Seq: 2}, {Thread: "u", Seq: 1}})
	must(t, err)
	e.wantSame(t, "Reply GetMany", rs, map[model.ReplyKey]*model.Reply{r.Key: r})
}

func testRepairHealthy(t *testing.T, e *env) {
	// Empty collections.
	e.lookupsClean(t, "nothing")
	// A varied history of writes.
	e.seedLookups(t)
	must(t, e.Matches.SetTags(bg, "a", []string{"q"}))
	must(t, e.Matches.Update(bg, "b", model.MatchUpdate{Region: ptr("x"), RoundsAt: map[int]model.Round{0: {Serial: "b/x"}}}))
	_, err := e.Matches.AppendRounds(bg, "c", model.Round{Serial: "c/x"})
	must(t, err)
	must(t, e.Matches.Delete(bg, "d"))
	_ = e.Matches.SetCode(bg, "e", "code-a") // fails: taken
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "p"}}))
	must(t, e.Cards.Create(bg, &model.Card{ID: 1, Labels: []string{"l", "l"}}))
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: "a"}))
	rep, err := e.Matches.Repair(bg)
	must(t, err)
	if rep.Aggregates != 5 || rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair of healthy matches: %v (want 5 aggregates, nothing fixed)", rep)
	}
	e.lookupsClean(t, "a varied history")
	// Repair changed nothing either.
	before := e.snapshot(t)
	e.unchanged(t, "Repair", before)
	eqStrings(t, "ListByTags after Repair", e.byTag(t, "q"), "a")
}

func testEnsureIdempotent(t *testing.T, e *env) {
	e.ensure(t) // a second time, empty
	e.seedLookups(t)
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	j := &model.Journal{}
	must(t, e.Journals.Create(bg, j))
	before := e.snapshot(t)
	e.ensure(t) // with data
	e.ensure(t)
	e.unchanged(t, "EnsureIndexes", before)
	eqStrings(t, "ListByTags after EnsureIndexes", e.byTag(t, "x"), "a", "c")
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}}
	must(t, e.Replies.Create(bg, r))
	j2 := &model.Journal{}
	must(t, e.Journals.Create(bg, j2))
	if r.Key.Seq != 2 || j2.ID != 2 {
		t.Fatalf("counters after EnsureIndexes: reply %v, journal %d (want t/2 and 2)", r.Key, j2.ID)
	}
	_, err := e.Matches.GetByCode(bg, "code-a")
	must(t, err)
	wantErr(t, e.Matches.Create(bg, &model.Match{ID: "z", Code: "code-a"}), runtime.ErrDuplicate, "a taken code after EnsureIndexes")
}
