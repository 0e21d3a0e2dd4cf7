package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var crudTests = []subtest{
	{name: "GetMissing", fn: testGetMissing},
	{name: "RoundTrip", fn: testRoundTrip},
	{name: "RoundTripEdgeValues", fn: testRoundTripEdge},
	{name: "CreateDuplicate", fn: testCreateDuplicate},
	{name: "PutVersions", fn: testPutVersions},
	{name: "PutWithoutVersion", fn: testPutWithoutVersion},
	{name: "PutShrinksPartition", fn: testPutShrinksPartition},
	{name: "Delete", fn: testDelete},
	{name: "NilAggregate", fn: testNilAggregate},
	{name: "InvalidUTF8Key", fn: testInvalidUTF8Key},
	{name: "InvalidUTF8LookupValue", fn: testInvalidUTF8LookupValue},
	{name: "CancelledContext", fn: testCancelledContext},
}

func testGetMissing(t *testing.T, e *env) {
	e.createMatch(t, "present", 1)
	_, err := e.Matches.Get(bg, "absent")
	wantErr(t, err, runtime.ErrNotFound, "Get of a missing match")
	var re *runtime.Error
	if !errors.As(err, &re) || re.Aggregate != "Match" || re.Op != "Get" || re.ID != "absent" || re.Kind != runtime.ErrNotFound {
		t.Fatalf("the error %v does not say which aggregate, operation and key, with the kind not found: %+v", err, re)
	}
	notUnreadable := func(err error, what string) {
		t.Helper()
		wantErr(t, err, runtime.ErrNotFound, what)
		if errors.Is(err, runtime.ErrUnreadable) {
			t.Fatalf("%s: %v is also ErrUnreadable (a missing block is not an unreadable one)", what, err)
		}
	}
	notUnreadable(err, "Get of a missing match")
	_, err = e.Journals.Get(bg, 1)
	notUnreadable(err, "Get of a missing journal")
	_, err = e.Cards.Get(bg, -1)
	notUnreadable(err, "Get of a missing card")
	_, err = e.Replies.Get(bg, model.ReplyKey{Thread: "t", Seq: 1})
	notUnreadable(err, "Get of a missing reply")
	// The zero key is a key like any other.
	_, err = e.Matches.Get(bg, "")
	notUnreadable(err, "Get of the empty key")
}

// testRoundTrip: every aggregate of the model, with every kind of value,
// reads back equal through every read path (Get, GetMany, List, All, the
// lookups, the element pages), after Create and after Put.
func testRoundTrip(t *testing.T, e *env) {
	m := richMatch("rich")
	must(t, e.Matches.Create(bg, m))
	if m.Version != 1 {
		t.Fatalf("Create set Match.Version to %d, want 1", m.Version)
	}
	empty := &model.Match{ID: "zero", Code: "zero-code"} // zero values, no rounds
	must(t, e.Matches.Create(bg, empty))

	j := &model.Journal{ID: 5, Owner: "ann", Title: "Ünïcode \ufffd 🎲", Opened: t0,
		Lines: []model.Line{{Kind: "a", Text: "one"}, {Kind: "b"}, {}}}
	must(t, e.Journals.Create(bg, j))
	if j.Version != 1 || j.ID != 5 {
		t.Fatalf("Create of journal 5: id %d, version %d", j.ID, j.Version)
	}
	c := &model.Card{ID: -3, Title: "card", Labels: []string{"x", "y"},
		Props: map[string][]int{"p": {1, 2, 3}, "q": nil}, Parent: &model.Ref{Card: 7, Note: "n"}}
	must(t, e.Cards.Create(bg, c))
	c0 := &model.Card{ID: 0}
	must(t, e.Cards.Create(bg, c0))
	r := &model.Reply{Key: model.ReplyKey{Thread: "th/1", Seq: 4}, Author: "bob", Body: "hi", Posted: t0}
	must(t, e.Replies.Create(bg, r))

	check := func(stage string) {
		t.Helper()
		got, err := e.Matches.Get(bg, m.ID)
		must(t, err)
		e.wantSame(t, stage+": Get of the rich match", got, m)
		got, err = e.Matches.Get(bg, "zero")
		must(t, err)
		e.wantSame(t, stage+": Get of the match of zero values", got, empty)
		many, err := e.Matches.GetMany(bg, []string{m.ID, "zero"})
		must(t, err)
		e.wantSame(t, stage+": GetMany of the matches", many, map[string]*model.Match{m.ID: m, "zero": empty})
		list := collect(t, 1, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) { return e.Matches.List(bg, req) })
		if len(list) != 2 {
			t.Fatalf("%s: List read %d matches, want 2", stage, len(list))
		}
		for _, x := range list {
			want := empty
			if x.ID == m.ID {
				want = m
			}
			e.wantSame(t, stage+": List of match "+x.ID, x, want)
		}
		for x, err := range e.Matches.All(bg) {
			must(t, err)
			if x.ID == m.ID {
				e.wantSame(t, stage+": All", x, m)
			}
		}
		byCode, err := e.Matches.GetByCode(bg, m.Code)
		must(t, err)
		e.wantSame(t, stage+": GetByCode", byCode, m)
		byTag := collect(t, 10, func(req runtime.PageRequest) (runtime.Page[*model.Match], error) {
			return e.Matches.ListByTags(bg, "a", req)
		})
		e.wantSame(t, stage+": ListByTags", byTag, []*model.Match{m})
		bySerial, err := e.Matches.GetByRoundsSerial(bg, m.Rounds[2].Serial)
		must(t, err)
		e.wantSame(t, stage+": GetByRoundsSerial", bySerial, m)
		rounds := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
			return e.Matches.ListRounds(bg, m.ID, req)
		})
		e.wantSame(t, stage+": ListRounds", rounds, m.Rounds)

		gj, err := e.Journals.Get(bg, 5)
		must(t, err)
		e.wantSame(t, stage+": Get of the journal", gj, j)
		lines := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[model.Line], error) {
			return e.Journals.ListLines(bg, 5, req)
		})
		e.wantSame(t, stage+": ListLines", lines, j.Lines)
		owned := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) {
			return e.Journals.ListByOwner(bg, "ann", req)
		})
		e.wantSame(t, stage+": ListByOwner", owned, []*model.Journal{j})

		gc, err := e.Cards.Get(bg, -3)
		must(t, err)
		e.wantSame(t, stage+": Get of the card", gc, c)
		gc0, err := e.Cards.Get(bg, 0)
		must(t, err)
		e.wantSame(t, stage+": Get of card 0", gc0, c0)
		labelled := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Card], error) {
			return e.Cards.ListByLabels(bg, "y", req)
		})
		e.wantSame(t, stage+": ListByLabels", labelled, []*model.Card{c})

		gr, err := e.Replies.Get(bg, r.Key)
		must(t, err)
		e.wantSame(t, stage+": Get of the reply", gr, r)
		thread := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByThread(bg, "th/1", req)
		})
		e.wantSame(t, stage+": ListByThread", thread, []*model.Reply{r})
	}
	check("after Create")

	// Put the same values back (with the version read): identical again.
	for _, x := range []*model.Match{m, empty} {
		must(t, e.Matches.Put(bg, x))
	}
	if m.Version != 2 {
		t.Fatalf("Put set Match.Version to %d, want 2", m.Version)
	}
	must(t, e.Journals.Put(bg, j))
	must(t, e.Cards.Put(bg, c))
	must(t, e.Replies.Put(bg, r))
	check("after Put")
}

// testRoundTripEdge: values some stores cannot hold (the empty block key,
// empty map keys, keys with dots and dollars, NUL in strings) either round
// trip unchanged or are refused with runtime.ErrInvalid, storing nothing.
func testRoundTripEdge(t *testing.T, e *env) {
	edge := func(what string, create func() error, get func() (any, error), want any) {
		t.Helper()
		err := create()
		if errors.Is(err, runtime.ErrInvalid) {
			t.Logf("%s refuses %s: %v", e.h.Name, what, err)
			if _, err := get(); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("%s was refused, yet Get says %v", what, err)
			}
			return
		}
		if err != nil {
			t.Errorf("%s: got error %v, want none or runtime.ErrInvalid", what, err)
			return
		}
		got, err := get()
		if err != nil {
			t.Errorf("%s: Get: %v", what, err)
			return
		}
		if !e.same(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", what, show(e.norm(got)), show(e.norm(want)))
		}
	}
	m := &model.Match{ID: "", Code: "empty-key"}
	edge("the empty block key", func() error { return e.Matches.Create(bg, m) },
		func() (any, error) { return e.Matches.Get(bg, "") }, m)
	keys := &model.Match{ID: "keys", Code: "keys", Meta: map[string]int{"": 1, "a.b": 2, "$x": 3, "x$": 4}}
	edge("map keys that are empty or hold dots and dollars", func() error { return e.Matches.Create(bg, keys) },
		func() (any, error) { return e.Matches.Get(bg, "keys") }, keys)
	nul := &model.Journal{ID: 1, Title: "nul\x00inside", Owner: "a\x00b"}
	edge("NUL in strings", func() error { return e.Journals.Create(bg, nul) },
		func() (any, error) { return e.Journals.Get(bg, 1) }, nul)
	card := &model.Card{ID: 1, Props: map[string][]int{"": {}, "e": nil}}
	edge("an empty map key in an EAO root", func() error { return e.Cards.Create(bg, card) },
		func() (any, error) { return e.Cards.Get(bg, 1) }, card)
	e.lookupsClean(t, "edge values")
}

func testCreateDuplicate(t *testing.T, e *env) {
	e.createMatch(t, "m", 2)
	j := &model.Journal{ID: 1, Owner: "o"}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Cards.Create(bg, &model.Card{ID: 1, Title: "one"}))
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t", Seq: 1}, Body: "one"}))
	before := e.snapshot(t)

	dup := newMatch("m", 0)
	dup.Code, dup.Tags = "other-code", []string{"other"}
	checkErr(t, e.Matches.Create(bg, dup), runtime.ErrDuplicate, "Create of an existing match")
	if dup.Version != 0 {
		t.Errorf("a failed Create set the caller's version to %d", dup.Version)
	}
	checkErr(t, e.Journals.Create(bg, &model.Journal{ID: 1, Owner: "x"}), runtime.ErrDuplicate, "Create of an existing journal")
	checkErr(t, e.Cards.Create(bg, &model.Card{ID: 1, Title: "x"}), runtime.ErrDuplicate, "Create of an existing card")
	checkErr(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t", Seq: 1}, Body: "x"}), runtime.ErrDuplicate, "Create of an existing reply")
	e.unchanged(t, "failed Creates", before)
}

func testPutVersions(t *testing.T, e *env) {
	m := newMatch("v", 2)
	must(t, e.Matches.Put(bg, m)) // version 0: the block must not exist
	if m.Version != 1 {
		t.Fatalf("Put of a new match set version %d, want 1", m.Version)
	}
	stale := clone(e.getMatch(t, "v"))
	m.Region = "south"
	must(t, e.Matches.Put(bg, m))
	if m.Version != 2 || e.getMatch(t, "v").Version != 2 {
		t.Fatalf("version after the second Put: caller %d, stored %d, want 2", m.Version, e.getMatch(t, "v").Version)
	}
	before := e.snapshot(t)
	fresh := newMatch("v", 0) // version 0 over an existing block
	fresh.Code = "fresh"
	ghost := newMatch("ghost", 1) // a version for a block that does not exist
	ghost.Version = 3
	ahead := clone(m) // a version from the future
	ahead.Version = 9
	stale.Region = "stale"
	for _, tc := range []struct {
		what    string
		m       *model.Match
		version int64
	}{
		{"Put with a stale version", stale, 1},
		{"Put with version 0 over an existing match", fresh, 0},
		{"Put with a version of a match that does not exist", ghost, 3},
		{"Put with a version ahead of the stored one", ahead, 9},
	} {
		checkErr(t, e.Matches.Put(bg, tc.m), runtime.ErrConflict, tc.what)
		if tc.m.Version != tc.version {
			t.Errorf("%s changed the caller's version to %d", tc.what, tc.m.Version)
		}
	}
	e.unchanged(t, "failed Puts", before)

	// EAO with a version.
	j := &model.Journal{ID: 3, Owner: "a", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Put(bg, j))
	if j.Version != 1 {
		t.Fatalf("Put of a new journal: version %d", j.Version)
	}
	j.Title = "t2"
	must(t, e.Journals.Put(bg, j))
	old := clone(j)
	old.Version = 1
	before = e.snapshot(t)
	checkErr(t, e.Journals.Put(bg, old), runtime.ErrConflict, "Put of a journal with a stale version")
	e.unchanged(t, "a failed journal Put", before)
	got, err := e.Journals.Get(bg, 3)
	must(t, err)
	e.wantSame(t, "the journal after Puts", got, j)
}

func testPutWithoutVersion(t *testing.T, e *env) {
	c := &model.Card{ID: 9, Title: "first", Labels: []string{"a"}, Props: map[string][]int{"p": {1}}, Parent: &model.Ref{Card: 1}}
	must(t, e.Cards.Put(bg, c)) // creates
	c2 := &model.Card{ID: 9, Title: "second"}
	must(t, e.Cards.Put(bg, c2)) // replaces whole
	got, err := e.Cards.Get(bg, 9)
	must(t, err)
	e.wantSame(t, "a card after Put", got, c2)
	r := &model.Reply{Key: model.ReplyKey{Thread: "t", Seq: 2}, Author: "a", Body: "b", Posted: t0}
	must(t, e.Replies.Put(bg, r))
	r2 := &model.Reply{Key: r.Key, Body: "only"}
	must(t, e.Replies.Put(bg, r2))
	gr, err := e.Replies.Get(bg, r.Key)
	must(t, err)
	e.wantSame(t, "a reply after Put", gr, r2)
}

func testPutShrinksPartition(t *testing.T, e *env) {
	m := e.createMatch(t, "s", 5)
	m.Rounds = m.Rounds[:2]
	must(t, e.Matches.Put(bg, m))
	e.wantSame(t, "the match after a Put of fewer rounds", e.getMatch(t, "s"), m)
	rounds := collect(t, 10, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
		return e.Matches.ListRounds(bg, "s", req)
	})
	if len(rounds) != 2 {
		t.Fatalf("ListRounds after a Put of 2 rounds over 5: %d rounds", len(rounds))
	}
	i, err := e.Matches.AppendRounds(bg, "s", newRound("s", 9))
	must(t, err)
	if i != 2 {
		t.Fatalf("AppendRounds after a Put of 2 rounds returned %d, want 2", i)
	}
	// The serials of the dropped rounds are free again.
	_, err = e.Matches.GetByRoundsSerial(bg, "s/r4")
	wantErr(t, err, runtime.ErrNotFound, "GetByRoundsSerial of a round Put dropped")
	m.Rounds = nil
	must(t, e.Matches.Put(bg, e.getMatchWithout(t, "s")))
	if got := e.getMatch(t, "s"); len(got.Rounds) != 0 {
		t.Fatalf("rounds after a Put of none: %d", len(got.Rounds))
	}
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Text: "1"}, {Text: "2"}, {Text: "3"}}}
	must(t, e.Journals.Create(bg, j))
	j.Lines = j.Lines[:1]
	must(t, e.Journals.Put(bg, j))
	got, err := e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after a Put of fewer lines", got, j)
	i, err = e.Journals.AppendLines(bg, j.ID, model.Line{Text: "new"})
	must(t, err)
	if i != 1 {
		t.Fatalf("AppendLines after a Put of 1 line returned %d, want 1", i)
	}
}

// getMatchWithout reads match id and drops its rounds.
func (e *env) getMatchWithout(t *testing.T, id string) *model.Match {
	t.Helper()
	m := e.getMatch(t, id)
	m.Rounds = nil
	return m
}

func testDelete(t *testing.T, e *env) {
	e.createMatch(t, "d", 3)
	keep := e.createMatch(t, "keep", 1)
	must(t, e.Matches.Delete(bg, "d"))
	_, err := e.Matches.Get(bg, "d")
	wantErr(t, err, runtime.ErrNotFound, "Get after Delete")
	before := e.snapshot(t)
	wantErr(t, e.Matches.Delete(bg, "d"), runtime.ErrNotFound, "a second Delete")
	e.unchanged(t, "a failed Delete", before)
	e.wantSame(t, "the other match after Delete", e.getMatch(t, "keep"), keep)
	// Created again, the block starts from scratch: version 1, no old
	// entries, appends from index 0, its unique values were freed.
	fresh := newMatch("d", 0)
	must(t, e.Matches.Create(bg, fresh))
	e.wantSame(t, "the match created again", e.getMatch(t, "d"), fresh)
	i, err := e.Matches.AppendRounds(bg, "d", newRound("d", 0))
	must(t, err)
	if i != 0 {
		t.Fatalf("AppendRounds to a match created again returned %d, want 0", i)
	}
	wantErr(t, e.Journals.Delete(bg, 1), runtime.ErrNotFound, "Delete of a missing journal")
	wantErr(t, e.Cards.Delete(bg, 1), runtime.ErrNotFound, "Delete of a missing card")
	wantErr(t, e.Replies.Delete(bg, model.ReplyKey{Thread: "t", Seq: 1}), runtime.ErrNotFound, "Delete of a missing reply")
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Journals.Delete(bg, j.ID))
	page, err := e.Journals.ListByLinesKind(bg, "k", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Fatalf("ListByLinesKind after Delete: %d journals", len(page.Items))
	}
	e.lookupsClean(t, "Deletes")
}

func testNilAggregate(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	before := e.snapshot(t)
	for what, err := range map[string]error{
		"Match Create(nil)":   e.Matches.Create(bg, nil),
		"Match Put(nil)":      e.Matches.Put(bg, nil),
		"Journal Create(nil)": e.Journals.Create(bg, nil),
		"Journal Put(nil)":    e.Journals.Put(bg, nil),
		"Card Create(nil)":    e.Cards.Create(bg, nil),
		"Card Put(nil)":       e.Cards.Put(bg, nil),
		"Reply Create(nil)":   e.Replies.Create(bg, nil),
		"Reply Put(nil)":      e.Replies.Put(bg, nil),
	} {
		checkErr(t, err, runtime.ErrInvalid, what)
	}
	e.unchanged(t, "writes of nil aggregates", before)
}

const badUTF8 = "bad\xff\xfekey"

func testInvalidUTF8Key(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	before := e.snapshot(t)
	bad := newMatch(badUTF8, 1)
	_, getErr := e.Matches.Get(bg, badUTF8)
	_, manyErr := e.Matches.GetMany(bg, []string{"m", badUTF8})
	_, appendErr := e.Matches.AppendRounds(bg, badUTF8, newRound("x", 0))
	_, roundsErr := e.Matches.ListRounds(bg, badUTF8, runtime.PageRequest{})
	for what, err := range map[string]error{
		"Get":          getErr,
		"GetMany":      manyErr,
		"Create":       e.Matches.Create(bg, bad),
		"Put":          e.Matches.Put(bg, newMatch(badUTF8, 0)),
		"Delete":       e.Matches.Delete(bg, badUTF8),
		"SetCode":      e.Matches.SetCode(bg, badUTF8, "x"),
		"AppendRounds": appendErr,
		"SetRoundsAt":  e.Matches.SetRoundsAt(bg, badUTF8, 0, newRound("x", 0)),
		"Update":       e.Matches.Update(bg, badUTF8, model.MatchUpdate{Region: ptr("x")}),
		"ListRounds":   roundsErr,
	} {
		checkErr(t, err, runtime.ErrInvalid, "Match "+what+" with a block key that is not valid UTF-8")
	}
	// A string part of a composite key is a string key too.
	badKey := model.ReplyKey{Thread: badUTF8}
	_, getErr = e.Replies.Get(bg, model.ReplyKey{Thread: badUTF8, Seq: 1})
	_, scopeErr := e.Replies.ListByThread(bg, badUTF8, runtime.PageRequest{})
	for what, err := range map[string]error{
		"Create":       e.Replies.Create(bg, &model.Reply{Key: badKey}),
		"Put":          e.Replies.Put(bg, &model.Reply{Key: model.ReplyKey{Thread: badUTF8, Seq: 3}}),
		"Get":          getErr,
		"ListByThread": scopeErr,
	} {
		checkErr(t, err, runtime.ErrInvalid, "Reply "+what+" with a key part that is not valid UTF-8")
	}
	e.unchanged(t, "writes with keys that are not valid UTF-8", before)
}

// testInvalidUTF8LookupValue: runtime.ErrInvalid covers "a value a store
// cannot hold unchanged (invalid UTF-8 in a string key or lookup value)": a
// store either refuses such a lookup value with ErrInvalid, changing
// nothing, or keeps it unchanged, findable by exactly those bytes.
func testInvalidUTF8LookupValue(t *testing.T, e *env) {
	before := e.snapshot(t)
	m := newMatch("m", 0)
	m.Code = badUTF8
	err := e.Matches.Create(bg, m)
	if errors.Is(err, runtime.ErrInvalid) {
		t.Logf("%s refuses a unique lookup value that is not valid UTF-8: %v", e.h.Name, err)
		e.unchanged(t, "a refused Create", before)
		return
	}
	must(t, err)
	t.Logf("%s keeps a lookup value that is not valid UTF-8", e.h.Name)
	got, err := e.Matches.GetByCode(bg, badUTF8)
	must(t, err)
	if got.Code != badUTF8 {
		t.Fatalf("GetByCode of a value that is not valid UTF-8 returned code %q, want %q", got.Code, badUTF8)
	}
	if _, err := e.Matches.GetByCode(bg, "bad\ufffd\ufffdkey"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("the value was changed on the way (GetByCode of the replaced text: %v)", err)
	}
}

func ptr[T any](v T) *T { return &v }

// testCancelledContext: every method given a context that is already
// cancelled fails with an error wrapping context.Canceled and writes
// nothing.
func testCancelledContext(t *testing.T, e *env) {
	e.createMatch(t, "m", 2)
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}}}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Cards.Create(bg, &model.Card{ID: 1}))
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	before := e.snapshot(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	first := func(seq func(func(*model.Match, error) bool)) error {
		var out error
		seq(func(_ *model.Match, err error) bool { out = err; return false })
		return out
	}
	calls := []struct {
		what string
		call func() error
	}{
		{"Get", func() error { _, err := e.Matches.Get(ctx, "m"); return err }},
		{"GetMany", func() error { _, err := e.Matches.GetMany(ctx, []string{"m"}); return err }},
		{"Create", func() error { return e.Matches.Create(ctx, newMatch("new", 1)) }},
		{"Create with a counter", func() error { return e.Journals.Create(ctx, &model.Journal{Owner: "o"}) }},
		{"Create with a scoped counter", func() error { return e.Replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "t"}}) }},
		{"Put", func() error { return e.Matches.Put(ctx, e.getMatch(t, "m")) }},
		{"Put without version", func() error { return e.Cards.Put(ctx, &model.Card{ID: 1, Title: "x"}) }},
		{"Delete", func() error { return e.Matches.Delete(ctx, "m") }},
		{"SetRegion", func() error { return e.Matches.SetRegion(ctx, "m", "x") }},
		{"SetCode", func() error { return e.Matches.SetCode(ctx, "m", "x") }},
		{"AppendRounds", func() error { _, err := e.Matches.AppendRounds(ctx, "m", newRound("m", 7)); return err }},
		{"SetRoundsAt", func() error { return e.Matches.SetRoundsAt(ctx, "m", 0, newRound("m", 8)) }},
		{"Update", func() error { return e.Matches.Update(ctx, "m", model.MatchUpdate{Level: ptr(5)}) }},
		{"empty Update", func() error { return e.Matches.Update(ctx, "m", model.MatchUpdate{}) }},
		{"Journal Update of the root", func() error {
			return e.Journals.Update(ctx, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "p"}})
		}},
		{"List", func() error { _, err := e.Matches.List(ctx, runtime.PageRequest{}); return err }},
		{"All", func() error { return first(e.Matches.All(ctx)) }},
		{"ListRounds", func() error { _, err := e.Matches.ListRounds(ctx, "m", runtime.PageRequest{}); return err }},
		{"ListByCode", func() error { _, err := e.Matches.ListByCode(ctx, "code-m", runtime.PageRequest{}); return err }},
		{"GetByCode", func() error { _, err := e.Matches.GetByCode(ctx, "code-m"); return err }},
		{"ListByRegionLevel", func() error {
			_, err := e.Matches.ListByRegionLevel(ctx, model.MatchRegionLevelQuery{Region: runtime.Eq("north")}, runtime.PageRequest{})
			return err
		}},
		{"ListByThread", func() error { _, err := e.Replies.ListByThread(ctx, "t", runtime.PageRequest{}); return err }},
		{"CountByThread", func() error { _, err := e.Replies.CountByThread(ctx, "t"); return err }},
		{"Repair", func() error { _, err := e.Matches.Repair(ctx); return err }},
		{"EnsureIndexes", func() error { return e.Matches.EnsureIndexes(ctx) }},
	}
	for _, c := range calls {
		var err error
		noPanic(t, c.what, func() { err = c.call() })
		checkErr(t, err, context.Canceled, fmt.Sprintf("%s with a cancelled context", c.what))
	}
	// The writes of a given block name it.
	for _, c := range calls {
		switch c.what {
		case "Put", "Delete", "SetRegion", "SetCode", "AppendRounds", "SetRoundsAt", "Update":
			var re *runtime.Error
			if err := c.call(); !errors.As(err, &re) || re.ID != "m" {
				t.Errorf("%s of block m with a cancelled context: %v, want an error naming the block", c.what, err)
			}
		}
	}
	e.unchanged(t, "calls with a cancelled context", before)
}
