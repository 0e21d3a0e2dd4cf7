package golden_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

// explainDir is the folder of a good case that holds its expected
// `noamgen explain` output, explain.md and explain.json (for every
// registered store). It holds no .go file, so TestGolden does not see it.
const explainDir = "explain"

// explainFiles renders the explain output of the package in dir for every
// registered store, Markdown and JSON.
func explainFiles(t *testing.T, dir string) (md, js []byte, err error) {
	t.Helper()
	schema, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		return nil, nil, err
	}
	r, err := explain.Build(schema, explain.Config{Stores: templates.StoreNames()})
	if err != nil {
		return nil, nil, err
	}
	var m, j bytes.Buffer
	if err := explain.Markdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if err := explain.JSON(&j, r); err != nil {
		t.Fatal(err)
	}
	return m.Bytes(), j.Bytes(), nil
}

// TestGoldenExplain compares `noamgen explain` of every good case with
// <case>/explain/explain.md and explain.json, and checks that explain
// refuses every bad case with exactly the error generation gives
// (stderr.txt). -update rewrites the expected files.
func TestGoldenExplain(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skipf("%s:\n%s", skipFile, c.skip)
			}
			t.Parallel()
			md, js, err := explainFiles(t, c.dir)
			if c.bad {
				if err == nil {
					t.Fatal("explain accepted a bad case")
				}
				var list model.ErrorList
				if !errors.As(err, &list) {
					t.Fatalf("want a model.ErrorList, got %T: %v", err, err)
				}
				want, rerr := os.ReadFile(filepath.Join(c.dir, stderrFile))
				if rerr != nil {
					t.Fatal(rerr)
				}
				if got := []byte(list.Error() + "\n"); !bytes.Equal(want, got) {
					t.Errorf("explain's error differs from generation's %s:\n%s", stderrFile, firstDiff(want, got))
				}
				if _, err := os.Stat(filepath.Join(c.dir, explainDir)); err == nil {
					t.Errorf("bad case holds %s/", explainDir)
				}
				return
			}
			if err != nil {
				t.Fatalf("explain failed on a good case: %v", err)
			}
			dir := filepath.Join(c.dir, explainDir)
			for _, f := range []struct {
				name string
				got  []byte
			}{{"explain.md", md}, {"explain.json", js}} {
				path := filepath.Join(dir, f.name)
				if *update {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					writeIfChanged(t, path, f.got)
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(want, f.got) {
					t.Errorf("%s/%s differs (run with -update to accept):\n%s", explainDir, f.name, firstDiff(want, f.got))
				}
			}
		})
	}
}

// TestLayoutFresh checks that each example package's committed LAYOUT.md
// is what `noamgen explain` writes today (like TestExamplesFresh for the
// generated code); -update rewrites it. Examples without a LAYOUT.md are
// skipped: example/game is required to have one.
func TestLayoutFresh(t *testing.T) {
	found := false
	for _, g := range examplePackages(t) {
		path := filepath.Join(g.dir, "LAYOUT.md")
		want, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && !*update {
			continue
		}
		if filepath.Base(g.dir) != "game" && errors.Is(err, os.ErrNotExist) {
			continue
		}
		found = found || filepath.Base(g.dir) == "game"
		md, _, err := explainFiles(t, g.dir)
		if err != nil {
			t.Fatalf("%s: %v", g.dir, err)
		}
		if *update {
			writeIfChanged(t, path, md)
			continue
		}
		if !bytes.Equal(want, md) {
			t.Errorf("%s is out of date; run go test ./golden/ -update (or noamgen explain -o LAYOUT.md in %s):\n%s", path, g.dir, firstDiff(want, md))
		}
	}
	if !found {
		t.Error("example/game/LAYOUT.md is missing (run go test ./golden/ -update)")
	}
}
