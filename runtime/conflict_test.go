package runtime

import (
	"reflect"
	"testing"
)

// TestAddConflict: holders of one value gather in one UniqueConflict, in
// the order Repair meets them, with one line per value in Conflicts;
// values and block keys print by FormatKey (strings quoted, integers in
// decimal, composite keys comma-separated).
func TestAddConflict(t *testing.T) {
	var r RepairReport
	v := AppendInt(AppendString(nil, "Dortmund"), 4)
	r.AddConflict("games.place", v, AppendInt(nil, 1), AppendInt(nil, 7))
	r.AddConflict("games.code", AppendString(nil, "x"), AppendString(AppendString(nil, "t"), "a"), AppendString(AppendString(nil, "t"), "b"))
	r.AddConflict("games.place", v, AppendInt(nil, 1), AppendInt(nil, 9))
	want := []UniqueConflict{
		{Lookup: "games.place", Value: `("Dortmund", 4)`, Holders: []string{"1", "7", "9"}, Kept: "1"},
		{Lookup: "games.code", Value: `"x"`, Holders: []string{`("t", "a")`, `("t", "b")`}, Kept: `("t", "a")`},
	}
	if !reflect.DeepEqual(r.UniqueConflicts, want) {
		t.Fatalf("UniqueConflicts %+v, want %+v", r.UniqueConflicts, want)
	}
	lines := []string{`games.place ("Dortmund", 4) is held by 1, 7 and 9: kept for 1`, `games.code "x" is held by ("t", "a") and ("t", "b"): kept for ("t", "a")`}
	if !reflect.DeepEqual(r.Conflicts, lines) {
		t.Fatalf("Conflicts %q, want %q", r.Conflicts, lines)
	}
	if got := FormatKey([]byte{0x7f, 1}); got != "7f01" {
		t.Fatalf("FormatKey of bytes no codec made: %q", got)
	}
}
