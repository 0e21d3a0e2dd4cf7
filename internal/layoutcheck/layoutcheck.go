// Package layoutcheck checks, for every golden input and every store, that
// the entry keys a store writes for a sample block are the ones the model
// says (issue 8, item 1). For each package it writes a test file, kept out
// of the source tree with `go test -overlay`, that creates sample blocks of
// every aggregate on one store through the generated descriptor and calls
// storetest.CheckSampleLayout with the layout computed here from the
// parsed model (model.Aggregate.WriteOut). Stores whose servers run in
// another module (MongoDB on FerretDB, in the integration module) call Run
// from there.
package layoutcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/templates"
)

// Store says how the generated layout test reaches one store.
type Store struct {
	Name    string   // the store's flag name ("bolt")
	Imports []string // import paths Setup and Open use
	// Setup is Go statements run once per test, with t (*testing.T) in
	// scope, that declare what Open uses.
	Setup string
	// Open is a Go expression of the store adapter with %[1]s standing for
	// the descriptor variable (_gameDesc).
	Open string
}

// Bolt is the embedded store, on a fresh temporary file.
var Bolt = Store{
	Name:    "bolt",
	Imports: []string{"github.com/noamgen/noamgen/internal/layoutcheck", "github.com/noamgen/noamgen/runtime/boltstore"},
	Setup:   "db := layoutcheck.BoltDB(t)",
	Open:    "boltstore.Open(db, %[1]s)",
}

// MongoURIEnv names the variable that gives the MongoDB layout test its
// server; Run's caller sets it for the test processes.
const MongoURIEnv = "NOAM_LAYOUT_MONGO_URI"

// Mongo is MongoDB at $NOAM_LAYOUT_MONGO_URI, in a fresh database.
var Mongo = Store{
	Name:    "mongo",
	Imports: []string{"github.com/noamgen/noamgen/internal/layoutcheck", "github.com/noamgen/noamgen/runtime/mongostore"},
	Setup:   "db := layoutcheck.MongoDB(t)",
	// Unique lookups in index tables: FerretDB v1 has no partial indexes
	// (the layout of the aggregate's document is the same on both mappings).
	Open: "mongostore.Open(db, %[1]s, mongostore.UniqueTables())",
}

// Redis is a single Redis node started for each package's test (a local
// redis-server; the test skips without one). A cluster holds the same keys
// per block, so the layout is checked on a node.
var Redis = Store{
	Name:    "redis",
	Imports: []string{"github.com/noamgen/noamgen/internal/redistest", "github.com/noamgen/noamgen/runtime/redisstore"},
	Setup:   "rdb := redistest.Server(t)\nt.Cleanup(redistest.Stop)",
	Open:    "redisstore.Open(rdb, %[1]s)",
}

// Dynamo is DynamoDB: dynalite started for each package's test (or the
// endpoint NOAM_DYNAMO_ENDPOINT names), tables under a fresh prefix.
var Dynamo = Store{
	Name:    "dynamo",
	Imports: []string{"github.com/noamgen/noamgen/internal/dynalitetest", "github.com/noamgen/noamgen/runtime/dynamostore"},
	Setup:   "srv := dynalitetest.Start(t)\nclient, prefix := srv.Client(), srv.Prefix(t)",
	Open:    "dynamostore.Open(client, %[1]s, dynamostore.Options{TablePrefix: prefix})",
}

// BoltDB opens a bbolt database in a temporary directory, closed at the
// end of the test.
func BoltDB(t testing.TB) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "layout.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// MongoDB connects to $NOAM_LAYOUT_MONGO_URI and returns a database of its
// own, dropped at the end of the test.
func MongoDB(t testing.TB) *mongo.Database {
	t.Helper()
	uri := os.Getenv(MongoURIEnv)
	if uri == "" {
		t.Fatalf("%s is not set: the MongoDB layout test is run by layoutcheck.Run, which sets it", MongoURIEnv)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database(fmt.Sprintf("layout_%d_%s", os.Getpid(), strings.NewReplacer("/", "_", ".", "_").Replace(t.Name())))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = db.Drop(ctx)
		_ = client.Disconnect(ctx)
	})
	return db
}

// TestFile is the layout test of the package s describes on the given
// stores: a test per store, a subtest per aggregate.
func TestFile(s *model.Schema, stores []Store) ([]byte, error) {
	imports := map[string]bool{"testing": true, "github.com/noamgen/noamgen/runtime/storetest": true}
	var body bytes.Buffer
	for _, st := range stores {
		for _, imp := range st.Imports {
			imports[imp] = true
		}
		fmt.Fprintf(&body, "\nfunc TestNoamLayout%s(t *testing.T) {\n%s\n", strings.ToUpper(st.Name[:1])+st.Name[1:], st.Setup)
		for _, a := range s.Aggregates {
			d := templates.DescVar(a)
			fmt.Fprintf(&body, "\tt.Run(%q, func(t *testing.T) {\n\t\tstoretest.CheckSampleLayout(t, %s, %s, map[int][]string{", a.Name, d, fmt.Sprintf(st.Open, d))
			for _, n := range []int{0, 2, 3} {
				fmt.Fprintf(&body, "%d: %s, ", n, goStrings(a.WriteOut(n)))
			}
			body.WriteString("})\n\t})\n")
		}
		body.WriteString("}\n")
	}
	var src bytes.Buffer
	fmt.Fprintf(&src, "// Code generated by layoutcheck for the layout test; never written to the source tree.\n\npackage %s\n\nimport (\n", s.PkgName)
	for _, imp := range sortedKeys(imports) {
		fmt.Fprintf(&src, "\t%q\n", imp)
	}
	src.WriteString(")\n")
	src.Write(body.Bytes())
	out, err := format.Source(src.Bytes())
	if err != nil {
		return nil, fmt.Errorf("layout test of %s: %v\n%s", s.PkgPath, err, src.Bytes())
	}
	return out, nil
}

func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "{" + strings.Join(q, ", ") + "}"
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Run checks the layout of every package in dirs (absolute directories of
// packages of the main module) on every store: it loads each with the
// parser, writes its layout test to a temporary file, and runs one
// `go test -overlay` over all of them in directory runDir (a module whose
// build list holds the packages) with env added to the environment.
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
	for i, dir := range dirs {
		s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
		if err != nil {
			return nil, fmt.Errorf("loading %s: %v", dir, err)
		}
		if len(s.Aggregates) == 0 {
			continue
		}
		src, err := TestFile(s, stores)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(tmp, fmt.Sprintf("layout_%d_test.go", i))
		if err := os.WriteFile(file, src, 0o644); err != nil {
			return nil, err
		}
		overlay[filepath.Join(dir, "zz_noam_layout_test.go")] = file
		pkgs = append(pkgs, s.PkgPath)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no package with aggregates in %q", dirs)
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		return nil, err
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, b, 0o644); err != nil {
		return nil, err
	}
	args := append([]string{"test", "-count=1", "-v", "-run", "^TestNoamLayout", "-overlay", ov}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = runDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	// A package whose test did not run would pass silently: every package
	// must report ok.
	for _, p := range pkgs {
		if !bytes.Contains(out, []byte("\nok  \t"+p)) {
			return out, fmt.Errorf("no ok line for %s", p)
		}
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
