package migrate_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/internal/testmod"
	"github.com/noamgen/noamgen/migrate"
	"github.com/noamgen/noamgen/parser"
)

// TestProgramCompiles writes the migration program of a package generated
// for every store, for each store, and vets it: the program is the user's
// module's code, so only the go command can say it is right.
func TestProgramCompiles(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "runtime", "storetest", "evolve", "lookups"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// The programs go into a module of their own under t.TempDir() that
	// requires this one: nothing is written into the repository.
	tmp := testmod.New(t)
	args := []string{"vet"}
	for _, st := range migrate.Stores() {
		src, err := migrate.Program(s, st)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if !bytes.Contains(src, []byte("pkg.NewPlayer"+strings.ToUpper(st[:1])+st[1:]+"Repository(")) {
			t.Errorf("%s: the program does not open the Player repository:\n%s", st, src)
		}
		if err := os.MkdirAll(filepath.Join(tmp, st), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, st, "main.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "./"+st)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestUnknownStore(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "runtime", "storetest", "evolve", "lookups"))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Program(s, "cassandra"); err == nil || !strings.Contains(err.Error(), "bolt, dynamo, mongo, redis") {
		t.Errorf("Program(cassandra): %v", err)
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		done, total int
		want        string
	}{
		{0, 10, "[..........]"},
		{5, 10, "[#####.....]"},
		{10, 10, "[##########]"},
		{12, 10, "[##########]"},
		{3, 0, "[##########]"},
		{640, 1280, "[#####.....]"},
	} {
		if got := migrate.Bar(c.done, c.total, 10); got != c.want {
			t.Errorf("Bar(%d, %d): %s, want %s", c.done, c.total, got, c.want)
		}
	}
}

// TestRunWritesNothingIntoTheModule runs a migration (of an empty bbolt
// file) for a package of this module and, each time the running program
// writes a line, lists the module's root: the program must not be a
// directory there, not even while it runs.
func TestRunWritesNothingIntoTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the migration program")
	}
	dir, err := filepath.Abs(filepath.Join("..", "runtime", "storetest", "evolve", "eao"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root := testmod.Root(t)
	w := &rootWatcher{t: t, root: root}
	ok, err := migrate.Run(s, migrate.Options{Store: "bolt", Batch: 10, Conn: map[string]string{"bolt": filepath.Join(t.TempDir(), "empty.db")}}, w, w)
	if err != nil || !ok {
		t.Fatalf("Run: ok %v, %v\n%s", ok, err, w.out.String())
	}
	if w.writes == 0 {
		t.Fatal("the program wrote nothing while it ran, so the module's root was never looked at")
	}
	w.look()
}

// rootWatcher is the program's stdout and stderr: at each write it lists
// the module's root and fails the test on an entry the migration made.
type rootWatcher struct {
	mu     sync.Mutex
	t      *testing.T
	root   string
	out    bytes.Buffer
	writes int
}

func (w *rootWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.look()
	return w.out.Write(p)
}

func (w *rootWatcher) look() {
	entries, err := os.ReadDir(w.root)
	if err != nil {
		w.t.Error(err)
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "_noamgen_migrate") {
			w.t.Errorf("the migration wrote %s into the module's root", filepath.Join(w.root, e.Name()))
		}
	}
}
