package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

const explainUsage = `usage: noamgen explain [-store mongo,bolt] [-format md|json] [-o file [-check]] [-sample N [connection flags]] [package]

noamgen explain describes, from the same parser and model as generation,
what the aggregates of one Go package look like in the NoAM model (block
key, entries, strategy, partitions, version, lookups, references) and in
each store (collections, buckets, index tables, example keys and
documents), and what every generated method reads, writes, costs in round
trips and does atomically, per store. -format md is Markdown for a pull
request, with a Mermaid diagram; -format json is the stable format
documented in package explain (it has a version field).

With -sample N it also reads up to N real blocks of each aggregate from the
stores named by the connection flags (nothing is written) and shows their
sizes per entry, the largest blocks and partitions, and warnings where they
approach the store's limit; and the layout the store has recorded for each
collection (what EnsureIndexes last served: strategy, partitions, version,
lookups and whether they are built) beside the current model's, with what
changed and the older layouts blocks may still be stored in.

Flags:
`

func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("noamgen explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var stores listFlag
	fs.Var(&stores, "store", "`stores` to describe, comma-separated or repeated (known: "+strings.Join(templates.StoreNames(), ", ")+"; default: every store)")
	format := fs.String("format", "md", "output `format`: md or json")
	out := fs.String("o", "", "write to `file` instead of standard output")
	check := fs.Bool("check", false, "with -o: write nothing; exit 1 if the file is missing or differs (for CI)")
	sample := fs.Int("sample", 0, "read up to `N` blocks of each aggregate from the stores named by the connection flags and show their sizes")
	single := fs.String("dynamo-single-table", "", "draw DynamoDB in the single-table design with `table` (dynamostore.Options.SingleTable)")
	conn := defineConnFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprint(stderr, explainUsage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *format != "md" && *format != "json" {
		fmt.Fprintf(stderr, "noamgen explain: -format must be md or json, not %q\n", *format)
		return 2
	}
	if *check && *out == "" {
		fmt.Fprintln(stderr, "noamgen explain: -check needs -o file")
		return 2
	}
	if *sample < 0 {
		fmt.Fprintln(stderr, "noamgen explain: -sample must not be negative")
		return 2
	}
	pattern := "."
	if fs.NArg() == 1 {
		pattern = fs.Arg(0)
	}
	cwd, _ := os.Getwd()
	schema, err := parser.Load(parser.Config{Pattern: pattern, BaseDir: cwd})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	report, err := explain.Build(schema, explain.Config{Stores: stores, DynamoSingleTable: *single})
	if err != nil {
		var positioned model.ErrorList
		if errors.As(err, &positioned) {
			fmt.Fprintln(stderr, err)
		} else {
			fmt.Fprintln(stderr, "noamgen explain:", err)
		}
		return 1
	}
	if *sample > 0 {
		settings := map[string]string{}
		for name, v := range conn {
			settings[name] = *v
		}
		if err := report.Sample(context.Background(), *sample, settings); err != nil {
			fmt.Fprintln(stderr, "noamgen explain:", err)
			return 1
		}
		sampled := false
		for _, a := range report.Aggregates {
			sampled = sampled || len(a.Samples) > 0
		}
		if !sampled && len(report.Aggregates) > 0 {
			fmt.Fprintf(stderr, "noamgen explain: -sample %d: no store to sample; name one with a connection flag (%s)\n", *sample, strings.Join(connFlags(), ", "))
			return 2
		}
	}
	var buf bytes.Buffer
	if *format == "json" {
		err = explain.JSON(&buf, report)
	} else {
		err = explain.Markdown(&buf, report)
	}
	if err != nil {
		fmt.Fprintln(stderr, "noamgen explain:", err)
		return 1
	}
	if *out == "" {
		stdout.Write(buf.Bytes())
		return 0
	}
	old, rerr := os.ReadFile(*out)
	if *check {
		switch {
		case errors.Is(rerr, os.ErrNotExist):
			fmt.Fprintf(stderr, "noamgen explain: %s: missing; run noamgen explain -o %s\n", *out, *out)
			return 1
		case rerr != nil:
			fmt.Fprintln(stderr, "noamgen explain:", rerr)
			return 1
		case !bytes.Equal(old, buf.Bytes()):
			fmt.Fprintf(stderr, "noamgen explain: %s: out of date; run noamgen explain -o %s\n", *out, *out)
			return 1
		}
		return 0
	}
	if rerr == nil && bytes.Equal(old, buf.Bytes()) {
		return 0
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(stderr, "noamgen explain:", err)
		return 1
	}
	return 0
}

func connFlags() []string {
	var out []string
	for _, c := range templates.ConnSettings() {
		s := "-" + c.Name
		if c.Env != "" {
			s += " or $" + c.Env
		}
		out = append(out, s)
	}
	return out
}

// defineConnFlags defines on fs a flag per live-store connection setting
// (templates.ConnSettings), defaulting to its environment variable,
// described for a command that writes when write is set.
func defineConnFlags(fs *flag.FlagSet, write bool) map[string]*string {
	conn := map[string]*string{}
	for _, c := range templates.ConnSettings() {
		u := c.Read
		if write && c.Write != "" {
			u = c.Write
		}
		if c.Env != "" {
			u += " (default $" + c.Env + ")"
		}
		conn[c.Name] = fs.String(c.Name, os.Getenv(c.Env), u)
	}
	return conn
}
