package dynamo_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedLookups runs the DynamoDB tests of the golden case lookups
// against its generated repositories (on dynalite, or
// NOAM_DYNAMO_ENDPOINT): lookups on a partitioned field's elements, on an
// EAO root and on unique slice elements, and scoped counters on converted
// integer types, which the examples do not have. (go test ./... skips
// testdata folders.)
func TestGeneratedLookups(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a generated package")
	}
	cmd := exec.Command("go", "test", "-count=1", "-run", "Dynamo", "./golden/testdata/lookups/")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}
