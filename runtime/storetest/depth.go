package storetest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var depthTests = []subtest{
	{name: "DepthLimit", fn: testDepthLimit},
	{name: "UnreadableBlock", fn: testUnreadableBlock},
}

// deepNode returns a node nested d levels of documents and arrays deep
// (d >= 1): kids (an array and a document, two levels) where it can, a
// next (one) for an odd rest.
func deepNode(d int) *model.Node {
	if d <= 1 {
		return &model.Node{Label: "leaf"}
	}
	if d == 2 {
		return &model.Node{Next: deepNode(1)}
	}
	return &model.Node{Kids: []model.Node{*deepNode(d - 2)}}
}

// wantTooDeep fails t unless err is the typed refusal of a value deeper
// than max: runtime.ErrTooLarge in a *runtime.Error of op, naming the
// entry and the limit.
func wantTooDeep(t *testing.T, err error, op, entry string, max int) {
	t.Helper()
	var re *runtime.Error
	switch {
	case !errors.Is(err, runtime.ErrTooLarge):
		t.Errorf("%s of a value deeper than %d: got %v, want runtime.ErrTooLarge", op, max, err)
	case !errors.As(err, &re) || re.Op != op || re.Aggregate != "Match":
		t.Errorf("%s of a value deeper than %d: %v is no *runtime.Error of Match %s", op, max, err, op)
	case !strings.Contains(err.Error(), entry) || !strings.Contains(err.Error(), strconv.Itoa(max)):
		t.Errorf("%s of a value deeper than %d: %q does not name the entry %s and the limit", op, max, err, entry)
	}
}

// testDepthLimit: a value nested Caps.MaxDepth deep, in a top-level entry
// and in an element, is written and reads back by every read; one level
// deeper is refused by every write with runtime.ErrTooLarge naming the
// entry and the limit, and nothing is written.
func testDepthLimit(t *testing.T, e *env) {
	max := e.h.Caps.MaxDepth
	if max < 2 {
		t.Fatalf("the harness declares Caps.MaxDepth %d", max)
	}
	m := newMatch("deep", 1)
	m.Tree = deepNode(max)
	m.Rounds[0].Tree = deepNode(max - 1) // the round is a level
	must(t, e.Matches.Create(bg, m))
	e.wantSame(t, "Get of a match nested MaxDepth deep", e.getMatch(t, "deep"), m)
	r := newRound("deep", 1)
	r.Tree = deepNode(max - 1)
	if _, err := e.Matches.AppendRounds(bg, "deep", r); err != nil {
		t.Fatalf("AppendRounds of a round nested MaxDepth deep: %v", err)
	}
	m.Rounds = append(m.Rounds, r)
	m.Version++
	must(t, e.Matches.SetTree(bg, "deep", deepNode(max)))
	m.Tree = deepNode(max)
	m.Version++
	e.wantSame(t, "Get after the deep writes", e.getMatch(t, "deep"), m)
	page, err := e.Matches.List(bg, runtime.PageRequest{})
	must(t, err)
	e.wantSame(t, "List of the deep match", page.Items, []*model.Match{m})
	rounds, err := e.Matches.ListRounds(bg, "deep", runtime.PageRequest{})
	must(t, err)
	e.wantSame(t, "ListRounds of the deep rounds", rounds.Items, m.Rounds)

	before := e.snapshot(t)
	tooDeep := deepNode(max + 1)
	deepRound := newRound("x", 5)
	deepRound.Tree = deepNode(max)
	create := newMatch("x", 0)
	create.Tree = tooDeep
	wantTooDeep(t, e.Matches.Create(bg, create), "Create", "tree", max)
	create = newMatch("x", 0)
	create.Rounds = []model.Round{deepRound}
	wantTooDeep(t, e.Matches.Create(bg, create), "Create", "rounds", max)
	put := clone(m)
	put.Tree = tooDeep
	wantTooDeep(t, e.Matches.Put(bg, put), "Put", "tree", max)
	wantTooDeep(t, e.Matches.SetTree(bg, "deep", tooDeep), "SetTree", "tree", max)
	wantTooDeep(t, e.Matches.Update(bg, "deep", model.MatchUpdate{Region: ptr("z"), Tree: &tooDeep}), "Update", "tree", max)
	_, err = e.Matches.AppendRounds(bg, "deep", deepRound)
	wantTooDeep(t, err, "AppendRounds", "rounds", max)
	wantTooDeep(t, e.Matches.SetRoundsAt(bg, "deep", 0, deepRound), "SetRoundsAt", "rounds", max)
	wantTooDeep(t, e.Matches.Update(bg, "deep", model.MatchUpdate{Region: ptr("z"), RoundsAt: map[int]model.Round{1: deepRound}}), "Update", "rounds", max)
	e.unchanged(t, "the refused deep writes", before)
}

// wantUnreadable fails t unless err is an *runtime.Error of kind
// runtime.ErrUnreadable of op naming block id and the entry.
func wantUnreadable(t *testing.T, err error, op, id, entry string) {
	t.Helper()
	var re *runtime.Error
	switch {
	case !errors.Is(err, runtime.ErrUnreadable):
		t.Fatalf("%s over the unreadable block %s: got %v, want runtime.ErrUnreadable", op, id, err)
	case !errors.As(err, &re) || re.Op != op || re.ID != id:
		t.Fatalf("%s over the unreadable block %s: %v does not name op %s and the block", op, id, err, op)
	case !strings.Contains(err.Error(), entry):
		t.Fatalf("%s over the unreadable block %s: %q does not name the entry %s", op, id, err, entry)
	}
}

// testUnreadableBlock: a block whose stored bytes were corrupted behind
// the repository's back fails Get naming it; List reports it with a
// cursor that resumes after it and All yields its error and goes on, so
// that every other block is listed, at every page size; Repair skips and
// reports it and goes on with the others.
func testUnreadableBlock(t *testing.T, e *env) {
	if e.h.Corrupt == nil {
		t.Skipf("%s: the harness has no Corrupt hook", e.h.Name)
	}
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		e.createMatch(t, id, 1)
	}
	e.h.Corrupt(t, e.db, "matches", "c", "code")
	_, err := e.Matches.Get(bg, "c")
	wantUnreadable(t, err, "Get", "c", "code")
	for _, id := range []string{"a", "b", "d", "e"} {
		e.getMatch(t, id)
	}
	readable := []string{"a", "b", "d", "e"}
	sorted := func(got []string) []string {
		if !e.h.Caps.OrderedScan {
			sort.Strings(got)
		}
		return got
	}
	for _, limit := range []int{1, 2, 3, 10} {
		var got []string
		reported := 0
		req := runtime.PageRequest{Limit: limit}
		for range 100 {
			page, err := e.Matches.List(bg, req)
			if err != nil {
				wantUnreadable(t, err, "List", "c", "code")
				reported++
			}
			got = append(got, matchIDs(page.Items)...)
			if page.Next == "" {
				break
			}
			req.Cursor = page.Next
		}
		eqStrings(t, fmt.Sprintf("List in pages of %d over an unreadable block", limit), sorted(got), readable...)
		if reported != 1 {
			t.Fatalf("List in pages of %d reported the unreadable block %d times", limit, reported)
		}
	}
	var got []string
	reported := 0
	for m, err := range e.Matches.All(bg) {
		if err != nil {
			wantUnreadable(t, err, "All", "c", "code")
			reported++
			continue
		}
		got = append(got, m.ID)
	}
	eqStrings(t, "All over an unreadable block", sorted(got), readable...)
	if reported != 1 {
		t.Fatalf("All reported the unreadable block %d times", reported)
	}
	// Lookup reads: the unreadable block is reported (bbolt, Redis, and
	// MongoDB's native lookups, DynamoDB) or skipped (MongoDB's index
	// tables), never returned, never another error.
	page, err := e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq("north")}, runtime.PageRequest{Limit: 10})
	if err != nil {
		wantUnreadable(t, err, "ListByRegionLevel", "c", "code")
	}
	for _, id := range matchIDs(page.Items) {
		if id == "c" {
			t.Fatal("ListByRegionLevel returned the unreadable block")
		}
	}
	if _, err := e.Matches.GetByCode(bg, "code-c"); !errors.Is(err, runtime.ErrNotFound) {
		wantUnreadable(t, err, "GetByCode", "c", "code")
	}
	rep, err := e.Matches.Repair(bg)
	must(t, err)
	if len(rep.Native) > 0 && rep.Aggregates == 0 {
		return // native lookups only: Repair reads no block
	}
	if rep.Aggregates != 4 || len(rep.Unreadable) != 1 || rep.Unreadable[0].ID != "c" || !errors.Is(rep.Unreadable[0], runtime.ErrUnreadable) {
		t.Fatalf("Repair over an unreadable block: %v, unreadable %v (want 4 aggregates and c unreadable)", rep, rep.Unreadable)
	}
	if rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("Repair of healthy lookups around an unreadable block fixed entries: %v", rep)
	}
	for _, id := range readable {
		m, err := e.Matches.GetByCode(bg, "code-"+id)
		must(t, err)
		eqStrings(t, "GetByCode after Repair", []string{m.ID}, id)
	}
}
