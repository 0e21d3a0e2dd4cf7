package migrate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/templates"
)

// Options are the command's settings.
type Options struct {
	Store  string
	DryRun bool
	Batch  int
	Conn   map[string]string
}

// Run migrates every aggregate of s on o.Store: it writes the program in
// the system's temporary directory (removed when it returns), runs it with
// `go run -overlay` as a package of the module holding s (nothing is written
// into the module), draws a progress line per batch on stderr and
// writes the report per aggregate on stdout. ok is false when a block
// could not be migrated; err when the program could not be run or a store
// failed.
func Run(s *model.Schema, o Options, stdout, stderr io.Writer) (ok bool, err error) {
	if err := checkGenerated(s, o.Store); err != nil {
		return false, err
	}
	src, err := Program(s, o.Store)
	if err != nil {
		return false, err
	}
	root, err := moduleRoot(s.Dir)
	if err != nil {
		return false, err
	}
	// The program is a package of the module (it imports the module's
	// packages and builds with its go.mod), but nothing is written into the
	// module's tree: its main.go lies in the system's temporary directory
	// and a build overlay (go run -overlay) shows it to the go command as
	// root/_noamgen_migrate_*/main.go, a directory that does not exist.
	tmp, err := os.MkdirTemp("", "noamgen-migrate-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(root, "_noamgen_migrate_"+strings.TrimPrefix(filepath.Base(tmp), "noamgen-migrate-"))
	mainGo := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(mainGo, src, 0o644); err != nil {
		return false, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(dir, "main.go"): mainGo}})
	if err != nil {
		return false, err
	}
	overlayJSON := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayJSON, overlay, 0o644); err != nil {
		return false, err
	}
	cfg, err := json.Marshal(Config{DryRun: o.DryRun, Batch: o.Batch, Conn: o.Conn})
	if err != nil {
		return false, err
	}
	cmd := exec.Command("go", "run", "-overlay", overlayJSON, "./"+filepath.Base(dir))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), EnvConfig+"="+string(cfg))
	// The program's stderr (build errors, its own failures) and the
	// progress lines share stderr: one write at a time, and through Write
	// alone (a bytes.Buffer's ReadFrom, which exec would use, keeps the
	// buffer's length across a blocking read and drops what was written
	// meanwhile).
	stderr = &lockedWriter{w: stderr}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	// An interrupt reaches the program too (the same process group): it
	// stops after its current batch, and this process waits for it to
	// remove the directory.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		return false, err
	}
	r := &reporter{stdout: stdout, stderr: stderr, dryRun: o.DryRun, ok: true}
	perr := r.read(out)
	werr := cmd.Wait()
	switch {
	case perr != nil:
		return false, perr
	case r.storeErr != nil:
		return false, r.storeErr
	case werr != nil:
		return false, fmt.Errorf("the migration program failed: %w", werr)
	}
	return r.ok, nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// checkGenerated makes sure the package has the store's repositories, so
// that a missing store is named rather than reported as a compile error.
func checkGenerated(s *model.Schema, store string) error {
	files, err := filepath.Glob(filepath.Join(s.Dir, "*.go"))
	if err != nil {
		return err
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		src.Write(b)
	}
	for _, a := range s.Aggregates {
		name := "New" + templates.StoreRepo(a, templates.StoreTitle(store))
		if !strings.Contains(src.String(), "func "+name+"(") {
			return fmt.Errorf("package %s has no %s: generate the %s repositories (noamgen -store %s), then run go generate", s.PkgPath, name, store, store)
		}
	}
	return nil
}

// moduleRoot is the directory of the go.mod of the module holding dir.
func moduleRoot(dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD in %s: %w", dir, err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("%s is not in a Go module: noamgen migrate runs a program inside the module", dir)
	}
	return filepath.Dir(mod), nil
}

// reporter reads the program's events: a progress line per batch on
// stderr, the report of each aggregate on stdout.
type reporter struct {
	stdout, stderr io.Writer
	dryRun         bool
	total          int // blocks counted by the first pass of a real run
	ok             bool
	storeErr       error
}

func (r *reporter) read(out io.Reader) error {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event: something the application's packages print.
			fmt.Fprintln(r.stderr, sc.Text())
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *reporter) event(e Event) {
	if e.Error != "" {
		fmt.Fprintf(r.stderr, "%s: %s: %s\n", e.Aggregate, e.Phase, e.Error)
		r.storeErr = errors.Join(r.storeErr, fmt.Errorf("%s: %s", e.Aggregate, e.Error))
		r.ok = false
		return
	}
	switch e.Phase {
	case "count":
		if e.Done {
			r.total = e.Scanned
			return
		}
		fmt.Fprintf(r.stderr, "%s: counting: %d blocks, %d to migrate\n", e.Aggregate, e.Scanned, e.Migrated)
	case "dry-run":
		if !e.Done {
			fmt.Fprintf(r.stderr, "%s: %d blocks, %d to migrate\n", e.Aggregate, e.Scanned, e.Migrated)
			return
		}
		r.report(e)
	case "migrate":
		if !e.Done {
			fmt.Fprintf(r.stderr, "%s: %s %d blocks, %d migrated\n", e.Aggregate, Bar(e.Scanned, r.total, 20), e.Scanned, e.Migrated)
			return
		}
		r.report(e)
	}
}

// report writes the result of one aggregate's migration.
func (r *reporter) report(e Event) {
	verb := "migrated"
	if r.dryRun {
		verb = "to migrate"
	}
	fmt.Fprintf(r.stdout, "%s: %d blocks: %d %s, %d already current, %d failed\n", e.Aggregate, e.Scanned, e.Migrated, verb, e.Current, len(e.Failed))
	for _, f := range e.Failed {
		from := ""
		if f.From != "" {
			from = " (stored " + f.From + ")"
		}
		fmt.Fprintf(r.stdout, "  block %s%s: %s\n", f.ID, from, f.Err)
	}
	if len(e.Failed) > 0 {
		r.ok = false
	}
}

// Bar draws done out of total as a bar of width characters,
// "[#####.....]"; an unknown total (0) or done past it draws it full.
func Bar(done, total, width int) string {
	n := width
	if total > 0 && done < total {
		n = done * width / total
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
