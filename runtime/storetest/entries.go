package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var entryTests = []subtest{
	{name: "SettersWriteOnlyTheirEntry", fn: testSetters},
	{name: "SettersOnMissingBlock", fn: testSettersMissing},
	{name: "AppendIndexes", fn: testAppend},
	{name: "SetAt", fn: testSetAt},
	{name: "SetAtMissingElement", fn: testSetAtMissing},
	{name: "UpdateSeveralEntries", fn: testUpdate},
	{name: "UpdateIsAtomic", fn: testUpdateAtomic},
	{name: "UpdateNothingOnlyChecks", fn: testUpdateEmpty},
	{name: "UpdateIfVersion", fn: testUpdateIfVersion},
	{name: "UpdateRoot", fn: testUpdateRoot},
	{name: "EveryWriteBumpsVersion", fn: testVersionBumps},
	{name: "ListElements", fn: testListElements},
	{name: "ListElementsCursors", fn: testListElementsCursors},
	{name: "ListElementsWhileAppending", fn: testListElementsWhileAppending},
}

// testSetters: each setter writes its entry and the version, nothing else
// (the other fields and blocks are as they were).
func testSetters(t *testing.T, e *env) {
	e.createMatch(t, "other", 1)
	m := e.createMatch(t, "m", 2)
	later := t0.Add(36 * time.Hour)
	for _, tc := range []struct {
		name  string
		set   func() error
		apply func(*model.Match)
	}{
		{"SetCode", func() error { return e.Matches.SetCode(bg, "m", "new-code") }, func(m *model.Match) { m.Code = "new-code" }},
		{"SetRegion", func() error { return e.Matches.SetRegion(bg, "m", "") }, func(m *model.Match) { m.Region = "" }},
		{"SetLevel", func() error { return e.Matches.SetLevel(bg, "m", -1) }, func(m *model.Match) { m.Level = -1 }},
		{"SetTags", func() error { return e.Matches.SetTags(bg, "m", []string{"x", "y"}) }, func(m *model.Match) { m.Tags = []string{"x", "y"} }},
		{"SetTags(nil)", func() error { return e.Matches.SetTags(bg, "m", nil) }, func(m *model.Match) { m.Tags = nil }},
		{"SetVenue", func() error { return e.Matches.SetVenue(bg, "m", model.Venue{City: "Oslo", Geo: &model.Geo{Lat: 1}}) }, func(m *model.Match) {
			m.Venue = model.Venue{City: "Oslo", Geo: &model.Geo{Lat: 1}}
		}},
		{"SetStart", func() error { return e.Matches.SetStart(bg, "m", later) }, func(m *model.Match) { m.Start = later }},
		{"SetMeta", func() error { return e.Matches.SetMeta(bg, "m", map[string]int{"z": 26}) }, func(m *model.Match) { m.Meta = map[string]int{"z": 26} }},
		{"SetMeta(nil)", func() error { return e.Matches.SetMeta(bg, "m", nil) }, func(m *model.Match) { m.Meta = nil }},
	} {
		before := e.snapshot(t)
		must(t, tc.set())
		tc.apply(m)
		m.Version++
		e.wantSame(t, "the match after "+tc.name, e.getMatch(t, "m"), m)
		delete(before, "Match m")
		after := e.snapshot(t)
		delete(after, "Match m")
		e.wantSame(t, "the other blocks after "+tc.name, after, before)
	}
	// Without a version.
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: "a", Body: "b", Posted: t0}
	must(t, e.Replies.Create(bg, r))
	must(t, e.Replies.SetBody(bg, r.Key, "changed"))
	must(t, e.Replies.SetPosted(bg, r.Key, later))
	r.Body, r.Posted = "changed", later
	got, err := e.Replies.Get(bg, r.Key)
	must(t, err)
	e.wantSame(t, "the reply after its setters", got, r)
	e.lookupsClean(t, "setters")
}

func testSettersMissing(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	before := e.snapshot(t)
	for what, err := range map[string]error{
		"SetCode":          e.Matches.SetCode(bg, "nope", "c"),
		"SetRegion":        e.Matches.SetRegion(bg, "nope", "r"),
		"SetMeta":          e.Matches.SetMeta(bg, "nope", nil),
		"Update":           e.Matches.Update(bg, "nope", model.MatchUpdate{Level: ptr(3)}),
		"Reply SetBody":    e.Replies.SetBody(bg, model.ReplyKey{Thread: "t", Seq: 1}, "x"),
		"Reply Update":     e.Replies.Update(bg, model.ReplyKey{Thread: "t", Seq: 1}, model.ReplyUpdate{Body: ptr("x")}),
		"Journal Update":   e.Journals.Update(bg, 1, model.JournalUpdate{Root: &model.Journal{Owner: "x"}}),
		"Journal SetLines": e.Journals.SetLinesAt(bg, 1, 0, model.Line{}),
	} {
		checkErr(t, err, runtime.ErrNotFound, what+" of a missing block")
	}
	e.unchanged(t, "setters of missing blocks", before)
}

func testAppend(t *testing.T, e *env) {
	m := e.createMatch(t, "m", 0)
	for want := range 3 {
		r := newRound("m", want)
		i, err := e.Matches.AppendRounds(bg, "m", r)
		must(t, err)
		if i != want {
			t.Fatalf("AppendRounds returned %d, want %d", i, want)
		}
		m.Rounds = append(m.Rounds, r)
		m.Version++
		e.wantSame(t, fmt.Sprintf("the match after append %d", want), e.getMatch(t, "m"), m)
	}
	j := &model.Journal{Owner: "o"}
	must(t, e.Journals.Create(bg, j))
	for want := range 3 {
		l := model.Line{Kind: "k", Text: fmt.Sprint(want)}
		i, err := e.Journals.AppendLines(bg, j.ID, l)
		must(t, err)
		if i != want {
			t.Fatalf("AppendLines returned %d, want %d", i, want)
		}
		j.Lines = append(j.Lines, l)
		j.Version++
	}
	got, err := e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after appends", got, j)
	before := e.snapshot(t)
	_, err = e.Matches.AppendRounds(bg, "nope", newRound("nope", 0))
	checkErr(t, err, runtime.ErrNotFound, "AppendRounds to a missing match")
	_, err = e.Journals.AppendLines(bg, j.ID+100, model.Line{})
	checkErr(t, err, runtime.ErrNotFound, "AppendLines to a missing journal")
	e.unchanged(t, "appends to missing blocks", before)
}

func testSetAt(t *testing.T, e *env) {
	m := e.createMatch(t, "m", 3)
	r := model.Round{Serial: "new", Moves: []string{"x"}, At: t0.Add(time.Second)}
	must(t, e.Matches.SetRoundsAt(bg, "m", 1, r))
	m.Rounds[1] = r
	m.Version++
	e.wantSame(t, "the match after SetRoundsAt(1)", e.getMatch(t, "m"), m)
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Text: "0"}, {Text: "1"}}}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Journals.SetLinesAt(bg, j.ID, 0, model.Line{Kind: "k", Text: "zero"}))
	j.Lines[0] = model.Line{Kind: "k", Text: "zero"}
	j.Version++
	got, err := e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after SetLinesAt(0)", got, j)
}

func testSetAtMissing(t *testing.T, e *env) {
	e.createMatch(t, "m", 3)
	e.createMatch(t, "empty", 0)
	before := e.snapshot(t)
	for _, tc := range []struct {
		id string
		i  int
	}{{"m", 3}, {"m", 4}, {"m", 1000}, {"m", -1}, {"m", 1 << 40}, {"empty", 0}, {"nope", 0}} {
		err := e.Matches.SetRoundsAt(bg, tc.id, tc.i, newRound("x", tc.i))
		checkErr(t, err, runtime.ErrNotFound, fmt.Sprintf("SetRoundsAt(%q, %d)", tc.id, tc.i))
	}
	e.unchanged(t, "SetRoundsAt of missing elements", before)
}

func testUpdate(t *testing.T, e *env) {
	m := e.createMatch(t, "m", 3)
	later := t0.Add(time.Hour)
	u := model.MatchUpdate{
		Region:   ptr("east"),
		Level:    ptr(0), // a zero value is written
		Venue:    &model.Venue{City: "Graz"},
		Start:    &later,
		Tags:     &[]string{},
		RoundsAt: map[int]model.Round{2: newRound("m", 22), 0: newRound("m", 20)},
	}
	must(t, e.Matches.Update(bg, "m", u))
	m.Region, m.Level, m.Venue, m.Start, m.Tags = "east", 0, model.Venue{City: "Graz"}, later, nil
	m.Rounds[0], m.Rounds[2] = newRound("m", 20), newRound("m", 22)
	m.Version++ // once per Update
	e.wantSame(t, "the match after Update", e.getMatch(t, "m"), m)
	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: "a", Body: "b"}
	must(t, e.Replies.Create(bg, r))
	must(t, e.Replies.Update(bg, r.Key, model.ReplyUpdate{Author: ptr("z"), Body: ptr("")}))
	r.Author, r.Body = "z", ""
	got, err := e.Replies.Get(bg, r.Key)
	must(t, err)
	e.wantSame(t, "the reply after Update", got, r)
	e.lookupsClean(t, "Updates")
}

func testUpdateAtomic(t *testing.T, e *env) {
	e.createMatch(t, "m", 2)
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Text: "0"}}}
	must(t, e.Journals.Create(bg, j))
	before := e.snapshot(t)
	err := e.Matches.Update(bg, "m", model.MatchUpdate{
		Code: ptr("changed"), Region: ptr("changed"), Tags: &[]string{"changed"},
		RoundsAt: map[int]model.Round{0: newRound("changed", 0), 5: newRound("changed", 5)},
	})
	if checkErr(t, err, runtime.ErrNotFound, "Update with a missing element") && !strings.Contains(err.Error(), "rounds[5]") {
		t.Errorf("the error %q does not name the missing element rounds[5]", err)
	}
	err = e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "changed"},
		LinesAt: map[int]model.Line{0: {Text: "changed"}, 1: {Text: "missing"}}})
	checkErr(t, err, runtime.ErrNotFound, "Journal Update with a missing element")
	e.unchanged(t, "Updates with a missing element", before)
}

func testUpdateEmpty(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	j := &model.Journal{Owner: "o"}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	before := e.snapshot(t)
	must(t, e.Matches.Update(bg, "m", model.MatchUpdate{}))
	must(t, e.Matches.Update(bg, "m", model.MatchUpdate{IfVersion: 1}))
	must(t, e.Matches.Update(bg, "m", model.MatchUpdate{RoundsAt: map[int]model.Round{}}))
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{}))
	must(t, e.Replies.Update(bg, model.ReplyKey{Thread: "t", Seq: 1}, model.ReplyUpdate{}))
	e.unchanged(t, "Updates that set nothing", before)
	checkErr(t, e.Matches.Update(bg, "nope", model.MatchUpdate{}), runtime.ErrNotFound, "an empty Update of a missing match")
	checkErr(t, e.Matches.Update(bg, "m", model.MatchUpdate{IfVersion: 2}), runtime.ErrConflict, "an empty Update with a stale IfVersion")
	checkErr(t, e.Journals.Update(bg, j.ID+1, model.JournalUpdate{}), runtime.ErrNotFound, "an empty Update of a missing journal")
	checkErr(t, e.Replies.Update(bg, model.ReplyKey{Thread: "t", Seq: 2}, model.ReplyUpdate{}), runtime.ErrNotFound, "an empty Update of a missing reply")
	e.unchanged(t, "failed empty Updates", before)
}

func testUpdateIfVersion(t *testing.T, e *env) {
	m := e.createMatch(t, "m", 1)
	must(t, e.Matches.Update(bg, "m", model.MatchUpdate{Level: ptr(2), IfVersion: 1}))
	m.Level, m.Version = 2, 2
	e.wantSame(t, "the match after a conditional Update", e.getMatch(t, "m"), m)
	before := e.snapshot(t)
	checkErr(t, e.Matches.Update(bg, "m", model.MatchUpdate{Level: ptr(3), IfVersion: 1}), runtime.ErrConflict, "Update with a stale IfVersion")
	checkErr(t, e.Matches.Update(bg, "m", model.MatchUpdate{Level: ptr(3), IfVersion: 3}), runtime.ErrConflict, "Update with an IfVersion ahead")
	checkErr(t, e.Matches.Update(bg, "m", model.MatchUpdate{RoundsAt: map[int]model.Round{0: newRound("m", 9)}, IfVersion: 1}), runtime.ErrConflict, "an element Update with a stale IfVersion")
	checkErr(t, e.Matches.Update(bg, "nope", model.MatchUpdate{Level: ptr(3), IfVersion: 1}), runtime.ErrNotFound, "a conditional Update of a missing match")
	e.unchanged(t, "Updates with a wrong IfVersion", before)
}

func testUpdateRoot(t *testing.T, e *env) {
	j := &model.Journal{Owner: "ann", Title: "t", Opened: t0, Lines: []model.Line{{Kind: "k", Text: "0"}}}
	must(t, e.Journals.Create(bg, j))
	// Root writes owner, title and opened; it ignores the id, the version
	// and the partition of *Root.
	root := &model.Journal{ID: 999, Owner: "bob", Title: "", Opened: t0.Add(time.Hour), Lines: []model.Line{{Text: "ignored"}}, Version: 77}
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: root}))
	j.Owner, j.Title, j.Opened = "bob", "", t0.Add(time.Hour)
	j.Version++
	got, err := e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after Update of the root", got, j)
	if _, err := e.Journals.Get(bg, 999); err == nil {
		t.Fatalf("Update of the root created a journal with the root's id")
	}
	owned := collect(t, 5, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) {
		return e.Journals.ListByOwner(bg, "bob", req)
	})
	e.wantSame(t, "ListByOwner after Update of the root", owned, []*model.Journal{j})
	owned = collect(t, 5, func(req runtime.PageRequest) (runtime.Page[*model.Journal], error) {
		return e.Journals.ListByOwner(bg, "ann", req)
	})
	if len(owned) != 0 {
		t.Fatalf("ListByOwner of the old owner after Update of the root: %d journals", len(owned))
	}
	// Root and elements in one Update.
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "cy"}, LinesAt: map[int]model.Line{0: {Kind: "z"}}, IfVersion: j.Version}))
	j.Owner, j.Opened, j.Lines[0] = "cy", time.Time{}, model.Line{Kind: "z"}
	j.Version++
	got, err = e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after Update of the root and an element", got, j)
	e.lookupsClean(t, "Updates of the root")
}

// testVersionBumps: every kind of write bumps the version by one, so that a
// Put holding the version read before it conflicts.
func testVersionBumps(t *testing.T, e *env) {
	e.createMatch(t, "m", 2)
	writes := []struct {
		what  string
		write func() error
	}{
		{"a setter", func() error { return e.Matches.SetLevel(bg, "m", 9) }},
		{"a setter writing the value it holds", func() error { return e.Matches.SetLevel(bg, "m", 9) }},
		{"AppendRounds", func() error { _, err := e.Matches.AppendRounds(bg, "m", newRound("m", 5)); return err }},
		{"SetRoundsAt", func() error { return e.Matches.SetRoundsAt(bg, "m", 0, newRound("m", 6)) }},
		{"Update", func() error {
			return e.Matches.Update(bg, "m", model.MatchUpdate{Region: ptr("w"), Tags: &[]string{"q"}})
		}},
		{"Update of elements", func() error {
			return e.Matches.Update(bg, "m", model.MatchUpdate{RoundsAt: map[int]model.Round{1: newRound("m", 7)}})
		}},
		{"Put", func() error { return e.Matches.Put(bg, e.getMatch(t, "m")) }},
	}
	for _, w := range writes {
		read := e.getMatch(t, "m")
		must(t, w.write())
		got := e.getMatch(t, "m")
		if got.Version != read.Version+1 {
			t.Fatalf("%s: version %d -> %d, want +1", w.what, read.Version, got.Version)
		}
		read.Level = 42
		checkErr(t, e.Matches.Put(bg, read), runtime.ErrConflict, "Put holding the version read before "+w.what)
	}
	j := &model.Journal{Owner: "o", Lines: []model.Line{{}}}
	must(t, e.Journals.Create(bg, j))
	for _, w := range []struct {
		what  string
		write func() error
	}{
		{"AppendLines", func() error { _, err := e.Journals.AppendLines(bg, j.ID, model.Line{Kind: "a"}); return err }},
		{"SetLinesAt", func() error { return e.Journals.SetLinesAt(bg, j.ID, 0, model.Line{Kind: "b"}) }},
		{"Update of the root", func() error {
			return e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "p"}})
		}},
	} {
		read, err := e.Journals.Get(bg, j.ID)
		must(t, err)
		must(t, w.write())
		got, err := e.Journals.Get(bg, j.ID)
		must(t, err)
		if got.Version != read.Version+1 {
			t.Fatalf("journal %s: version %d -> %d, want +1", w.what, read.Version, got.Version)
		}
		checkErr(t, e.Journals.Put(bg, read), runtime.ErrConflict, "journal Put holding the version read before "+w.what)
	}
}

func roundSerials(rs []model.Round) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Serial)
	}
	return out
}

func testListElements(t *testing.T, e *env) {
	m := e.createMatch(t, "m", 7)
	e.createMatch(t, "other", 7)
	var sizes []int
	var got []model.Round
	req := runtime.PageRequest{Limit: 3}
	for range 10 {
		page, err := e.Matches.ListRounds(bg, "m", req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	e.wantSame(t, "the rounds read by pages of 3", got, m.Rounds)
	if !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Fatalf("page sizes %v, want [3 3 1]", sizes)
	}
	for _, limit := range []int{1, 2, 6, 7, 8, 0, runtime.MaxPageLimit + 1} {
		all := collect(t, limit, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
			return e.Matches.ListRounds(bg, "m", req)
		})
		e.wantSame(t, fmt.Sprintf("the rounds read by pages of %d", limit), all, m.Rounds)
	}
	page, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 7})
	must(t, err)
	if len(page.Items) != 7 || page.Next != "" {
		t.Fatalf("ListRounds with limit 7 of 7: %d items, Next %q (want no Next)", len(page.Items), page.Next)
	}
	e.createMatch(t, "none", 0)
	page, err = e.Matches.ListRounds(bg, "none", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 || page.Next != "" {
		t.Fatalf("ListRounds of a match without rounds: %+v", page)
	}
	_, err = e.Matches.ListRounds(bg, "nope", runtime.PageRequest{})
	wantErr(t, err, runtime.ErrNotFound, "ListRounds of a missing match")
	j := &model.Journal{Owner: "o", Lines: []model.Line{{Text: "a"}, {Text: "b"}, {Text: "c"}}}
	must(t, e.Journals.Create(bg, j))
	lines := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[model.Line], error) {
		return e.Journals.ListLines(bg, j.ID, req)
	})
	e.wantSame(t, "the lines read by pages of 2", lines, j.Lines)
	_, err = e.Journals.ListLines(bg, j.ID+1, runtime.PageRequest{})
	wantErr(t, err, runtime.ErrNotFound, "ListLines of a missing journal")
}

// testListElementsCursors: cursors of element pages are bound to the block
// and the partition; tampered or forged ones fail with ErrBadCursor (a
// forged position far out of range may also give an empty page), and none
// makes the store panic.
func testListElementsCursors(t *testing.T, e *env) {
	e.createMatch(t, "m", 5)
	e.createMatch(t, "other", 5)
	j := &model.Journal{ID: 1, Owner: "o", Lines: []model.Line{{}, {}, {}}}
	must(t, e.Journals.Create(bg, j))
	first, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 2})
	must(t, err)
	good := first.Next
	list, err := e.Matches.List(bg, runtime.PageRequest{Limit: 1})
	must(t, err)
	lines, err := e.Journals.ListLines(bg, 1, runtime.PageRequest{Limit: 1})
	must(t, err)
	flip := []byte(good)
	flip[len(flip)/2] ^= 1
	bad := map[string]string{
		"from another block": "", // filled below
		"tampered":           string(flip),
		"truncated":          good[:len(good)-2],
		"extended":           good + "AA",
		"garbage":            "!!",
		"from List":          list.Next,
		"from ListLines":     lines.Next,
	}
	other, err := e.Matches.ListRounds(bg, "other", runtime.PageRequest{Limit: 2})
	must(t, err)
	bad["from another block"] = other.Next
	for what, c := range bad {
		noPanic(t, "ListRounds with a cursor "+what, func() {
			_, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 2, Cursor: c})
			checkErr(t, err, runtime.ErrBadCursor, "ListRounds with a cursor "+what)
		})
	}
	// Forged positions (the index of the next element), signed with the
	// key (as a client could when runtime.SetCursorKey was not called):
	// never a panic, never elements of another position than asked.
	query := runtime.ElemQuery("Match", "rounds", runtime.AppendString(nil, "m"))
	for _, pos := range []int64{-2, -1, 4, 5, runtime.MaxElemIndex - 1, runtime.MaxElemIndex, 1 << 40, -1 << 62} {
		c := runtime.EncodeCursor(query, runtime.AppendInt(nil, pos))
		noPanic(t, fmt.Sprintf("ListRounds after a forged position %d", pos), func() {
			page, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 2, Cursor: c})
			if err != nil {
				checkErr(t, err, runtime.ErrBadCursor, fmt.Sprintf("ListRounds after a forged position %d", pos))
				return
			}
			if pos >= 5 && len(page.Items) != 0 {
				t.Errorf("ListRounds after a forged position %d: %d rounds, want none", pos, len(page.Items))
			}
		})
	}
	for _, payload := range [][]byte{{}, {0xff}, runtime.AppendString(nil, "x"), append(runtime.AppendInt(nil, 1), 0)} {
		c := runtime.EncodeCursor(query, payload)
		noPanic(t, fmt.Sprintf("ListRounds after a forged payload %x", payload), func() {
			_, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 2, Cursor: c})
			checkErr(t, err, runtime.ErrBadCursor, fmt.Sprintf("ListRounds after a forged payload %x", payload))
		})
	}
	// The good cursor still works.
	page, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 2, Cursor: good})
	must(t, err)
	if got := roundSerials(page.Items); !slices.Equal(got, []string{"m/r2", "m/r3"}) {
		t.Fatalf("the second page: %v", got)
	}
}

func testListElementsWhileAppending(t *testing.T, e *env) {
	e.createMatch(t, "m", 4)
	page, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 3})
	must(t, err)
	got := roundSerials(page.Items)
	for i := 4; i < 6; i++ {
		_, err := e.Matches.AppendRounds(bg, "m", newRound("m", i))
		must(t, err)
	}
	must(t, e.Matches.SetRoundsAt(bg, "m", 0, model.Round{Serial: "m/changed"})) // before the cursor
	rest := collect(t, 3, func(req runtime.PageRequest) (runtime.Page[model.Round], error) {
		if req.Cursor == "" {
			req.Cursor = page.Next
		}
		return e.Matches.ListRounds(bg, "m", req)
	})
	got = append(got, roundSerials(rest)...)
	eqStrings(t, "rounds read while appending", got, "m/r0", "m/r1", "m/r2", "m/r3", "m/r4", "m/r5")
}
