package example

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/integration/mongotest"
)

// TestDemoOnMongo runs the README's demo with -mongo against the test
// server: the same program that runs on bbolt by default.
func TestDemoOnMongo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo program")
	}
	uri := mongotest.URI()
	if uri == "" {
		t.Fatal("no server: TestMain must call mongotest.Main")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbName := fmt.Sprintf("demo_%d", time.Now().UnixNano())
	client := mongotest.Start(t).Client()
	t.Cleanup(func() { client.Database(dbName).Drop(context.Background()) })
	out, err := exec.CommandContext(ctx, "go", "run", "github.com/noamgen/noamgen/example/game/demo", "-mongo", uri, "-mongo-db", dbName).CombinedOutput()
	if err != nil {
		t.Fatalf("demo on MongoDB: %v\n%s", err, out)
	}
	for _, want := range []string{
		"store: MongoDB",
		"AppendRounds -> rounds[2]",
		"Get 2345: mary vs ann, 3 rounds, version 6",
		"Put with stale version 6: noam: Game 2345: Put: version conflict (conflict: true)",
		"All tournaments in key order: [2 10 33]",
		"page 2: [rick]",
		"done",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
