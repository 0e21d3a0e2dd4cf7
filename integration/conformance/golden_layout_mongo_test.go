package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/internal/layoutcheck"
)

// TestGoldenLayoutMongo checks, for every good golden case, that the
// entries the MongoDB adapter writes for a sample block of each aggregate
// are exactly what the model says: the main module's TestGoldenLayout does
// the same on bbolt. The golden packages' layout checks run in one child
// test process against this package's server, built in the main module:
// the golden packages, whose added files register every store's check,
// are then the ones the main module's run compiled (the build cache has
// them), and only the runner test is built here.
func TestGoldenLayoutMongo(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testdata := filepath.Join(root, "golden", "testdata")
	entries, err := os.ReadDir(testdata)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, "bad_") || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
			continue
		}
		if _, err := os.Stat(filepath.Join(testdata, name, "skip.txt")); err == nil {
			continue
		}
		dirs = append(dirs, filepath.Join(testdata, name))
	}
	if mongotest.URI() == "" {
		t.Fatal("no MongoDB server: TestMain starts one")
	}
	layoutcheck.Run(t, root, dirs, layoutcheck.Stores("integration"),
		layoutcheck.MongoURIEnv+"="+mongotest.URI())
}
