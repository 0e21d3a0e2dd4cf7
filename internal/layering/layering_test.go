// Package layering holds the test that keeps the generator side of noamgen
// free of database drivers.
package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// drivers are the import-path prefixes of the database drivers the store
// adapters use.
var drivers = []string{"go.mongodb.org/", "github.com/redis/", "github.com/aws/", "go.etcd.io/bbolt"}

// TestGeneratorImportsNoDriver: the parser, the model, the generator and
// the templates (each store's constructor template and the registration
// of its declaration, runtime/<store>store/layout) link no database
// driver. Sampling live stores (`noamgen explain -sample`) keeps its
// drivers in package explain.
func TestGeneratorImportsNoDriver(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Dir}}", "./parser", "./model", "./generator", "./templates/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(line, " ")
		pkgs = append(pkgs, path)
		if strings.HasPrefix(path, "github.com/noamgen/noamgen") {
			statGoFiles(t, dir)
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(pkgs), pkgs)
	}
	for _, p := range pkgs {
		for _, d := range drivers {
			if strings.HasPrefix(p, d) {
				t.Errorf("%s is a dependency of the generator side; it must not import a database driver (who imports it: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./templates/...)", p)
			}
		}
	}
	for _, want := range []string{"github.com/noamgen/noamgen/runtime/access", "github.com/noamgen/noamgen/runtime/boltstore/layout"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("%s is not a dependency of the templates: does each store still register its declaration?", want)
		}
	}
}

// statGoFiles stats the Go files of dir, so that the go command's test
// cache (which cannot see what go list read) reruns the test when one of
// them changes.
func statGoFiles(t *testing.T, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			if _, err := os.Stat(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}
