package migrate_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, "_noamgen_migrate_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
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
		args = append(args, "./"+filepath.Base(tmp)+"/"+st)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
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
