package storetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var depthTests = []subtest{
	{name: "DepthLimit", fn: testDepthLimit},
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
