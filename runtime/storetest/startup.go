package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// startUpTests check the start-up contract (README, "Start-up") on
// repositories whose EnsureIndexes has not run: every call either works
// with every guarantee it has after EnsureIndexes or fails with
// runtime.ErrNotReady, never with a driver's own error; an aggregate with
// a unique lookup takes no write that may change its lookups, whatever
// values it holds; after EnsureIndexes everything works.
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

	// The rule (README, "Start-up"): an aggregate with a unique lookup
	// (Match.code) takes no Create, Put, CreateMany, PutMany or write of a
	// looked-up field until EnsureIndexes has recorded its layout, whatever
	// values the write holds: one whose unique fields are all zero, which
	// claims nothing, is refused too.
	for _, w := range []struct {
		what string
		err  error
	}{
		{"Create claiming a unique value", e.Matches.Create(bg, &model.Match{ID: "s1", Code: "start", Tags: []string{"x"}})},
		{"Create whose unique fields are all zero", e.Matches.Create(bg, &model.Match{ID: "s0"})},
		{"Put whose unique fields are all zero", e.Matches.Put(bg, &model.Match{ID: "s0"})},
		{"CreateMany whose unique fields are all zero", e.Matches.CreateMany(bg, []*model.Match{{ID: "s0"}})},
		{"PutMany whose unique fields are all zero", e.Matches.PutMany(bg, []*model.Match{{ID: "s0"}})},
		{"SetRegion (a field a lookup that is not unique reads)", e.Matches.SetRegion(bg, "s0", "north")},
	} {
		if !errors.Is(w.err, runtime.ErrNotReady) {
			t.Errorf("%s before EnsureIndexes: %v, want ErrNotReady", w.what, w.err)
			continue
		}
		notReadyOr(t, w.what, w.err)
		// The runtime's own refusal (not a store's missing table, whose
		// error wraps the driver's) states the rule.
		var re *runtime.Error
		if errors.As(w.err, &re) && re.Err == nil && !strings.Contains(w.err.Error(), "whatever values it holds") {
			t.Errorf("%s before EnsureIndexes: %q does not say that the write is refused whatever values it holds", w.what, w.err)
		}
	}
	// Other writes work (or fail with ErrNotReady where the store lacks
	// what EnsureIndexes creates: a DynamoDB table).
	notReadyOr(t, "SetStart (a field no lookup reads) of a missing block", e.Matches.SetStart(bg, "s0", time.Now()), runtime.ErrNotFound)
	notReadyOr(t, "Delete of a missing block", e.Matches.Delete(bg, "s0"), runtime.ErrNotFound)
	notReadyOr(t, "Journal Create (no unique lookup)", e.Journals.Create(bg, &model.Journal{}), runtime.ErrDuplicate)

	e.ensure(t)
	_, err = e.Matches.Get(bg, "s0")
	wantErr(t, err, runtime.ErrNotFound, "Get after EnsureIndexes of a block whose writes were refused before it")
	must(t, e.Matches.Create(bg, &model.Match{ID: "s1", Code: "start", Tags: []string{"x"}}))
	must(t, e.Matches.Create(bg, &model.Match{ID: "s0"}))
	wantErr(t, e.Matches.Create(bg, &model.Match{ID: "s2", Code: "start"}), runtime.ErrDuplicate, "Create of a taken unique value after EnsureIndexes")
	page, err := e.Matches.ListByTags(bg, "x", runtime.PageRequest{Limit: 5})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "s1" {
		t.Fatalf("ListByTags after EnsureIndexes: %d items, want s1", len(page.Items))
	}
}
