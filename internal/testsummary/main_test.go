package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"p/redisstore"}
{"Action":"run","Package":"p/redisstore","Test":"TestA"}
{"Action":"output","Package":"p/redisstore","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p/redisstore","Test":"TestA","Output":"    a_test.go:12: Redis tests need redis-server on the PATH\n"}
{"Action":"output","Package":"p/redisstore","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p/redisstore","Test":"TestA"}
{"Action":"run","Package":"p/redisstore","Test":"TestB"}
{"Action":"output","Package":"p/redisstore","Test":"TestB","Output":"    b_test.go:3: Redis tests need redis-server on the PATH\n"}
{"Action":"skip","Package":"p/redisstore","Test":"TestB"}
{"Action":"run","Package":"p/redisstore","Test":"TestC"}
{"Action":"output","Package":"p/redisstore","Test":"TestC","Output":"    c_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"p/redisstore","Test":"TestC","Output":"--- FAIL: TestC (0.01s)\n"}
{"Action":"fail","Package":"p/redisstore","Test":"TestC","Elapsed":2.5}
{"Action":"run","Package":"p/redisstore","Test":"TestD"}
{"Action":"output","Package":"p/redisstore","Test":"TestD","Output":"    d_test.go:9: quiet passing output\n"}
{"Action":"pass","Package":"p/redisstore","Test":"TestD","Elapsed":7.25}
{"Action":"output","Package":"p/redisstore","Output":"FAIL\n"}
{"Action":"output","Package":"p/redisstore","Output":"FAIL\tp/redisstore\t0.02s\n"}
{"Action":"fail","Package":"p/redisstore"}
{"Action":"output","Package":"p/bolt","Output":"ok  \tp/bolt\t0.01s\n"}
{"Action":"pass","Package":"p/bolt"}
`

// TestFilter: the plain go test lines and a failing test's output are
// printed, a passing test's output is not, skips are returned with their
// reasons, and a failure is reported.
func TestFilter(t *testing.T) {
	var w bytes.Buffer
	skips, times, failed, err := filter(strings.NewReader(stream), &w, "unit")
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a failing test was not reported")
	}
	got := w.String()
	for _, want := range []string{"c_test.go:9: got 1, want 2", "--- FAIL: TestC", "FAIL\tp/redisstore\t0.02s", "ok  \tp/bolt\t0.01s"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet passing output") || strings.Contains(got, "need redis-server") {
		t.Errorf("output shows what plain go test would not:\n%s", got)
	}
	if len(skips) != 2 || skips[0].Reason != "Redis tests need redis-server on the PATH" || skips[1].Test != "TestB" {
		t.Fatalf("skips = %+v", skips)
	}
	var sum bytes.Buffer
	printSkips(&sum, "unit", skips)
	if want := "unit: 2 tests skipped\n    2  Redis tests need redis-server on the PATH (redisstore.TestA, redisstore.TestB)\n"; sum.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", sum.String(), want)
	}
	var slow bytes.Buffer
	printSlowest(&slow, "unit", times)
	if want := "unit: slowest tests: redisstore.TestD 7.2s, redisstore.TestC 2.5s\n"; slow.String() != want {
		t.Errorf("slowest:\n%q\nwant:\n%q", slow.String(), want)
	}
}

// TestReport: skips logged by several runs are summarised per run, and a
// run without skips says every suite ran.
func TestReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skips")
	var none bytes.Buffer
	if err := printReport(&none, path); err != nil || !strings.Contains(none.String(), "every store suite ran") {
		t.Fatalf("empty report: %q, %v", none.String(), err)
	}
	if err := appendLog(path, []skip{{Run: "race", Package: "p/dynamostore", Test: "TestX", Reason: "DynamoDB tests need node"}}); err != nil {
		t.Fatal(err)
	}
	if err := appendLog(path, []skip{{Run: "integration", Package: "p/faults", Test: "TestY", Reason: "short"}}); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if err := printReport(&w, path); err != nil {
		t.Fatal(err)
	}
	want := "== summary of skipped tests\nrace: 1 tests skipped\n    1  DynamoDB tests need node (dynamostore.TestX)\nintegration: 1 tests skipped\n    1  short (faults.TestY)\n"
	if w.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", w.String(), want)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
