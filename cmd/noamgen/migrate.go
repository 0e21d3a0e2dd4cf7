package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/noamgen/noamgen/migrate"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

const migrateUsage = `usage: noamgen migrate -store bolt|mongo|redis|dynamo [-dry-run] [-batch N] [connection flags] [package]

noamgen migrate rewrites the blocks of every aggregate of one Go package
that are stored in an older layout (another strategy, a field partitioned
or no longer partitioned) into the layout of the package's current model, on one store, by calling each repository's generated Migrate. Run
it after the new build's EnsureIndexes has recorded the new layout.

It writes a small program in the system's temporary directory (removed
when it ends) and runs it with go run as a package of the package's module
(through a build overlay: nothing is written into the module), so the
package's generated code must be up to date. A real run reads the collection twice: once to
count the blocks (the progress bar's total), once to migrate them, a batch
at a time, each block in one conditional write: it is safe while the
application writes, and a run that stopped can be run again. -dry-run reads
once and writes nothing. The report says, per aggregate, how many blocks
were migrated (or would be), how many were already current, and which
failed, with why.

Exit status: 0 when no block failed (after a real run, every block read
is current); 1 when a block could not be migrated or the store failed; 2
for a bad command line.

Flags:
`

func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("noamgen migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "", "the `store` to migrate: "+strings.Join(migrate.Stores(), ", ")+" (default: the one the connection flags name)")
	dryRun := fs.Bool("dry-run", false, "count what would change and write nothing")
	batch := fs.Int("batch", 64, "blocks read and rewritten per step")
	conn := defineConnFlags(fs, true)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateUsage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *batch <= 0 {
		fmt.Fprintln(stderr, "noamgen migrate: -batch must be positive")
		return 2
	}
	if *store != "" && !slices.Contains(migrate.Stores(), *store) {
		fmt.Fprintf(stderr, "noamgen migrate: -store %s: noamgen migrate knows %s\n", *store, strings.Join(migrate.Stores(), ", "))
		return 2
	}
	if *store == "" {
		var named []string
		for _, st := range migrate.Stores() {
			// A store's first connection setting names it.
			if s, _ := templates.Lookup(st); *conn[s.Conn[0].Name] != "" {
				named = append(named, st)
			}
		}
		if len(named) != 1 {
			fmt.Fprintf(stderr, "noamgen migrate: name the store with -store (%s) and its connection flags (%s)\n", strings.Join(migrate.Stores(), ", "), strings.Join(connFlags(), ", "))
			return 2
		}
		*store = named[0]
	}
	pattern := "."
	if fs.NArg() == 1 {
		pattern = fs.Arg(0)
	}
	cwd, _ := os.Getwd()
	schema, err := parser.Load(parser.Config{Pattern: pattern, BaseDir: cwd})
	if err != nil {
		var positioned model.ErrorList
		if errors.As(err, &positioned) {
			fmt.Fprintln(stderr, err)
		} else {
			fmt.Fprintln(stderr, "noamgen migrate:", err)
		}
		return 1
	}
	settings := map[string]string{}
	for name, v := range conn {
		settings[name] = *v
	}
	ok, err := migrate.Run(schema, migrate.Options{Store: *store, DryRun: *dryRun, Batch: *batch, Conn: settings}, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "noamgen migrate:", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}
