package stores_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/generator"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/stores"
)

// TestEveryStoreRegistered checks that every store folder under templates/
// (one whose Go files call templates.Register) is imported by this package,
// so that a new store cannot be forgotten.
func TestEveryStoreRegistered(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, n := range templates.StoreNames() {
		registered[n] = true
	}
	found := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "stores" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", d.Name(), "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "Register(t.Store{") || strings.Contains(string(src), "templates.Register(") {
				found++
				if !registered[d.Name()] {
					t.Errorf("templates/%s registers a store but templates/stores does not import it (registered: %v)", d.Name(), templates.StoreNames())
				}
			}
		}
	}
	if found < 2 {
		t.Fatalf("found %d store folders, want at least bolt and mongo", found)
	}
}

// TestConnSettings checks the connection settings every store registers
// (templates.Store.Conn), which `noamgen explain -sample` and `noamgen
// migrate` turn into flags: a store that a program can open names itself
// with its first setting (migrate picks the store by it), every setting
// has words for both commands and an environment variable, and no two
// stores give one flag different meanings.
func TestConnSettings(t *testing.T) {
	owner := map[string]string{}
	for _, st := range templates.StoreNames() {
		s, _ := templates.Lookup(st)
		if s.Program != nil && (len(s.Conn) == 0 || s.Conn[0].Name != st) {
			t.Errorf("%s: a program can open it, but its first connection setting is %v, not -%s", st, s.Conn, st)
		}
		if s.Program != nil && (s.Program.Open == "" || s.Program.Args == "") {
			t.Errorf("%s: Program has no Open or Args", st)
		}
		for _, c := range s.Conn {
			if c.Env == "" || c.Read == "" || c.Write == "" {
				t.Errorf("%s: connection setting -%s lacks an environment variable or its words: %+v", st, c.Name, c)
			}
			if o, ok := owner[c.Name]; ok {
				t.Errorf("-%s is a connection setting of both %s and %s", c.Name, o, st)
			}
			owner[c.Name] = st
		}
	}
	if got := len(templates.ConnSettings()); got != len(owner) {
		t.Errorf("ConnSettings lists %d settings, the stores register %d", got, len(owner))
	}
}

// TestGeneratedPackages runs the tests of the golden cases lookups and
// initialisms against their generated repositories on every store they
// name (bbolt; DynamoDB on dynalite or NOAM_DYNAMO_ENDPOINT): lookups on a
// partitioned field's elements, on an EAO root and on unique slice
// elements, scoped counters on converted integer types, methods named
// after Go initialisms, which the examples do not have. One go test for
// both packages and every store: each binary links every driver. (go test
// ./... skips testdata folders.)
func TestGeneratedPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on generated packages")
	}
	cmd := exec.Command("go", "test", "-count=1", "-vet=off", "./golden/testdata/lookups/", "./golden/testdata/initialisms/")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// The store-independent file of a package generated for some stores
// names only those: the docs of its lookups and of Repair come from their
// layout declarations.
func TestCommonFileNamesItsStoresOnly(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "golden", "testdata", "lookups"))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil || len(schema.Aggregates) == 0 {
		t.Fatalf("loading %s: %v (%d aggregates)", dir, err, len(schema.Aggregates))
	}
	titles := map[string]string{"bolt": "bbolt", "dynamo": "DynamoDB", "mongo": "MongoDB", "redis": "Redis"}
	for _, stores := range [][]string{{"bolt"}, {"bolt", "redis"}, {"mongo"}, {"dynamo"}, {"bolt", "dynamo", "mongo", "redis"}} {
		files, err := generator.Generate(schema, generator.Config{Stores: stores})
		if err != nil {
			t.Fatal(err)
		}
		common := 0
		for _, f := range files {
			if !strings.HasSuffix(f.Name, "_noam.gen.go") {
				continue
			}
			common++
			text := string(f.Content)
			for store, title := range titles {
				if !slices.Contains(stores, store) && strings.Contains(text, title) {
					t.Errorf("generated for %v, %s names %s", stores, f.Name, title)
				}
			}
		}
		if common == 0 {
			t.Fatalf("generated for %v: no store-independent file", stores)
		}
	}
	// The native indexes are named where the package has them.
	files, err := generator.Generate(schema, generator.Config{Stores: []string{"mongo"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name, "_noam.gen.go") && strings.Contains(string(f.Content), "Repair(ctx") && !strings.Contains(string(f.Content), "native secondary index") {
			t.Errorf("generated for MongoDB, %s does not say its lookups are native indexes", f.Name)
		}
	}
}
