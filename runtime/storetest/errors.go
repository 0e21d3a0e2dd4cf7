package storetest

import (
	"errors"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// testErrorsName: every failure is a *runtime.Error naming the aggregate,
// the repository method and, where there is one, the block key, so that
// messages read the same on every store.
func testErrorsName(t *testing.T, e *env) {
	e.createMatch(t, "m", 1)
	e.createMatch(t, "n", 1)
	must(t, e.Replies.Create(bg, &model.Reply{Key: model.ReplyKey{Thread: "t"}}))
	stale := newMatch("m", 0)
	stale.Version = 7
	_, getErr := e.Matches.Get(bg, "x")
	_, appendErr := e.Matches.AppendRounds(bg, "x", newRound("x", 0))
	_, roundsErr := e.Matches.ListRounds(bg, "x", runtime.PageRequest{})
	_, cursorErr := e.Matches.List(bg, runtime.PageRequest{Cursor: "garbage"})
	_, queryErr := e.Matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Level: runtime.Eq(1)}, runtime.PageRequest{})
	_, getByErr := e.Matches.GetByCode(bg, "none")
	_, scopeErr := e.Replies.ListByThread(bg, "t", runtime.PageRequest{Cursor: "garbage"})
	for _, tc := range []struct {
		err        error
		kind       error
		op, agg    string
		id         any // nil: not checked
		withDetail string
	}{
		{getErr, runtime.ErrNotFound, "Get", "Match", "x", ""},
		{e.Matches.Delete(bg, "x"), runtime.ErrNotFound, "Delete", "Match", "x", ""},
		{e.Matches.Create(bg, newMatch("m", 0)), runtime.ErrDuplicate, "Create", "Match", "m", ""},
		{e.Matches.Put(bg, stale), runtime.ErrConflict, "Put", "Match", "m", ""},
		{e.Matches.SetRegion(bg, "x", "r"), runtime.ErrNotFound, "SetRegion", "Match", "x", ""},
		{e.Matches.SetCode(bg, "n", "code-m"), runtime.ErrDuplicate, "SetCode", "Match", "n", ""},
		{appendErr, runtime.ErrNotFound, "AppendRounds", "Match", "x", ""},
		{e.Matches.SetRoundsAt(bg, "m", 4, newRound("m", 4)), runtime.ErrNotFound, "SetRoundsAt", "Match", "m", "rounds[4]"},
		{e.Matches.Update(bg, "m", model.MatchUpdate{IfVersion: 9}), runtime.ErrConflict, "Update", "Match", "m", ""},
		{roundsErr, runtime.ErrNotFound, "ListRounds", "Match", "x", ""},
		{cursorErr, runtime.ErrBadCursor, "List", "Match", nil, ""},
		{queryErr, runtime.ErrBadQuery, "ListByRegionLevel", "Match", nil, ""},
		{getByErr, runtime.ErrNotFound, "GetByCode", "Match", nil, ""},
		{scopeErr, runtime.ErrBadCursor, "ListByThread", "Reply", nil, ""},
		{e.Cards.Create(bg, nil), runtime.ErrInvalid, "Create", "Card", nil, ""},
	} {
		var re *runtime.Error
		switch {
		case !errors.Is(tc.err, tc.kind):
			t.Errorf("%s: got error %v, want %v", tc.op, tc.err, tc.kind)
		case !errors.As(tc.err, &re):
			t.Errorf("%s: the error %v is no *runtime.Error", tc.op, tc.err)
		case re.Op != tc.op || re.Aggregate != tc.agg || (tc.id != nil && re.ID != tc.id):
			t.Errorf("%s: the error %v names op %q, aggregate %q, key %v; want %q, %q, %v", tc.op, tc.err, re.Op, re.Aggregate, re.ID, tc.op, tc.agg, tc.id)
		case tc.withDetail != "" && re.Detail != tc.withDetail:
			t.Errorf("%s: the error %v has detail %q, want %q", tc.op, tc.err, re.Detail, tc.withDetail)
		}
	}
}
