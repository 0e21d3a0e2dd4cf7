// Package layoutcheck checks, for every golden input and every store, that
// the entry keys a store writes for a sample block are the ones the model
// says (issue 8, item 1). Into each package it adds a file, kept out of
// the source tree with `go test -overlay`, that registers (Register) a
// check per store: it creates sample blocks of every aggregate on the
// store through the generated descriptor and calls
// storetest.CheckSampleLayout with the layout computed here from the
// parsed model (model.Aggregate.WriteOut). One test binary, the first
// package's test with the others linked in, runs every registered check
// (building a test binary per package cost a link of every store's driver
// each). Stores whose servers run in another module (MongoDB on FerretDB,
// in the integration module) call Run from there.
//
// Each package's added file registers the check of every store that has
// a test (whichever module runs it), so the file, and with it the
// compiled package, is the same in every run over the main module: a run
// for another set of stores (the integration module's MongoDB run after
// the main module's) finds the golden packages in the build cache and
// builds only its runner test.
package layoutcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/stores" // the stores' registrations
)

// Store says how the generated layout test reaches one store (a
// registered store's templates.Test).
type Store struct {
	Name    string   // the store's flag name ("bolt")
	Imports []string // import paths Setup and Open use
	// Setup is Go statements run once per test, with t (*testing.T) in
	// scope, that declare what Open uses.
	Setup string
	// Open is a Go expression of the store adapter with %[1]s standing for
	// the descriptor variable (_gameDesc).
	Open string
	// Teardown, optional, is a Go statement run once after every
	// package's check (the one test binary runs them all): it stops a
	// server Setup shares between the packages' checks.
	Teardown string
}

// MongoURIEnv names the variable that gives the MongoDB layout check its
// server (templates/mongo's Test reads it); Run's caller sets it for the
// test processes.
const MongoURIEnv = "NOAM_LAYOUT_MONGO_URI"

// Stores are the registered stores (templates.Store.Test) whose layout
// the tests of module check: "" the main module, "integration" the
// integration module.
func Stores(module string) []Store {
	var out []Store
	for _, name := range templates.StoreNames() {
		st, _ := templates.Lookup(name)
		if st.Test == nil || st.Test.Module != module {
			continue
		}
		out = append(out, storeOf(st))
	}
	return out
}

// tested are the registered stores that have a test, of any module: the
// stores whose checks every package's file registers.
func tested() []Store {
	var out []Store
	for _, name := range templates.StoreNames() {
		st, _ := templates.Lookup(name)
		if st.Test != nil {
			out = append(out, storeOf(st))
		}
	}
	return out
}

func storeOf(st templates.Store) Store {
	return Store{Name: st.Name, Imports: st.Test.Imports, Setup: st.Test.Setup, Open: st.Test.Open, Teardown: st.Test.Teardown}
}

// registering returns the stores whose checks the packages' files
// register for a run of stores: every tested store, in registration
// order, then those of stores that are not registered stores (a test's
// own, such as TestCheckFails's lying store).
func registering(stores []Store) []Store {
	all := tested()
	for _, st := range stores {
		if !slices.ContainsFunc(all, func(r Store) bool { return r.Name == st.Name }) {
			all = append(all, st)
		}
	}
	return all
}

// File is the file added to the package s describes: its init registers
// the package's layout check on each of the given stores, a subtest per
// aggregate.
func File(s *model.Schema, stores []Store) ([]byte, error) {
	imports := map[string]bool{"testing": true, "github.com/noamgen/noamgen/internal/layoutcheck": true, "github.com/noamgen/noamgen/runtime/storetest": true}
	var body bytes.Buffer
	body.WriteString("\nfunc init() {\n")
	for _, st := range stores {
		for _, imp := range st.Imports {
			imports[imp] = true
		}
		fmt.Fprintf(&body, "\tlayoutcheck.Register(%q, %q, func(t *testing.T) {\n%s\n", s.PkgPath, st.Name, st.Setup)
		for _, a := range s.Aggregates {
			d := templates.DescVar(a)
			fmt.Fprintf(&body, "\tt.Run(%q, func(t *testing.T) {\n\t\tstoretest.CheckSampleLayout(t, %s, %s, map[int][]string{", a.Name, d, fmt.Sprintf(st.Open, d))
			for _, n := range []int{0, 2, 3} {
				fmt.Fprintf(&body, "%d: %s, ", n, goStrings(a.WriteOut(n)))
			}
			body.WriteString("})\n\t})\n")
		}
		body.WriteString("})\n")
	}
	body.WriteString("}\n")
	return source(s.PkgName, imports, body.Bytes())
}

// runnerFile is the test file, in package pkgName, that runs the checks
// every package in pkgs registers on every store of stores: it links the
// other packages in.
func runnerFile(pkgName string, pkgs []string, stores []Store) ([]byte, error) {
	imports := map[string]bool{"testing": true, "github.com/noamgen/noamgen/internal/layoutcheck": true}
	var names []string
	for _, st := range stores {
		names = append(names, st.Name)
	}
	var body bytes.Buffer
	for _, p := range pkgs[1:] {
		fmt.Fprintf(&body, "\nimport _ %q\n", p)
	}
	body.WriteString("\nfunc TestNoamLayout(t *testing.T) {\n")
	for _, st := range stores {
		if st.Teardown != "" {
			for _, imp := range st.Imports {
				if strings.Contains(st.Teardown, path.Base(imp)+".") {
					imports[imp] = true // the packages Teardown names
				}
			}
			fmt.Fprintf(&body, "\tt.Cleanup(func() { %s })\n", st.Teardown)
		}
	}
	fmt.Fprintf(&body, "\tlayoutcheck.RunRegistered(t, []string{%s}, []string{%s})\n}\n",
		strings.Join(quoted(pkgs), ", "), strings.Join(quoted(names), ", "))
	return source(pkgName, imports, body.Bytes())
}

func quoted(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}

// source is a generated Go file of package pkgName with the given
// imports and body, formatted.
func source(pkgName string, imports map[string]bool, body []byte) ([]byte, error) {
	var src bytes.Buffer
	fmt.Fprintf(&src, "// Code generated by layoutcheck for the layout test; never written to the source tree.\n\npackage %s\n\nimport (\n", pkgName)
	for _, imp := range sortedKeys(imports) {
		fmt.Fprintf(&src, "\t%q\n", imp)
	}
	src.WriteString(")\n")
	src.Write(body)
	out, err := format.Source(src.Bytes())
	if err != nil {
		return nil, fmt.Errorf("layout test of package %s: %v\n%s", pkgName, err, src.Bytes())
	}
	return out, nil
}

// check is a registered layout check.
type check struct {
	pkg, store string
	fn         func(t *testing.T)
}

var (
	registeredMu sync.Mutex
	registered   []check
)

// Register records the layout check of package pkg (its import path) on
// store; the file File writes into each package calls it from init.
func Register(pkg, store string, fn func(t *testing.T)) {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	registered = append(registered, check{pkg, store, fn})
}

// RunRegistered runs the registered checks, a subtest per package (named
// by its last path element) and store; it fails t when a package of pkgs
// registered no check on a store of stores.
func RunRegistered(t *testing.T, pkgs, stores []string) {
	registeredMu.Lock()
	checks := slices.Clone(registered)
	registeredMu.Unlock()
	byPkg := map[string]map[string]func(t *testing.T){}
	for _, c := range checks {
		if byPkg[c.pkg] == nil {
			byPkg[c.pkg] = map[string]func(t *testing.T){}
		}
		byPkg[c.pkg][c.store] = c.fn
	}
	for _, p := range pkgs {
		t.Run(path.Base(p), func(t *testing.T) {
			for _, st := range stores {
				fn := byPkg[p][st]
				if fn == nil {
					t.Errorf("%s registered no layout check on %s: its file is not linked in", p, st)
					continue
				}
				t.Run(st, fn)
			}
		})
	}
}

func goStrings(ss []string) string { return "{" + strings.Join(quoted(ss), ", ") + "}" }

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Run checks the layout of every package in dirs (absolute directories of
// packages of the main module) on every store of stores: it loads each
// with the parser, writes its layout test to a temporary file, and runs
// one `go test -overlay` over all of them in directory runDir (a module
// whose build list holds the packages, normally the main module's root,
// whose build cache the runs share) with env added to the environment.
// Packages are named by import path, so runDir may be another module.
func Run(t *testing.T, runDir string, dirs []string, stores []Store, env ...string) {
	t.Helper()
	out, err := run(t, runDir, dirs, stores, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	passed := bytes.Count(out, []byte("--- PASS: TestNoamLayout"))
	skipped := bytes.Count(out, []byte("--- SKIP: TestNoamLayout"))
	if passed+skipped == 0 {
		t.Fatalf("no layout test ran:\n%s", out)
	}
	if skipped > 0 {
		t.Logf("%d layout tests skipped (a store's server is missing): see below", skipped)
	}
	t.Logf("%d layout tests and subtests (store x package, aggregate) passed\n%s", passed, out)
}

func run(t *testing.T, runDir string, dirs []string, stores []Store, env []string) ([]byte, error) {
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	runner := "" // the directory and package name of the package whose test runs them all
	var runnerName string
	for i, dir := range dirs {
		s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
		if err != nil {
			return nil, fmt.Errorf("loading %s: %v", dir, err)
		}
		if len(s.Aggregates) == 0 {
			continue
		}
		src, err := File(s, registering(stores))
		if err != nil {
			return nil, err
		}
		file := filepath.Join(tmp, fmt.Sprintf("layout_%d.go", i))
		if err := os.WriteFile(file, src, 0o644); err != nil {
			return nil, err
		}
		overlay[filepath.Join(dir, "zz_noam_layout.go")] = file
		pkgs = append(pkgs, s.PkgPath)
		if runner == "" {
			runner, runnerName = dir, s.PkgName
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no package with aggregates in %q", dirs)
	}
	src, err := runnerFile(runnerName, pkgs, stores)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(tmp, "layout_test.go")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return nil, err
	}
	overlay[filepath.Join(runner, "zz_noam_layout_test.go")] = file
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		return nil, err
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, b, 0o644); err != nil {
		return nil, err
	}
	// -vet=off: the added files are generated, and TestGoldenCompiles
	// vets the packages themselves. The checked packages are compiled
	// without optimisation or inlining (-N -l), their dependencies as
	// every other build compiles them (found in the build cache): most of
	// this test's time is compiling the packages, whose generated code
	// instantiates every store adapter's generic code for each aggregate,
	// and unoptimised that takes about a third less CPU time and memory
	// (lookups, the largest, 37.7 s -> 26.6 s; eao 8.8 s -> 5.7 s), for
	// the same entries written. Every run (the main module's,
	// the integration module's MongoDB run) passes the same flags, so a
	// later run finds the packages in the build cache.
	args := []string{"test", "-count=1", "-vet=off", "-v", "-run", "^TestNoamLayout$", "-overlay", ov}
	for _, p := range pkgs {
		args = append(args, "-gcflags="+p+"=-N -l")
	}
	args = append(args, pkgs[0])
	cmd := exec.Command("go", args...)
	cmd.Dir = runDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	// A test that did not run would pass silently: the package must report
	// ok (RunRegistered fails for a package that registered nothing).
	if !bytes.Contains(out, []byte("\nok  \t"+pkgs[0])) {
		return out, fmt.Errorf("no ok line for %s", pkgs[0])
	}
	return out, nil
}

// Dropping wraps a store adapter so that its Layout leaves out the last
// entry: the layout check's own test uses it to show that a store writing
// other entries than the model says fails the check.
func Dropping[T any, K comparable](s runtime.Store[T, K]) runtime.Store[T, K] {
	return dropping[T, K]{s}
}

type dropping[T any, K comparable] struct{ runtime.Store[T, K] }

func (d dropping[T, K]) Layout(ctx context.Context, id K) ([]string, error) {
	keys, err := d.Store.Layout(ctx, id)
	if len(keys) > 0 {
		keys = keys[:len(keys)-1]
	}
	return keys, err
}
