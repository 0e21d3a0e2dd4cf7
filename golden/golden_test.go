// Package golden_test holds noamgen's end-to-end golden tests, after sqlc's
// internal/endtoend and stringer's golden_test.go.
//
// Every folder testdata/<case> is a small Go package inside this module:
//
//   - a good case (any name not starting with "bad_") holds the input .go
//     files, every file noamgen generates for it with every registered store
//     (*.gen.go), and schema.txt, a dump of the parsed NoAM model;
//   - a bad case ("bad_*") holds input .go files and stderr.txt, the exact
//     error text noamgen reports (model.ErrorList.Error() and a newline),
//     and no generated file.
//
// Run
//
//	go test ./golden/... -update
//
// to rewrite the expected files (and remove generated files no longer
// produced), then review the diff. A case holding skip.txt is skipped with
// its text as the reason (a known bug whose expected output is kept or to be
// written once fixed). Folders whose name starts with "_" or "." are not
// cases (the tests use them for temporary packages).
package golden_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/generator"
	"github.com/noamgen/noamgen/internal/testmod"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

var update = flag.Bool("update", false, "rewrite the expected files under testdata")

const (
	testdata   = "testdata"
	stderrFile = "stderr.txt"
	skipFile   = "skip.txt"
	schemaFile = "schema.txt"
)

var (
	moduleRoot string // absolute path of the module root
	binDir     string // temporary directory for the noamgen CLI
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	moduleRoot = filepath.Dir(wd)
	if binDir, err = os.MkdirTemp("", "noamgen-golden-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	return m.Run()
}

// noamgenBin builds the noamgen CLI once, on first use.
var noamgenBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "noamgen")
	build := exec.Command("go", "build", "-o", bin, "./cmd/noamgen")
	build.Dir = moduleRoot
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building noamgen: %v\n%s", err, out)
	}
	return bin, nil
})

// goldenCase is one folder under testdata.
type goldenCase struct {
	name string
	dir  string // absolute
	bad  bool
	skip string // the text of skip.txt
}

func cases(t *testing.T) []goldenCase {
	t.Helper()
	entries, err := os.ReadDir(testdata)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenCase
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), "_") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir, err := filepath.Abs(filepath.Join(testdata, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		c := goldenCase{name: e.Name(), dir: dir, bad: strings.HasPrefix(e.Name(), "bad_")}
		if b, err := os.ReadFile(filepath.Join(dir, skipFile)); err == nil {
			c.skip = strings.TrimSpace(string(b))
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("no cases under testdata")
	}
	return out
}

// TestGolden loads every case with the parser, generates its files for
// every registered store and compares them byte for byte with the files on
// disk; bad cases must fail with exactly the text of stderr.txt.
func TestGolden(t *testing.T) {
	stores := templates.StoreNames()
	if len(stores) == 0 {
		t.Fatal("no store registered")
	}
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skipf("%s:\n%s", skipFile, c.skip)
			}
			t.Parallel()
			inputs, outputs := listFiles(t, c.dir)
			if len(inputs) == 0 {
				t.Fatalf("%s has no input .go file", c.dir)
			}
			if *update {
				// The files are about to be rewritten. (The parser leaves
				// them out while loading, so they need not compile against
				// an edited input; removing them also drops stale ones.)
				for _, o := range outputs {
					if err := os.Remove(filepath.Join(c.dir, o)); err != nil {
						t.Fatal(err)
					}
				}
				outputs = nil
			}
			schema, err := parser.Load(parser.Config{Dir: c.dir, Pattern: ".", BaseDir: c.dir})
			if c.bad {
				if err == nil {
					// Some bad input is only seen by the generator.
					_, err = generator.Generate(schema, generator.Config{Stores: stores})
				}
				checkBad(t, c, err, outputs)
				return
			}
			if err != nil {
				t.Fatalf("loading a good case failed (if its input changed, run with -update):\n%v", err)
			}
			if _, err := os.Stat(filepath.Join(c.dir, stderrFile)); err == nil {
				t.Errorf("good case has a %s; bad cases are named bad_*", stderrFile)
			}
			files, err := generator.Generate(schema, generator.Config{Stores: stores})
			if err != nil {
				t.Fatalf("generating: %v", err)
			}
			files = append(files, generator.File{Name: schemaFile, Content: []byte(dumpSchema(schema))})
			compare(t, c.dir, files, outputs)
		})
	}
}

// listFiles splits a case folder's files into the inputs (non-generated .go
// files) and the outputs noamgen writes (generated .go files and *.gen.go).
func listFiles(t *testing.T, dir string) (inputs, outputs []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gen.go") || model.IsGenerated(b) {
			outputs = append(outputs, name)
		} else {
			inputs = append(inputs, name)
		}
	}
	return inputs, outputs
}

func checkBad(t *testing.T, c goldenCase, err error, outputs []string) {
	t.Helper()
	for _, o := range outputs {
		t.Errorf("bad case holds generated file %s; remove it (or run with -update)", o)
	}
	if err == nil {
		t.Fatalf("bad case loaded without error")
	}
	var list model.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want a model.ErrorList, got %T: %v", err, err)
	}
	got := []byte(list.Error() + "\n")
	path := filepath.Join(c.dir, stderrFile)
	if *update {
		writeIfChanged(t, path, got)
		return
	}
	want, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatalf("%v (run with -update to create it)", rerr)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (run with -update to accept):\n%s", stderrFile, firstDiff(want, got))
	}
}

// compare checks the generated files against the folder, and that the
// folder holds no generated file that is not generated any more.
func compare(t *testing.T, dir string, files []generator.File, outputs []string) {
	t.Helper()
	made := map[string]bool{}
	for _, f := range files {
		made[f.Name] = true
		path := filepath.Join(dir, f.Name)
		if *update {
			writeIfChanged(t, path, f.Content)
			continue
		}
		want, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is generated but missing (run with -update to create it)", f.Name)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, f.Content) {
			t.Errorf("%s differs (run with -update to accept):\n%s", f.Name, firstDiff(want, f.Content))
		}
	}
	for _, o := range outputs {
		if !made[o] {
			t.Errorf("%s is stale: it is not generated any more (run with -update to remove it)", o)
		}
	}
}

func writeIfChanged(t *testing.T, path string, content []byte) {
	t.Helper()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return
	}
	t.Logf("writing %s", path)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstDiff shows the first line where want and got differ, with context.
func firstDiff(want, got []byte) string {
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d:\n", i+1)
	for j := max(0, i-3); j < i; j++ {
		fmt.Fprintf(&b, "       %4d | %s\n", j+1, wl[j])
	}
	side := func(label string, lines []string) {
		if i >= len(lines) {
			fmt.Fprintf(&b, "  %s      | (end of file)\n", label)
		}
		for j := i; j < min(len(lines), i+4); j++ {
			fmt.Fprintf(&b, "  %s %4d | %s\n", label, j+1, lines[j])
		}
	}
	side("want", wl)
	side("got ", gl)
	return b.String()
}

// dumpSchema renders the parsed model, so that what the generated code does
// not show (refs, positions, entry classes) is checked too.
func dumpSchema(s *model.Schema) string {
	qual := func(p *types.Package) string {
		if p.Path() == s.PkgPath {
			return ""
		}
		return p.Path()
	}
	ts := func(t types.Type) string { return types.TypeString(t, qual) }
	pos := func(p interface{ String() string }) string { return p.String() }
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n", s.PkgName)
	for _, a := range s.Aggregates {
		fmt.Fprintf(&b, "\naggregate %s at %s\n", a.Name, pos(a.Pos))
		fmt.Fprintf(&b, "\tcollection %q, strategy %s, id %s", a.Collection, a.Strategy, a.ID.GoName)
		if a.Version != nil {
			fmt.Fprintf(&b, ", version %s", a.Version.GoName)
		}
		b.WriteString("\n")
		for _, f := range a.Fields {
			var flags []string
			if f.IsID {
				flags = append(flags, "id")
			}
			if f.IsVersion {
				flags = append(flags, "version")
			}
			if f.Partition {
				flags = append(flags, "partition of "+ts(f.Elem))
			}
			fmt.Fprintf(&b, "\tfield %s %s key %q", f.GoName, ts(f.Type), f.Key)
			if len(flags) > 0 {
				fmt.Fprintf(&b, " [%s]", strings.Join(flags, ", "))
			}
			fmt.Fprintf(&b, " at %s\n", pos(f.Pos))
		}
		for _, r := range a.Refs() {
			fmt.Fprintf(&b, "\tref %s (%s %s) -> %s\n", r.Path, r.GoPath, ts(r.Type), r.Target)
		}
		for _, e := range a.Entries() {
			var names []string
			for _, f := range e.Fields {
				names = append(names, f.GoName)
			}
			key := strconv.Quote(e.Key)
			if e.Partition {
				key += " (one per element)"
			}
			fmt.Fprintf(&b, "\tentry %s: %s\n", key, strings.Join(names, ", "))
		}
		var sf []string
		for _, f := range a.StructFields {
			sf = append(sf, f.Name+" "+ts(f.Type))
		}
		fmt.Fprintf(&b, "\tstruct {%s}\n", strings.Join(sf, "; "))
	}
	return b.String()
}

// TestGoldenCompiles vets the good cases, inputs and expected generated code
// together, in one go vet run over their explicit paths (testdata folders
// are skipped by ./... but not when named).
func TestGoldenCompiles(t *testing.T) {
	args := []string{"vet"}
	for _, c := range cases(t) {
		if !c.bad && c.skip == "" {
			args = append(args, "./"+filepath.ToSlash(filepath.Join("golden", testdata, c.name)))
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// generateLine is one //go:generate line that runs noamgen.
type generateLine struct {
	dir  string   // package directory
	file string   // file holding the line
	line int      // line number
	pkg  string   // package name
	args []string // noamgen's arguments
}

func (g generateLine) String() string { return fmt.Sprintf("%s:%d", g.file, g.line) }

// generateLines finds the //go:generate lines that run cmd/noamgen in the
// package directory dir (not in subdirectories).
func generateLines(t *testing.T, dir string) []generateLine {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []generateLine
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if model.IsGenerated(src) {
			continue
		}
		pkg := ""
		sc := bufio.NewScanner(bytes.NewReader(src))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if pkg == "" && strings.HasPrefix(line, "package ") {
				pkg = strings.TrimSpace(strings.TrimPrefix(line, "package "))
			}
			rest, ok := strings.CutPrefix(line, "//go:generate ")
			if !ok {
				continue
			}
			words, err := splitGenerate(rest, map[string]string{
				"GOFILE": e.Name(), "GOLINE": strconv.Itoa(n), "GOPACKAGE": pkg, "DOLLAR": "$",
			})
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			i := slices.IndexFunc(words, func(w string) bool {
				return w == "noamgen" || strings.HasSuffix(w, "/cmd/noamgen") || w == "./cmd/noamgen"
			})
			if i < 0 {
				continue
			}
			out = append(out, generateLine{dir: dir, file: path, line: n, pkg: pkg, args: words[i+1:]})
		}
	}
	return out
}

// splitGenerate splits a //go:generate command line like go generate does:
// space-separated words, Go double-quoted strings, $NAME expanded.
func splitGenerate(line string, vars map[string]string) ([]string, error) {
	expand := func(s string) string {
		return os.Expand(s, func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return os.Getenv(k)
		})
	}
	var words []string
	line = strings.TrimSpace(line)
	for line != "" {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted string in //go:generate line: %v", err)
			}
			w, _ := strconv.Unquote(q)
			words = append(words, expand(w))
			line = strings.TrimSpace(line[len(q):])
			continue
		}
		w, rest, _ := strings.Cut(line, " ")
		words = append(words, expand(w))
		line = strings.TrimSpace(rest)
	}
	return words, nil
}

// runNoamgen runs the CLI in the package directory, as go generate does.
func runNoamgen(g generateLine, check bool) (string, error) {
	bin, err := noamgenBin()
	if err != nil {
		return "", err
	}
	args := g.args
	if check {
		// Flags must come before the optional package argument.
		args = append([]string{"-check"}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GOFILE="+filepath.Base(g.file), "GOLINE="+strconv.Itoa(g.line), "GOPACKAGE="+g.pkg)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGoldenCoversAllStores checks that the stores registered in this test
// (those the generator package imports) are the ones the CLI knows, so that
// the golden files cover every store.
func TestGoldenCoversAllStores(t *testing.T) {
	bin, err := noamgenBin()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	_, known, ok := strings.Cut(string(out), "(known: ")
	if known, _, ok2 := strings.Cut(known, ";"); ok && ok2 {
		if want, got := known, strings.Join(templates.StoreNames(), ", "); want != got {
			t.Fatalf("the CLI knows the stores %s, the golden tests generate for %s; register every store in the generator package", want, got)
		}
		return
	}
	t.Fatalf("cannot find the known stores in noamgen -h:\n%s", out)
}

// examplePackages lists the directories under example/ that hold a
// //go:generate line running noamgen.
func examplePackages(t *testing.T) []generateLine {
	t.Helper()
	var out []generateLine
	root := filepath.Join(moduleRoot, "example")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, "_") || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			out = append(out, generateLines(t, path)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no //go:generate line running noamgen under example/")
	}
	return out
}

// TestExamplesFresh runs every //go:generate noamgen line under example/
// with -check: the committed generated code must be what noamgen writes
// today (no file missing, out of date or stale).
func TestExamplesFresh(t *testing.T) {
	for _, g := range examplePackages(t) {
		t.Run(filepath.Base(g.dir), func(t *testing.T) {
			t.Parallel()
			if out, err := runNoamgen(g, true); err != nil {
				t.Errorf("%s: noamgen -check %s: %v\n%s", g, strings.Join(g.args, " "), err, out)
			}
		})
	}
}

// TestCheckCatchesChanges proves that the -check run of TestExamplesFresh
// fails when the code is not regenerated, on a copy of the first example
// package (in a module of its own under t.TempDir() that requires this one,
// so that it loads like the real one): after a
// generated file is deleted, after an aggregate is removed (its files are
// stale), and after an aggregate struct is edited; and that regenerating
// makes -check pass again each time.
func TestCheckCatchesChanges(t *testing.T) {
	orig := examplePackages(t)[0]
	tmp := filepath.Join(testmod.New(t), filepath.Base(orig.dir))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(orig.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			b, err := os.ReadFile(filepath.Join(orig.dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(tmp, e.Name()), b)
		}
	}
	lines := generateLines(t, tmp)
	if len(lines) == 0 {
		t.Fatal("the copy has no //go:generate line")
	}
	g := lines[0]

	// check runs noamgen -check. With wantOut == "" it must pass; otherwise
	// it must exit 1 and its output contain one of wantOut's lines.
	check := func(step string, wantOut ...string) string {
		t.Helper()
		out, err := runNoamgen(g, true)
		if len(wantOut) == 0 {
			if err != nil {
				t.Fatalf("%s: noamgen -check failed: %v\n%s", step, err, out)
			}
			return out
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: noamgen -check: want exit status 1, got %v\n%s", step, err, out)
		}
		if !slices.ContainsFunc(wantOut, func(w string) bool { return strings.Contains(out, w) }) {
			t.Fatalf("%s: noamgen -check output mentions none of %q:\n%s", step, wantOut, out)
		}
		return out
	}
	generate := func() (string, error) { return runNoamgen(g, false) }
	mustGenerate := func(step string) {
		t.Helper()
		if out, err := generate(); err != nil {
			t.Fatalf("%s: noamgen: %v\n%s", step, err, out)
		}
	}
	check("fresh copy")

	// A generated file is deleted.
	_, outputs := listFiles(t, tmp)
	if len(outputs) == 0 {
		t.Fatal("the copy has no generated file")
	}
	if err := os.Remove(filepath.Join(tmp, outputs[0])); err != nil {
		t.Fatal(err)
	}
	check("generated file deleted", outputs[0]+": missing")
	mustGenerate("regenerating the deleted file")
	check("deleted file regenerated")

	// An aggregate struct gains a field without regeneration.
	src, err := os.ReadFile(g.file)
	if err != nil {
		t.Fatal(err)
	}
	off, marker := markerLine(src)
	if off < 0 {
		t.Fatalf("%s has no aggregate marker", g.file)
	}
	writeFile(t, g.file, slices.Concat(src[:off], []byte("\tCheckProbe int\n"), src[off:]))
	step := "field added after " + marker
	check(step, "out of date")
	// noamgen ignores its own files while loading, so the package can be
	// regenerated although the stale compile-time guard no longer compiles.
	mustGenerate(step + ": regenerating")
	check(step + ": regenerated")
	writeFile(t, g.file, src)
	check(step+": field removed again", "out of date")
	mustGenerate(step + ": regenerating the original")
	check("original struct restored")

	// An aggregate is added and generated, then removed: its files are stale.
	probe := filepath.Join(tmp, "check_probe.go")
	writeFile(t, probe, []byte("package "+g.pkg+"\n\ntype CheckProbe struct {\n\t_  struct{} `noam:\"aggregate\"`\n\tID string   `noam:\"id\"`\n}\n"))
	check("aggregate added", "check_probe_noam.gen.go: missing")
	mustGenerate("generating the added aggregate")
	check("added aggregate generated")
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	step = "aggregate removed"
	check(step, "check_probe_noam.gen.go: stale")
	mustGenerate(step + ": regenerating removes the stale files")
	_, outputs = listFiles(t, tmp)
	for _, o := range outputs {
		if strings.HasPrefix(o, "check_probe_") {
			t.Fatalf("%s: stale file %s left behind", step, o)
		}
	}
	check("stale files removed")
}

// markerLine finds the line after the first aggregate marker in src and
// returns its offset, and the marker line's text.
func markerLine(src []byte) (int, string) {
	off := 0
	for _, line := range strings.SplitAfter(string(src), "\n") {
		off += len(line)
		if strings.Contains(line, "`noam:\"aggregate") && strings.HasPrefix(strings.TrimSpace(line), "_ ") {
			return off, strings.TrimSpace(line)
		}
	}
	return -1, ""
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
