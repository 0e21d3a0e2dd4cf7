package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/noamgen/noamgen/runtime"
)

// testRepairHeldTwice: a unique value held by three aggregates (its claim
// dropped behind the repository's back twice, as a lost claim would,
// Harness.DropClaim) is reported by Repair as one runtime.UniqueConflict
// naming every holder in block-key order and kept for the first, which
// GetByCode then returns whichever holder claimed it last; a second
// Repair reports the same conflict and has nothing left to fix.
func testRepairHeldTwice(t *testing.T, e *env) {
	if e.h.DropClaim == nil {
		t.Skipf("%s: Harness.DropClaim is nil: the store refuses a unique value to a second aggregate itself", e.h.Name)
	}
	value := runtime.AppendString(nil, "dup")
	// Created in the order c, a, b: the claim is last b's, Repair gives
	// it to a.
	for i, id := range []string{"c", "a", "b"} {
		m := newMatch(id, 0)
		m.Code = "dup"
		err := e.Matches.Create(bg, m)
		if i > 0 && err == nil {
			t.Fatalf("Create of %s with the code of another match succeeded before its claim was dropped", id)
		}
		if i > 0 {
			wantErr(t, err, runtime.ErrDuplicate, "Create with a claimed code")
			e.h.DropClaim(t, e.db, "matches", "code", value)
			err = e.Matches.Create(bg, m)
		}
		must(t, err)
	}
	got, err := e.Matches.GetByCode(bg, "dup")
	must(t, err)
	if got.ID != "b" {
		t.Fatalf("GetByCode(dup) before Repair = %s, want b (the last claim)", got.ID)
	}
	want := []runtime.UniqueConflict{{Lookup: "matches.code", Value: `"dup"`, Holders: []string{`"a"`, `"b"`, `"c"`}, Kept: `"a"`}}
	for pass := 1; pass <= 2; pass++ {
		rep, err := e.Matches.Repair(bg)
		must(t, err)
		if !reflect.DeepEqual(rep.UniqueConflicts, want) {
			t.Fatalf("Repair %d: UniqueConflicts %+v, want %+v", pass, rep.UniqueConflicts, want)
		}
		if len(rep.Conflicts) != 1 || rep.Conflicts[0] != `matches.code "dup" is held by "a", "b" and "c": kept for "a"` {
			t.Fatalf("Repair %d: Conflicts %q", pass, rep.Conflicts)
		}
		if pass == 1 && rep.Added == 0 {
			t.Fatalf("Repair 1 gave the claim to a without adding an entry: %v", rep)
		}
		if pass == 2 && (rep.Added != 0 || rep.Removed != 0) {
			t.Fatalf("Repair 2 found entries to fix: %v", rep)
		}
		got, err := e.Matches.GetByCode(bg, "dup")
		must(t, err)
		if got.ID != "a" {
			t.Fatalf("GetByCode(dup) after Repair %d = %s, want a (the first holder in block-key order)", pass, got.ID)
		}
	}
	// The holders keep the value in their blocks; the kept one keeps the
	// claim: another aggregate cannot take it.
	for _, id := range []string{"b", "c"} {
		if m := e.getMatch(t, id); m.Code != "dup" {
			t.Fatalf("%s holds code %q after Repair, want dup", id, m.Code)
		}
	}
	m := newMatch("d", 0)
	m.Code = "dup"
	if err := e.Matches.Create(bg, m); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create of a fourth holder after Repair: %v, want ErrDuplicate", err)
	}
}
