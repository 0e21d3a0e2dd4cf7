// Package benchtest holds store-independent tests of the bench package's
// repositories, to run against every store.
package benchtest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/runtime"
)

// maxAttempts bounds the read-modify-write attempts of one increment, so
// that a store that never lets a writer through fails instead of hanging.
const maxAttempts = 100_000

// CounterRace runs goroutines writers that each add one to a counter
// perGoroutine times by read-modify-write: Get, N++, Put, and again from
// Get when Put fails with runtime.ErrConflict. The version entry must make
// every lost update a conflict, so the counter ends at exactly
// goroutines*perGoroutine, and so does its version, plus one for the
// Create. repo must be over an empty database.
func CounterRace(t testing.TB, repo bench.CounterRepository, goroutines, perGoroutine int) {
	t.Helper()
	ctx := t.Context()
	const id = "race"
	if err := repo.Create(ctx, &bench.Counter{ID: id}); err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int64
	increment := func() error {
		for range maxAttempts {
			c, err := repo.Get(ctx, id)
			if err != nil {
				return err
			}
			c.N++
			err = repo.Put(ctx, c)
			if !errors.Is(err, runtime.ErrConflict) {
				return err
			}
			conflicts.Add(1)
		}
		return fmt.Errorf("no increment after %d conflicts in a row", maxAttempts)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perGoroutine {
				if err := increment(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	c, err := repo.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := goroutines * perGoroutine
	if c.N != want || c.Version != int64(want)+1 {
		t.Fatalf("after %d increments: N = %d, version %d; want N = %d, version %d (lost updates)", want, c.N, c.Version, want, want+1)
	}
	t.Logf("%d increments by %d goroutines, %d conflicts retried", want, goroutines, conflicts.Load())
}
