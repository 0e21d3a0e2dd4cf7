package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
)

// The size of the migration race: raceBlocks blocks of raceScores
// elements each (larger than any condition expression can compare
// element by element: DynamoDB's take 4 KB), each written raceWrites
// times by a writer of its own.
const (
	raceBlocks = 8
	raceScores = 400
	raceWrites = 40
)

// testEvoMigrateRace: Migrate (of the new version, part) runs over and
// over while writers of the old version (eaopart) change elements deep in
// large partitions of their own blocks, by a setter and by a whole Put,
// each writer ending with a Put of the new version. Under the layout
// fence the old version's writes are refused with runtime.ErrLayout
// (nothing written) once the new layout is recorded; every write
// acknowledged must be there afterwards: the migrator rewrites a block
// only while it is as the migrator read it, whatever its size.
func testEvoMigrateRace(t *testing.T, e *env) {
	ctx := bg
	db := e.h.Open(t)
	r1, r2 := eaopartPlayers.On(t, db), partPlayers.On(t, db)
	must(t, r1.EnsureIndexes(ctx))
	want := make([]player, raceBlocks)
	for b := range want {
		p := player{ID: fmt.Sprintf("r%d", b), Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: make([]score, raceScores)}
		for i := range p.Scores {
			p.Scores[i] = score{Game: fmt.Sprintf("game-%03d", i), Points: i}
		}
		must(t, r1.Create(ctx, asPlayer[eaopart.Player](p)))
		want[b] = p
	}
	v2 := wrap[part.Player](t, "part", r2)
	must(t, v2.ensure(ctx))
	// What Migrate has to rewrite: every block, unless the store keeps
	// both layouts alike (MongoDB's documents are the same under EAO
	// and ETF).
	plan, err := v2.migrate(ctx, runtime.MigrateOptions{DryRun: true})
	must(t, err)

	// A write of version old (eaopart) or new (part): a setter of one
	// element, or a Put of the whole block.
	type write struct {
		name string
		do   func(ctx context.Context, p player, i int) error
	}
	oldSet := write{"eaopart SetScoresAt", func(ctx context.Context, p player, i int) error {
		return r1.SetScoresAt(ctx, p.ID, i, eaopart.Score{Game: p.Scores[i].Game, Points: p.Scores[i].Points})
	}}
	newSet := write{"part SetScoresAt", func(ctx context.Context, p player, i int) error {
		return r2.SetScoresAt(ctx, p.ID, i, part.Score{Game: p.Scores[i].Game, Points: p.Scores[i].Points})
	}}
	oldPut := write{"eaopart Put", func(ctx context.Context, p player, _ int) error { return r1.Put(ctx, asPlayer[eaopart.Player](p)) }}
	newPut := write{"part Put", func(ctx context.Context, p player, _ int) error { return r2.Put(ctx, asPlayer[part.Player](p)) }}
	// Writes of the old version, which the migrator must not undo: the
	// layout fence refuses them (ErrLayout, nothing written) once the new
	// layout is recorded, but for a write checked within the layout lease
	// on stores without fenced writes, which DynamoDB's write token keeps
	// from being overwritten. A writer's last write is a Put of the new
	// version (and a setter of the new version would convert the block
	// on Redis): the blocks are converted by Migrate while the writers
	// run.
	writes := []write{oldSet, oldSet, oldPut}
	_ = newSet // (refused on a block in the old layout, or converting it: left out)
	var (
		mu                 sync.Mutex
		acked, refused     int
		failures           []string
		migrated, migrates int
	)
	var writers sync.WaitGroup
	done := make(chan struct{})
	// Migrate starts once a writer is under way; the writers' last
	// writes wait for its first run to end.
	started := make(chan struct{}, raceBlocks)
	firstRun := make(chan struct{})
	for b := range want {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for n := range raceWrites {
				w := writes[n%len(writes)]
				if n == raceWrites-1 {
					<-firstRun // its block converted by Migrate, or being
					w = newPut
				}
				// An element past the first half, a value no write
				// gave before.
				i := raceScores/2 + (n*37+b*11)%(raceScores/2)
				next := want[b]
				next.Scores = append([]score(nil), next.Scores...)
				next.Scores[i].Points = 10000 + 100*n + b
				err := w.do(ctx, next, i)
				mu.Lock()
				switch {
				case err == nil:
					acked++
					want[b] = next
				case errors.Is(err, runtime.ErrLayout):
					refused++ // nothing written
				default:
					failures = append(failures, fmt.Sprintf("%s of %s[%d]: %v", w.name, next.ID, i, err))
				}
				mu.Unlock()
				if n == 0 {
					started <- struct{}{}
				}
				if err != nil && !errors.Is(err, runtime.ErrLayout) {
					return // its block is no longer known
				}
			}
		}()
	}
	go func() { writers.Wait(); close(done) }()
	<-started
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		rep, err := v2.migrate(ctx, runtime.MigrateOptions{})
		migrates++
		if err != nil {
			t.Fatalf("Migrate while the writers run: %v", err)
		}
		for _, f := range rep.Failed {
			t.Errorf("Migrate while the writers run failed on a block: %v", f)
		}
		migrated += rep.Migrated
		if migrates == 1 {
			close(firstRun)
		}
	}
	for _, f := range failures {
		t.Errorf("write during Migrate: %s", f)
	}
	if len(failures) > 0 {
		return
	}
	// Every block of the new layout, then every acknowledged write there.
	rep, err := v2.migrate(ctx, runtime.MigrateOptions{})
	must(t, err)
	if len(rep.Failed) != 0 {
		t.Errorf("the last Migrate failed on %d blocks: %v", len(rep.Failed), rep.Failed)
	}
	lost := 0
	for _, w := range want {
		got, err := v2.get(ctx, w.ID)
		if err != nil {
			t.Errorf("Get %s after Migrate: %v", w.ID, err)
			continue
		}
		if len(got.Scores) != len(w.Scores) {
			t.Errorf("%s after Migrate holds %d scores, want %d", w.ID, len(got.Scores), len(w.Scores))
			continue
		}
		for i := range w.Scores {
			if got.Scores[i] != w.Scores[i] {
				lost++
				t.Errorf("%s.scores[%d] = %v after Migrate, want %v (an acknowledged write lost)", w.ID, i, got.Scores[i], w.Scores[i])
			}
		}
		got.Scores, w.Scores = nil, nil
		if !got.same(w) {
			t.Errorf("%s after Migrate = %v, want %v", w.ID, got, w)
		}
	}
	t.Logf("%d writes acknowledged, %d refused (ErrLayout), %d Migrate runs rewrote %d blocks meanwhile; %d acknowledged writes lost", acked, refused, migrates, migrated, lost)
	if migrated == 0 && plan.Migrated > 0 {
		t.Errorf("Migrate rewrote no block while the writers ran (%d to rewrite)", plan.Migrated)
	}
}
