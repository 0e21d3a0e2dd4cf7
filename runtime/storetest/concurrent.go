package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var concurrentTests = []subtest{
	{name: "ConcurrentReadModifyWrite", fn: testConcurrentPuts, concurrent: true},
	{name: "ConcurrentAppends", fn: testConcurrentAppends, concurrent: true},
	{name: "ConcurrentUniqueClaims", fn: testConcurrentClaims, concurrent: true},
}

// workers goroutines write at once, rounds times each (in
// ConcurrentReadModifyWrite: 160 increments, each after its own share of
// the conflicts of 16 writers of one block).
const (
	workers = 16
	rounds  = 10
)

// parallel runs fn(w) for w in [0, workers) at once and returns their
// errors.
func parallel(fn func(w int) error) []error {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[w] = fn(w)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// testConcurrentPuts: read-modify-write with Put and a retry on
// ErrConflict loses no increment.
func testConcurrentPuts(t *testing.T, e *env) {
	e.createMatch(t, "c", 1)
	var mu sync.Mutex
	conflicts := 0
	errs := parallel(func(int) error {
		for range rounds {
			for {
				m, err := e.Matches.Get(bg, "c")
				if err != nil {
					return err
				}
				m.Meta["n"]++
				err = e.Matches.Put(bg, m)
				if errors.Is(err, runtime.ErrConflict) {
					mu.Lock()
					conflicts++
					mu.Unlock()
					continue
				}
				if err != nil {
					return err
				}
				break
			}
		}
		return nil
	})
	for _, err := range errs {
		must(t, err)
	}
	m := e.getMatch(t, "c")
	if m.Meta["n"] != workers*rounds || m.Version != workers*rounds+1 {
		t.Fatalf("after %d increments: n = %d, version %d (want %d, %d)", workers*rounds, m.Meta["n"], m.Version, workers*rounds, workers*rounds+1)
	}
	t.Logf("%d conflicts retried", conflicts)
}

// testConcurrentAppends: concurrent appenders get distinct, dense indexes
// and each element is where its index says.
func testConcurrentAppends(t *testing.T, e *env) {
	e.createMatch(t, "a", 0)
	const per = 10
	idx := make([][]int, workers)
	errs := parallel(func(w int) error {
		for k := range per {
			i, err := e.Matches.AppendRounds(bg, "a", model.Round{Serial: fmt.Sprintf("w%d/%d", w, k)})
			if err != nil {
				return err
			}
			idx[w] = append(idx[w], i)
		}
		return nil
	})
	for _, err := range errs {
		must(t, err)
	}
	m := e.getMatch(t, "a")
	if len(m.Rounds) != workers*per || m.Version != workers*per+1 {
		t.Fatalf("after %d appends: %d rounds, version %d", workers*per, len(m.Rounds), m.Version)
	}
	var all []int
	for w, is := range idx {
		for k, i := range is {
			all = append(all, i)
			if want := fmt.Sprintf("w%d/%d", w, k); i < 0 || i >= len(m.Rounds) || m.Rounds[i].Serial != want {
				t.Fatalf("append %s returned index %d, which holds another round", want, i)
			}
		}
	}
	slices.Sort(all)
	for i, x := range all {
		if x != i {
			t.Fatalf("indexes returned are not 0..%d, distinct: %v", workers*per-1, all)
		}
	}
	e.lookupsClean(t, "concurrent appends")
}

// testConcurrentClaims: of concurrent writes giving one unique value to
// different blocks, exactly one wins.
func testConcurrentClaims(t *testing.T, e *env) {
	errs := parallel(func(w int) error {
		m := newMatch(fmt.Sprint("c", w), 0)
		m.Code = "prize"
		return e.Matches.Create(bg, m)
	})
	winner := claimWinner(t, "Create", errs)
	got, err := e.Matches.GetByCode(bg, "prize")
	must(t, err)
	if got.ID != fmt.Sprint("c", winner) {
		t.Fatalf("GetByCode(prize) = %s, want the winner c%d", got.ID, winner)
	}
	page, err := e.Matches.List(bg, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 {
		t.Fatalf("%d matches stored, want the winner only", len(page.Items))
	}
	for w := range workers {
		if w != winner {
			e.createMatch(t, fmt.Sprint("c", w), 0)
		}
	}
	// Setters and appends race for values the same way.
	errs = parallel(func(w int) error { return e.Matches.SetCode(bg, fmt.Sprint("c", w), "crown") })
	winner = claimWinner(t, "SetCode", errs)
	got, err = e.Matches.GetByCode(bg, "crown")
	must(t, err)
	if got.ID != fmt.Sprint("c", winner) {
		t.Fatalf("GetByCode(crown) = %s, want the winner c%d", got.ID, winner)
	}
	errs = parallel(func(w int) error {
		_, err := e.Matches.AppendRounds(bg, fmt.Sprint("c", w), model.Round{Serial: "golden"})
		return err
	})
	winner = claimWinner(t, "AppendRounds", errs)
	eqStrings(t, "the holder of the golden round", e.bySerial(t, "golden"), fmt.Sprint("c", winner))
	e.lookupsClean(t, "concurrent claims")
}

func claimWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: workers %d and %d both claimed the unique value", what, winner, w)
		case err == nil:
			winner = w
		case !errors.Is(err, runtime.ErrDuplicate):
			t.Fatalf("%s: worker %d failed with %v, want runtime.ErrDuplicate", what, w, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no worker claimed the unique value", what)
	}
	return winner
}
