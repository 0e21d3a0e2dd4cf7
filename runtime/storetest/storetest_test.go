package storetest

import (
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime/storetest/model"
)

func TestSubtestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Subtests() {
		if name == "" || seen[name] {
			t.Fatalf("subtest name %q empty or repeated", name)
		}
		seen[name] = true
	}
}

// TestNorm: what the comparisons forgive (zone, precision, nil and empty)
// and what they do not.
func TestNorm(t *testing.T) {
	e := &env{}
	a := &model.Match{ID: "a", Start: t0, Tags: []string{}, Meta: map[string]int{}}
	b := &model.Match{ID: "a", Start: t0.UTC().Truncate(time.Millisecond)}
	if !e.same(a, b) {
		t.Fatalf("equal matches differ: %s %s", show(e.norm(a)), show(e.norm(b)))
	}
	b.Start = b.Start.Add(time.Millisecond)
	if e.same(a, b) {
		t.Fatal("matches a millisecond apart are the same")
	}
	c := clone(a)
	c.Rounds = []model.Round{{Serial: "x"}}
	if e.same(a, c) || a.Rounds != nil {
		t.Fatal("clone shares or loses state")
	}
}
