package layoutcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// TestCheckFails shows that the check is not vacuous: a store whose layout
// lacks one of the model's entries fails it, naming the entries, while the
// honest store passes it in the same run (one test binary for both).
func TestCheckFails(t *testing.T) {
	root := moduleRoot(t)
	var bolt Store
	for _, st := range Stores("") {
		if st.Name == "bolt" {
			bolt = st
		}
	}
	if bolt.Name == "" {
		t.Fatal("bbolt's registration has no Test")
	}
	lying := bolt
	lying.Name = "lying"
	lying.Imports = append(slices.Clone(bolt.Imports), "github.com/noamgen/noamgen/internal/layoutcheck")
	lying.Open = "layoutcheck.Dropping(boltstore.Open(db, %[1]s))"
	out, err := run(t, root, []string{filepath.Join(root, "golden/testdata/partition")}, []Store{lying, bolt}, nil)
	if err == nil {
		t.Fatalf("a store that leaves out an entry passed the layout check:\n%s", out)
	}
	if !strings.Contains(string(out), "--- FAIL: TestNoamLayout/partition/lying") || !strings.Contains(string(out), "the bolt store holds entries") {
		t.Errorf("the lying store's failure does not name the store's entries:\n%s", out)
	}
	if !strings.Contains(string(out), "--- PASS: TestNoamLayout/partition/bolt") {
		t.Errorf("the honest store fails:\n%s", out)
	}
}
