package bolt_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedLookups runs the tests of the golden case lookups against
// its generated bbolt repositories: lookups on a partitioned field's
// elements (AppendEvents, SetEventsAt, Update of elements), on an EAO root,
// on unique slice elements, and counters on converted integer types, which
// the examples do not have; and those of the golden case initialisms
// (methods named after Go fields, query methods taking constants). (go
// test ./... skips testdata folders.)
func TestGeneratedLookups(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a generated package")
	}
	cmd := exec.Command("go", "test", "-count=1", "-run", "Bolt", "./golden/testdata/lookups/", "./golden/testdata/initialisms/")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}
