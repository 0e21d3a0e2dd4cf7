// Command testsummary reads `go test -json` on standard input and prints
// what a plain `go test` would (one line per package, and the output of
// failing tests), plus the tests that were skipped, grouped by reason, so
// that a suite skipped for a missing server (redis-server, node for
// dynalite) shows without -v. scripts/test-all.sh pipes every go test
// through it and calls it with -report at the end for one summary of the
// whole run.
//
//	go test -json ./... | go run ./internal/testsummary -run "main module" -log /tmp/skips
//	go run ./internal/testsummary -report /tmp/skips
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64 // seconds, on pass and fail
}

// timing is how long one top-level test ran.
type timing struct {
	name    string
	seconds float64
}

// skip is one skipped test, as recorded in the log for -report.
type skip struct {
	Run     string `json:"run"`
	Package string `json:"package"`
	Test    string `json:"test"`
	Reason  string `json:"reason"`
}

func main() {
	run := flag.String("run", "go test", "name of this run in the summary")
	logPath := flag.String("log", "", "append the skipped tests to this file (JSON lines) for -report")
	report := flag.String("report", "", "print the summary of the skips recorded in this file and exit")
	flag.Parse()
	if *report != "" {
		if err := printReport(os.Stdout, *report); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(1)
		}
		return
	}
	skips, slow, failed, err := filter(os.Stdin, os.Stdout, *run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if *logPath != "" {
		if err := appendLog(*logPath, skips); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(1)
		}
	}
	printSkips(os.Stdout, *run, skips)
	printSlowest(os.Stdout, *run, slow)
	if failed {
		os.Exit(1)
	}
}

// filter copies the plain output of a go test -json stream to w and
// returns the skipped tests, how long the top-level tests ran, and whether
// anything failed.
func filter(r io.Reader, w io.Writer, run string) ([]skip, []timing, bool, error) {
	out := map[string][]string{} // package + "\x00" + test -> its output
	var skips []skip
	var times []timing
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (a build error printed by go test): show it.
			fmt.Fprintln(w, string(line))
			continue
		}
		key := e.Package + "\x00" + e.Test
		if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && !strings.Contains(e.Test, "/") {
			times = append(times, timing{e.Package[strings.LastIndex(e.Package, "/")+1:] + "." + e.Test, e.Elapsed})
		}
		switch e.Action {
		case "output":
			if e.Test == "" {
				if s := e.Output; !strings.HasPrefix(s, "=== ") && s != "PASS\n" && !strings.HasPrefix(s, "--- PASS") && !strings.HasPrefix(s, "--- SKIP") {
					fmt.Fprint(w, s)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				for _, s := range out[key] {
					fmt.Fprint(w, s)
				}
			}
			delete(out, key)
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{Run: run, Package: e.Package, Test: e.Test, Reason: reason(out[key])})
			}
			delete(out, key)
		case "pass":
			delete(out, key)
		case "build-output":
			// A package that does not build (go test -json reports its
			// compiler output this way).
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		}
	}
	return skips, times, failed, sc.Err()
}

// slowest is how many of the longest tests printSlowest names.
const slowest = 8

// printSlowest names the longest-running top-level tests of the run, so
// that the test command's time can be kept in check.
func printSlowest(w io.Writer, run string, times []timing) {
	sort.SliceStable(times, func(i, j int) bool { return times[i].seconds > times[j].seconds })
	var parts []string
	for i, t := range times {
		if i == slowest || t.seconds < 1 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1fs", t.name, t.seconds))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "%s: slowest tests: %s\n", run, strings.Join(parts, ", "))
	}
}

// reason is the message a skipped test gave (the t.Skip line), without
// the file:line prefix.
func reason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") {
			t = t[i+2:]
		}
		msg = append(msg, t)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

func appendLog(path string, skips []skip) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, s := range skips {
		if err := enc.Encode(s); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// printSkips prints the skipped tests grouped by reason, most first, with
// a few of their names.
func printSkips(w io.Writer, run string, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintf(w, "%s: no test skipped\n", run)
		return
	}
	byReason := map[string][]skip{}
	for _, s := range skips {
		byReason[s.Reason] = append(byReason[s.Reason], s)
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if a, b := len(byReason[reasons[i]]), len(byReason[reasons[j]]); a != b {
			return a > b
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintf(w, "%s: %d tests skipped\n", run, len(skips))
	for _, r := range reasons {
		ss := byReason[r]
		var names []string
		for i, s := range ss {
			if i == 3 {
				names = append(names, fmt.Sprintf("and %d more", len(ss)-3))
				break
			}
			names = append(names, s.Package[strings.LastIndex(s.Package, "/")+1:]+"."+s.Test)
		}
		fmt.Fprintf(w, "  %3d  %s (%s)\n", len(ss), r, strings.Join(names, ", "))
	}
}

func printReport(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	runs := map[string][]skip{}
	var order []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var s skip
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if _, ok := runs[s.Run]; !ok {
			order = append(order, s.Run)
		}
		runs[s.Run] = append(runs[s.Run], s)
	}
	fmt.Fprintln(w, "== summary of skipped tests")
	if len(order) == 0 {
		fmt.Fprintln(w, "no test skipped: every store suite ran")
	}
	for _, run := range order {
		printSkips(w, run, runs[run])
	}
	return nil
}
