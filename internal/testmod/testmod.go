// Package testmod makes, for tests, a Go module outside the repository that
// uses this one: a test that must put a package inside a module (to
// generate code for it, to vet a program that imports the runtime) writes
// it there, under t.TempDir(), never into the repository's tree.
package testmod

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Path is the module path of the modules New makes.
const Path = "noamtest"

// Root is the directory of this repository's main module (the go.mod of
// the package under test).
func Root(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod)
}

var moduleLine = regexp.MustCompile(`(?m)^module .*$`)

// New makes a module named Path in a fresh t.TempDir() and returns its
// directory. Its go.mod requires this repository's module, replaced by the
// directory Root names, and everything that module requires (so that its
// packages build without a network or a go.mod update); its go.sum is the
// repository's.
func New(t testing.TB) string {
	t.Helper()
	root := Root(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	self := moduleLine.Find(mod)
	if self == nil {
		t.Fatalf("%s/go.mod has no module line", root)
	}
	selfPath := strings.TrimSpace(strings.TrimPrefix(string(self), "module "))
	mod = moduleLine.ReplaceAll(mod, []byte("module "+Path))
	mod = append(mod, "\nrequire "+selfPath+" v0.0.0\n\nreplace "+selfPath+" => "+root+"\n"...)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
