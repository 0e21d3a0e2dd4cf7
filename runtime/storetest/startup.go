package storetest

import (
	"errors"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// startUpTests check the start-up contract (README, "Start-up") on
// repositories whose EnsureIndexes has not run: every call either works
// with every guarantee it has after EnsureIndexes (a unique value is
// enforced) or fails with runtime.ErrNotReady, never with a driver's own
// error; after EnsureIndexes everything works, and what was written
// before is found.
var startUpTests = []subtest{
	{name: "StartUpBeforeEnsureIndexes", startUp: true, fn: testStartUp},
}

// notReadyOr reports whether err is nil, of kind ErrNotReady or of one of
// the kinds ok, and fails t otherwise; it returns whether err is nil.
func notReadyOr(t *testing.T, what string, err error, ok ...error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if errors.Is(err, runtime.ErrNotReady) {
		var re *runtime.Error
		if !errors.As(err, &re) || re.Op == "" || re.Aggregate == "" {
			t.Errorf("%s: %v: an ErrNotReady error must name the operation and the aggregate", what, err)
		}
		return false
	}
	for _, k := range ok {
		if errors.Is(err, k) {
			return false
		}
	}
	t.Errorf("%s before EnsureIndexes: %v, want it to work or fail with ErrNotReady", what, err)
	return false
}

func testStartUp(t *testing.T, e *env) {
	_, err := e.Matches.Get(bg, "s1")
	notReadyOr(t, "Get", err, runtime.ErrNotFound)
	_, err = e.Matches.GetByCode(bg, "start")
	notReadyOr(t, "GetByCode", err, runtime.ErrNotFound)
	_, err = e.Matches.ListByTags(bg, "x", runtime.PageRequest{Limit: 5})
	notReadyOr(t, "ListByTags", err)

	first := notReadyOr(t, "Create", e.Matches.Create(bg, &model.Match{ID: "s1", Code: "start", Tags: []string{"x"}}))
	if first {
		// The write was taken: the unique value must be enforced already.
		err := e.Matches.Create(bg, &model.Match{ID: "s2", Code: "start"})
		if err == nil {
			t.Fatal("a second aggregate took unique value Code \"start\" before EnsureIndexes: the guarantee must hold, or the first write fail with ErrNotReady")
		}
		notReadyOr(t, "Create of a taken unique value", err, runtime.ErrDuplicate)
	}
	notReadyOr(t, "Journal Create", e.Journals.Create(bg, &model.Journal{}), runtime.ErrDuplicate)

	e.ensure(t)
	if first {
		m, err := e.Matches.GetByCode(bg, "start")
		must(t, err)
		if m.ID != "s1" {
			t.Fatalf("GetByCode after EnsureIndexes: %s, want s1 (written before it)", m.ID)
		}
		page, err := e.Matches.ListByTags(bg, "x", runtime.PageRequest{Limit: 5})
		must(t, err)
		if len(page.Items) != 1 {
			t.Fatalf("ListByTags after EnsureIndexes: %d items, want the one written before it", len(page.Items))
		}
	} else {
		must(t, e.Matches.Create(bg, &model.Match{ID: "s1", Code: "start", Tags: []string{"x"}}))
	}
	wantErr(t, e.Matches.Create(bg, &model.Match{ID: "s2", Code: "start"}), runtime.ErrDuplicate, "Create of a taken unique value after EnsureIndexes")
}
