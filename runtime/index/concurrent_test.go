package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// Concurrent writers of a few blocks and unique values: whatever the
// interleaving, no value is held by two blocks, every block is found by
// each of its values without Repair, and Repair finds nothing missing.
// With StaleAfter 0 every claim of a write in flight is stale at once, so
// claims are taken over from under writes, which fencing and the check of
// slow inserts must stop.
func TestConcurrentWrites(t *testing.T) {
	for _, stale := range []time.Duration{30 * time.Second, 0} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			f := newFixture(stale)
			ctx := context.Background()
			ids := []string{"d1", "d2", "d3"}
			cs := []string{"c1", "c2", "c3", ""}
			var wg sync.WaitGroup
			var mu sync.Mutex
			outcomes := map[string]int{}
			errs := make(chan error, 1000)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 1))
					for range 150 {
						id, code := ids[r.IntN(len(ids))], cs[r.IntN(len(cs))]
						tags := []string{tags[r.IntN(len(tags))]}
						var err error
						switch r.IntN(4) {
						case 0:
							err = f.create(ctx, Doc{ID: id, Code: code, Tags: tags})
						case 1:
							err = f.put(ctx, Doc{ID: id, Code: code, Tags: tags})
						case 2:
							err = f.change(ctx, id, func(d *Doc) { d.Code = code; d.Tags = append(d.Tags, tags...) })
						case 3:
							err = f.delete(ctx, id)
						}
						mu.Lock()
						switch {
						case err == nil:
							outcomes["ok"]++
						case errors.Is(err, runtime.ErrDuplicate):
							outcomes["duplicate"]++
						}
						mu.Unlock()
						if err != nil && !errors.Is(err, runtime.ErrDuplicate) && !errors.Is(err, runtime.ErrNotFound) && !errors.Is(err, runtime.ErrConflict) {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("unexpected error: %v", err)
			}
			// The interleavings the test is for happened.
			if outcomes["ok"] < 100 || outcomes["duplicate"] < 20 {
				t.Errorf("outcomes %v: too few writes succeeded or were refused", outcomes)
			}
			t.Logf("outcomes %v", outcomes)
			held := map[string]string{}
			for _, b := range f.s.Blocks() {
				if c := b.Value.Code; c != "" {
					if other, ok := held[c]; ok {
						t.Errorf("%s is held by %s and %s", c, other, b.Value.ID)
					}
					held[c] = b.Value.ID
				}
			}
			if bad := checkReads(ctx, f, true); bad != nil {
				t.Errorf("reads: %v", bad)
			}
			rep, err := f.e.Repair(ctx)
			if err != nil || rep.Added != 0 || len(rep.Conflicts) != 0 {
				t.Errorf("Repair: %v, %v (nothing may be missing)", rep, err)
			}
			if bad := checkIndex(f); bad != nil {
				t.Errorf("after Repair: %v", bad)
			}
		})
	}
}
