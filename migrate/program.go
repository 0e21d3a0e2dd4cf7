// Package migrate is `noamgen migrate`: it rewrites the blocks of every
// aggregate of a package that are stored in an older layout into the
// current one, on one store, by calling the generated repositories'
// Migrate. Those are the user's code, so the command writes a small main
// package inside the user's module (Program), runs it with `go run`, reads
// the events it prints (one JSON object a line), draws the progress and
// writes the report (Run). This package links no database driver: the
// program does.
package migrate

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"text/template"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/stores" // registers every store
)

// EnvConfig is the environment variable through which the program receives
// its Config as JSON (connection strings stay out of the source file and
// of the command line).
const EnvConfig = "NOAMGEN_MIGRATE"

// Config is what the program is run with.
type Config struct {
	DryRun bool `json:"dryRun"`
	Batch  int  `json:"batch"`
	// Conn are the connection settings by name, as for
	// `noamgen explain -sample` ("bolt", "mongo", "db", "redis", "dynamo",
	// "dynamo-prefix").
	Conn map[string]string `json:"conn"`
}

// Event is one line the program prints on its standard output.
type Event struct {
	Aggregate string `json:"aggregate"`
	// Phase is "count" (a first pass that counts the blocks, writing
	// nothing, before a real run), "dry-run" or "migrate".
	Phase    string   `json:"phase"`
	Scanned  int      `json:"scanned"`
	Migrated int      `json:"migrated"`
	Current  int      `json:"current"`
	Failed   []Failed `json:"failed,omitempty"`
	// Done is set on the last event of a phase.
	Done bool `json:"done,omitempty"`
	// Error is why the phase stopped early (the store failed).
	Error string `json:"error,omitempty"`
}

// Failed is a block that could not be migrated.
type Failed struct {
	ID   string `json:"id"`
	From string `json:"from,omitempty"`
	Err  string `json:"err"`
}

// Stores lists the stores the command can migrate: the registered stores
// whose registration says how a program opens them (templates.Program).
func Stores() []string {
	var out []string
	for _, st := range templates.StoreNames() {
		if s, _ := templates.Lookup(st); s.Program != nil {
			out = append(out, st)
		}
	}
	return out
}

var program = template.Must(template.New("main").Parse(`// Code written by noamgen migrate, which runs it and removes it.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
{{range .Std}}	{{printf "%q" .}}
{{end}}
{{range .Imports}}	{{printf "%q" .}}
{{end}}	"github.com/noamgen/noamgen/runtime"

	pkg {{printf "%q" .PkgPath}}
)

type failed struct {
	ID   string ` + "`json:\"id\"`" + `
	From string ` + "`json:\"from,omitempty\"`" + `
	Err  string ` + "`json:\"err\"`" + `
}

type event struct {
	Aggregate string   ` + "`json:\"aggregate\"`" + `
	Phase     string   ` + "`json:\"phase\"`" + `
	Scanned   int      ` + "`json:\"scanned\"`" + `
	Migrated  int      ` + "`json:\"migrated\"`" + `
	Current   int      ` + "`json:\"current\"`" + `
	Failed    []failed ` + "`json:\"failed,omitempty\"`" + `
	Done      bool     ` + "`json:\"done,omitempty\"`" + `
	Error     string   ` + "`json:\"error,omitempty\"`" + `
}

type migrator func(context.Context, runtime.MigrateOptions) (runtime.MigrateReport, error)

func main() { os.Exit(run()) }

func run() int {
	var settings struct {
		DryRun bool              ` + "`json:\"dryRun\"`" + `
		Batch  int               ` + "`json:\"batch\"`" + `
		Conn   map[string]string ` + "`json:\"conn\"`" + `
	}
	if err := json.Unmarshal([]byte(os.Getenv({{printf "%q" .Env}})), &settings); err != nil {
		fmt.Fprintln(os.Stderr, "noamgen migrate: this program is run by noamgen migrate:", err)
		return 2
	}
	conn := settings.Conn
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	{{.Open}}
	aggregates := []struct {
		name    string
		migrate migrator
	}{
{{range .Repos}}		{ {{- printf "%q" .Name}}, pkg.{{.Constructor}}({{$.Args}}).Migrate},
{{end}}	}
	out := json.NewEncoder(os.Stdout)
	for _, a := range aggregates {
		if !settings.DryRun && !pass(ctx, out, a.name, "count", a.migrate, runtime.MigrateOptions{DryRun: true, Batch: settings.Batch}) {
			return 1
		}
		phase := "migrate"
		if settings.DryRun {
			phase = "dry-run"
		}
		if !pass(ctx, out, a.name, phase, a.migrate, runtime.MigrateOptions{DryRun: settings.DryRun, Batch: settings.Batch}) {
			return 1
		}
	}
	return 0
}

// pass runs one Migrate over the aggregate's collection, printing an event
// after each batch and at the end; it reports whether the store answered.
func pass(ctx context.Context, out *json.Encoder, name, phase string, migrate migrator, o runtime.MigrateOptions) bool {
	ev := func(r runtime.MigrateReport) event {
		e := event{Aggregate: name, Phase: phase, Scanned: r.Scanned, Migrated: r.Migrated, Current: r.Current}
		for _, b := range r.Failed {
			e.Failed = append(e.Failed, failed{ID: fmt.Sprint(b.ID), From: b.From, Err: fmt.Sprint(b.Err)})
		}
		return e
	}
	o.Progress = func(r runtime.MigrateReport) {
		e := ev(r)
		e.Failed = nil
		out.Encode(e)
	}
	r, err := migrate(ctx, o)
	e := ev(r)
	e.Done = true
	if err != nil {
		e.Error = err.Error()
	}
	out.Encode(e)
	return err == nil
}
`))

// Repo is one aggregate's repository on the chosen store.
type Repo struct {
	Name        string // the aggregate's type name
	Constructor string // its constructor, e.g. NewPlayerBoltRepository
}

// Program returns the source of the main package that migrates every
// aggregate of s on store.
func Program(s *model.Schema, store string) ([]byte, error) {
	st, _ := templates.Lookup(store)
	op := st.Program
	if op == nil {
		return nil, fmt.Errorf("cannot migrate store %q (known: %s)", store, strings.Join(Stores(), ", "))
	}
	if len(s.Aggregates) == 0 {
		return nil, fmt.Errorf("package %s declares no aggregate", s.PkgPath)
	}
	data := struct {
		Std, Imports []string
		PkgPath      string
		Env          string
		Open, Args   string
		Repos        []Repo
	}{PkgPath: s.PkgPath, Env: EnvConfig, Open: op.Open, Args: op.Args}
	for _, imp := range op.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			data.Imports = append(data.Imports, imp)
		} else {
			data.Std = append(data.Std, imp)
		}
	}
	for _, a := range s.Aggregates {
		data.Repos = append(data.Repos, Repo{Name: a.Name, Constructor: "New" + templates.StoreRepo(a, templates.StoreTitle(store))})
	}
	var b bytes.Buffer
	if err := program.Execute(&b, data); err != nil {
		return nil, err
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the migration program does not parse: %w\n%s", err, b.Bytes())
	}
	return src, nil
}
