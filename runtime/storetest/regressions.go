package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// regressionTests are bugs that applications hit, one subtest each.
var regressionTests = []subtest{
	{name: "UpdateLookupAndUnreadPartition", fn: testUpdateUnreadPartition},
	{name: "InvalidUTF8LookupReads", fn: testInvalidUTF8LookupReads},
}

// testUpdateUnreadPartition: an Update that changes a looked-up field and an
// element of a partition that no lookup reads writes both (the store must
// not look for the element in the part of the block it read for the
// lookups), on an EAO aggregate (Journal: root and notes) and an ETF one
// (Reply: author and edits); a missing element of that partition still
// fails the whole Update with ErrNotFound naming it.
func testUpdateUnreadPartition(t *testing.T, e *env) {
	j := &model.Journal{Owner: "ann", Title: "t", Opened: t0, Lines: []model.Line{{Kind: "k", Text: "0"}}, Notes: []string{"n0", "n1"}}
	must(t, e.Journals.Create(bg, j))
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "bob", Title: "t"}, NotesAt: map[int]string{1: "changed"}}))
	j.Owner, j.Opened, j.Notes[1] = "bob", time.Time{}, "changed"
	j.Version++
	got, err := e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after Update of the root and notes[1]", got, j)
	if ids := e.journalsBy(t, "bob", ""); len(ids) != 1 || ids[0] != j.ID {
		t.Fatalf("ListByOwner(bob) after the Update: %v, want [%v]", ids, j.ID)
	}
	if ids := e.journalsBy(t, "ann", ""); len(ids) != 0 {
		t.Fatalf("ListByOwner(ann) after the Update: %v, want none", ids)
	}
	// Both partitions and the root in one Update.
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "cy"},
		LinesAt: map[int]model.Line{0: {Kind: "z"}}, NotesAt: map[int]string{0: "first"}, IfVersion: j.Version}))
	j.Owner, j.Title, j.Lines[0], j.Notes[0] = "cy", "", model.Line{Kind: "z"}, "first"
	j.Version++
	got, err = e.Journals.Get(bg, j.ID)
	must(t, err)
	e.wantSame(t, "the journal after Update of the root, lines[0] and notes[0]", got, j)
	if ids := e.journalsBy(t, "", "z"); len(ids) != 1 || ids[0] != j.ID {
		t.Fatalf("ListByLinesKind(z) after the Update: %v, want [%v]", ids, j.ID)
	}

	r := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: "ann", Body: "b", Posted: t0, Edits: []string{"e0", "e1", "e2"}}
	must(t, e.Replies.Create(bg, r))
	must(t, e.Replies.Update(bg, r.Key, model.ReplyUpdate{Author: ptr("bob"), EditsAt: map[int]string{2: "changed"}}))
	r.Author, r.Edits[2] = "bob", "changed"
	gotR, err := e.Replies.Get(bg, r.Key)
	must(t, err)
	e.wantSame(t, "the reply after Update of author and edits[2]", gotR, r)
	byAuthor := func(a string) []*model.Reply {
		return collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByAuthor(bg, a, req)
		})
	}
	e.wantSame(t, "ListByAuthor(bob) after the Update", byAuthor("bob"), []*model.Reply{r})
	if rs := byAuthor("ann"); len(rs) != 0 {
		t.Fatalf("ListByAuthor(ann) after the Update: %d replies, want none", len(rs))
	}
	e.lookupsClean(t, "Updates of a lookup and a partition no lookup reads")

	// A missing element of the unread partition fails the whole Update.
	before := e.snapshot(t)
	err = e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "dan"}, NotesAt: map[int]string{5: "missing"}})
	if checkErr(t, err, runtime.ErrNotFound, "Journal Update of the root and a missing notes[5]") && !strings.Contains(err.Error(), "notes[5]") {
		t.Errorf("the error %q does not name the missing element notes[5]", err)
	}
	err = e.Replies.Update(bg, r.Key, model.ReplyUpdate{Author: ptr("dan"), EditsAt: map[int]string{3: "missing"}})
	if checkErr(t, err, runtime.ErrNotFound, "Reply Update of author and a missing edits[3]") && !strings.Contains(err.Error(), "edits[3]") {
		t.Errorf("the error %q does not name the missing element edits[3]", err)
	}
	e.unchanged(t, "Updates with a missing element of a partition no lookup reads", before)
}

// testInvalidUTF8LookupReads: a lookup value that is not valid UTF-8 given
// to a read (GetBy, ListBy of a one-part lookup, an Eq or range condition
// of a composite query) fails with a *runtime.Error of kind ErrInvalid that
// names the lookup and the value (the README: "Strings (ids, key parts,
// lookup values) must be valid UTF-8: otherwise the call fails with
// runtime.ErrInvalid"), not ErrNotFound or an empty page, on every store.
func testInvalidUTF8LookupReads(t *testing.T, e *env) {
	e.seedLookups(t)
	page := func(_ runtime.Page[*model.Match], err error) error { return err }
	req := runtime.PageRequest{}
	_, getErr := e.Matches.GetByCode(bg, badUTF8)
	_, serialErr := e.Matches.GetByRoundsSerial(bg, badUTF8)
	for _, tc := range []struct {
		what, lookup string
		err          error
	}{
		{"GetByCode", "code", getErr},
		{"GetByRoundsSerial", "roundsSerial", serialErr},
		{"ListByCode", "code", page(e.Matches.ListByCode(bg, badUTF8, req))},
		{"ListByTags", "tags", page(e.Matches.ListByTags(bg, badUTF8, req))},
		{"ListByVenueCity", "venueCity", page(e.Matches.ListByVenueCity(bg, badUTF8, req))},
		{"ListByRegionLevel Eq", "regionLevel", page(e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq(badUTF8)}, req))},
		{"ListByRegionLevel Eq and range", "regionLevel", page(e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq(badUTF8), Level: runtime.Gte(1)}, req))},
		{"ListByRegionLevel Gte", "regionLevel", page(e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Gte(badUTF8)}, req))},
		{"ListByRegionLevel Lt", "regionLevel", page(e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Lt(badUTF8)}, req))},
		{"ListByRegionLevel Between", "regionLevel", page(e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Between("a", badUTF8)}, req))},
		{"ListByOwner", "owner", func() error { _, err := e.Journals.ListByOwner(bg, badUTF8, req); return err }()},
		{"ListByAuthor", "author", func() error { _, err := e.Replies.ListByAuthor(bg, badUTF8, req); return err }()},
	} {
		if !checkErr(t, tc.err, runtime.ErrInvalid, tc.what+" of a value that is not valid UTF-8") {
			continue
		}
		var re *runtime.Error
		switch {
		case !errors.As(tc.err, &re):
			t.Errorf("%s: the error %v is not a *runtime.Error", tc.what, tc.err)
		case re.Kind != runtime.ErrInvalid || !strings.HasPrefix(tc.what, re.Op):
			t.Errorf("%s: error of op %q and kind %v, want op %s and kind ErrInvalid", tc.what, re.Op, re.Kind, strings.Fields(tc.what)[0])
		case !strings.Contains(tc.err.Error(), tc.lookup) || !strings.Contains(tc.err.Error(), `\xff\xfe`):
			t.Errorf("%s: the error %q does not name the lookup %s and the value", tc.what, tc.err, tc.lookup)
		}
	}
	// A valid value in the same queries still reads (the check refuses
	// only what it must).
	if got := e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq("north"), Level: runtime.Gte(4)}); len(got) != 2 {
		t.Fatalf("ListByRegionLevel(north, >= 4): %q, want a and d", got)
	}
	if _, err := e.Matches.GetByCode(bg, "code-a"); err != nil {
		t.Fatalf("GetByCode(code-a): %v", err)
	}
}
