// Command noamgen generates typed NoSQL repositories from NoAM-tagged Go
// structs. Run it from //go:generate (it works on the package of $GOFILE)
// or as
//
//	noamgen [-store mongo,bolt] [-pattern '{type}_{store}.gen.go'] [-check] [-v] [package]
//
// (noamgen -h documents every flag), and
//
//	noamgen explain [-store mongo,bolt] [-format md|json] [-o file [-check]] [-sample N ...] [package]
//
// describes the storage layout and the cost of every method (noamgen
// explain -h).
//
// See the README for the tag language.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/noamgen/noamgen/generator"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

const usage = `usage: noamgen [-store mongo,bolt] [-pattern '{type}_{store}.gen.go'] [-check] [-v] [package]

noamgen generates typed NoSQL repositories for the aggregates of one Go
package: the structs that have a marker field ` + "`_ struct{} `noam:\"aggregate\"``" + `.
package is a go list pattern naming exactly one package; without it,
noamgen works on the package in the current directory (as under
//go:generate, where $GOPACKAGE must match it). For each aggregate it
writes the store-independent interface file and one file per store, next to
the package's sources. Files noamgen generated earlier that no aggregate
produces any more are removed; files it did not generate are never
overwritten. Its own files are left out when the package is loaded, so a
package whose generated code is missing or out of date can always be
regenerated.

Flags:
`

const usageTail = `
Errors in the package or its tags are printed as file:line:col: message,
all of them, sorted by position; nothing is written then.

Exit status: 0 on success (and for -h); 1 when the package has errors, or -check finds
a difference; 2 for a bad command line.

The tag language is described in the README's "Tag reference".
noamgen explain -h describes the explain subcommand (storage layout, round
trips and atomicity of every method, per store); noamgen migrate -h the
migrate subcommand (rewriting blocks stored in an older layout).
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "explain" {
		return runExplain(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("noamgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var stores listFlag
	fs.Var(&stores, "store", "`stores` to generate repositories for, comma-separated or repeated (known: "+strings.Join(templates.StoreNames(), ", ")+"; default: every store)")
	pattern := fs.String("pattern", generator.DefaultPattern, "output file name `pattern`; {type} is the aggregate's type name in snake_case, {store} the store name (noam for the store-independent interface file); must end in .go, not _test.go, and name no directory")
	check := fs.Bool("check", false, "write nothing; print the generated files that are missing, out of date or stale and exit 1 if there is any (for CI)")
	verbose := fs.Bool("v", false, "print the names of the files written or removed")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, usageTail)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h asked for the usage
		}
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	// Under go:generate, $GOFILE and $GOPACKAGE name the file and package
	// the directive is in, and the working directory is its package.
	goPackage := os.Getenv("GOPACKAGE")
	pattern0 := "."
	if fs.NArg() == 1 {
		pattern0 = fs.Arg(0)
		goPackage = "" // an explicit package wins
	}
	if strings.HasSuffix(goPackage, "_test") {
		fmt.Fprintf(stderr, "noamgen: %s: go:generate in an external test package (%s) is not supported; put the directive in the package that declares the aggregates\n", os.Getenv("GOFILE"), goPackage)
		return 1
	}
	cwd, _ := os.Getwd()
	schema, err := parser.Load(parser.Config{Pattern: pattern0, BaseDir: cwd})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if goPackage != "" && schema.PkgName != goPackage {
		fmt.Fprintf(stderr, "noamgen: %s: $GOPACKAGE is %s but the package in %s is %s\n", os.Getenv("GOFILE"), goPackage, cwd, schema.PkgName)
		return 1
	}
	files, err := generator.Generate(schema, generator.Config{Stores: stores, Pattern: *pattern})
	if err != nil {
		var positioned model.ErrorList
		if errors.As(err, &positioned) {
			fmt.Fprintln(stderr, err) // file:line:col: message, like the parser's
		} else {
			fmt.Fprintln(stderr, "noamgen:", err)
		}
		return 1
	}
	if *check {
		diffs, err := generator.Diff(schema.Dir, files)
		if err != nil {
			fmt.Fprintln(stderr, "noamgen:", err)
			return 1
		}
		for _, d := range diffs {
			fmt.Fprintf(stderr, "noamgen: %s\n", d)
		}
		if len(diffs) > 0 {
			fmt.Fprintln(stderr, "noamgen: generated code is not up to date; run go generate")
			return 1
		}
		return 0
	}
	// Refuse before writing anything, rather than halfway through.
	clash := false
	for _, f := range files {
		path := filepath.Join(schema.Dir, f.Name)
		if old, err := os.ReadFile(path); err == nil && !model.IsGenerated(old) {
			fmt.Fprintf(stderr, "noamgen: %s exists and was not generated by noamgen; not overwriting it\n", path)
			clash = true
		}
	}
	if clash {
		return 1
	}
	changed, err := generator.Write(schema.Dir, files)
	if err != nil {
		fmt.Fprintln(stderr, "noamgen:", err)
		return 1
	}
	if *verbose {
		for _, c := range changed {
			fmt.Fprintln(stdout, "noamgen: wrote", c)
		}
	}
	return 0
}

// parseFlags parses args into fs, which takes at most one argument. It
// reports false, with the exit code, when the command must stop: 0 after
// -help, 2 after a usage error.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2, false
	}
	return 0, true
}
