package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/game"
)

// TestDemoErrors runs the demo on bbolt and checks its "errors" section:
// every line shows the error and, in parentheses, that errors.Is matched
// the kind it names.
func TestDemoErrors(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "game.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = wr
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(rd)
		done <- string(b)
	}()
	runErr := run(context.Background(), repos{game.NewGameBoltRepository(db), game.NewPlayerBoltRepository(db), game.NewTournamentBoltRepository(db)})
	os.Stdout = stdout
	wr.Close()
	out := <-done
	if runErr != nil {
		t.Fatalf("demo: %v\n%s", runErr, out)
	}
	var errLines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "errors":
			in = true
		case line == "done":
			in = false
		case in:
			errLines = append(errLines, line)
		}
	}
	if len(errLines) < 3 {
		t.Fatalf("the errors section has %d lines:\n%s", len(errLines), out)
	}
	for _, line := range errLines {
		if !strings.HasSuffix(line, ": true)") {
			t.Errorf("error line without a matched kind: %q", line)
		}
	}
}
