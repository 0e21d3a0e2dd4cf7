package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
)

// Rolling deploys: two builds of an application, the old one with the
// model etf (no lookups) and the new one with the model lookups (a lookup
// on city, a unique lookup on email), write one collection. The new build
// runs EnsureIndexes while an instance of the old one still serves.
// Afterwards every lookup lists exactly the blocks holding the value, no
// email has two holders, and each write of the old build after the new
// layout was recorded failed with runtime.ErrLayout and wrote nothing
// (README "Changing a model", RELIABILITY.md "Rolling deploys and model
// changes").

// rollingLease is the layout lease of the rolling-deploy subtests, on
// stores without fenced writes (runtime.WithLayoutLease): EnsureIndexes
// waits two of it after recording a new layout.
const rollingLease = 250 * time.Millisecond

var rollingCities = []string{"Rome", "Oslo", "Lima"}

// rollingState reads every player through the new build, by id.
func rollingState(t *testing.T, v2 lookups.PlayerRepository) map[string]lookups.Player {
	t.Helper()
	out := map[string]lookups.Player{}
	for p, err := range v2.All(bg) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		out[p.ID] = *p
	}
	return out
}

// checkRollingLookups checks that the lookups of the new build are exact
// over the blocks as they are: ListByCity of each city lists the blocks
// holding it, and GetByEmail of each block's email finds it, no email
// being held twice. It returns the number of violations.
func checkRollingLookups(t *testing.T, v2 lookups.PlayerRepository) int {
	t.Helper()
	state := rollingState(t, v2)
	bad := 0
	byCity := map[string][]string{}
	holders := map[string][]string{}
	for id, p := range state {
		byCity[p.City] = append(byCity[p.City], id)
		if p.Email != "" {
			holders[p.Email] = append(holders[p.Email], id)
		}
	}
	for _, city := range rollingCities {
		want := byCity[city]
		slices.Sort(want)
		got, err := listCityPages(v2, city, 100)
		if err != nil {
			t.Errorf("ListByCity(%s): %v", city, err)
			bad++
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListByCity(%s) lists %d blocks %q, the blocks holding it are %d: %q", city, len(got), got, len(want), want)
			bad++
		}
	}
	emails := make([]string, 0, len(holders))
	for e := range holders {
		emails = append(emails, e)
	}
	slices.Sort(emails)
	for _, email := range emails {
		ids := holders[email]
		if len(ids) > 1 {
			slices.Sort(ids)
			t.Errorf("email %s (unique) is held by %d blocks: %q", email, len(ids), ids)
			bad++
			continue
		}
		got, err := v2.GetByEmail(bg, email)
		if err != nil || got.ID != ids[0] {
			t.Errorf("GetByEmail(%s) = %v, %v; block %s holds it", email, got, err, ids[0])
			bad++
		}
	}
	return bad
}

// rollingOldBuild returns the old build's repositories (model etf) over
// e's database, its layout recorded, holding players p0 to p5 of distinct
// emails in two cities.
func rollingOldBuild(t *testing.T, e *env, opts ...runtime.Option) etf.PlayerRepository {
	t.Helper()
	v1 := etfPlayers.On(t, e.db, opts...)
	must(t, v1.EnsureIndexes(bg))
	for i := range 6 {
		must(t, v1.Create(bg, &etf.Player{ID: fmt.Sprintf("p%d", i), Email: fmt.Sprintf("p%d@example.com", i), City: rollingCities[i%2]}))
	}
	return v1
}

// testEvoRollingDeploy: the old build writes after the new build's
// EnsureIndexes, in turn: each of its writes fails with ErrLayout and
// changes nothing; the new build then takes the email the old one tried
// to give, and every lookup is exact.
func testEvoRollingDeploy(t *testing.T, e *env) {
	ctx := bg
	lease := runtime.WithLayoutLease(rollingLease)
	v1 := rollingOldBuild(t, e, lease)
	must(t, v1.SetName(ctx, "p0", "Old")) // the old build's check of the record is fresh
	v2 := lookupPlayers.On(t, e.db, lease)
	must(t, v2.EnsureIndexes(ctx))
	before := rollingState(t, v2)

	oslo := "Oslo"
	writes := []struct {
		name string
		do   func() error
	}{
		{"Create", func() error {
			return v1.Create(ctx, &etf.Player{ID: "n1", Email: "fresh@example.com", City: "Oslo"})
		}},
		{"Put", func() error { return v1.Put(ctx, &etf.Player{ID: "p1", Email: "p1@example.com", City: "Oslo"}) }},
		{"SetCity", func() error { return v1.SetCity(ctx, "p2", "Oslo") }},
		{"SetEmail", func() error { return v1.SetEmail(ctx, "p3", "fresh@example.com") }},
		{"Update", func() error { return v1.Update(ctx, "p4", etf.PlayerUpdate{City: &oslo}) }},
		{"Delete", func() error { return v1.Delete(ctx, "p5") }},
		{"CreateMany", func() error {
			return v1.CreateMany(ctx, []*etf.Player{{ID: "n2", Email: "fresh@example.com", City: "Oslo"}})
		}},
		{"PutMany", func() error {
			return v1.PutMany(ctx, []*etf.Player{{ID: "p0", Email: "fresh@example.com", City: "Oslo"}})
		}},
		{"DeleteMany", func() error { return v1.DeleteMany(ctx, []string{"p0"}) }},
	}
	for _, w := range writes {
		err := w.do()
		if !errors.Is(err, runtime.ErrLayout) {
			t.Errorf("the old build's %s after the new layout was recorded: %v, want ErrLayout", w.name, err)
		}
	}
	if after := rollingState(t, v2); !mapsEqual(before, after) {
		t.Errorf("the old build's refused writes changed the collection:\nbefore %v\nafter  %v", before, after)
	}
	must(t, v2.Create(ctx, &lookups.Player{ID: "n9", Email: "fresh@example.com", City: "Lima"}))
	checkRollingLookups(t, v2)
	// The new build's writes go on: its layout is the recorded one.
	must(t, v2.SetCity(ctx, "p2", "Lima"))
	checkRollingLookups(t, v2)
}

// testEvoRollingDeployFailed: the new build's EnsureIndexes fails (the
// blocks hold an email twice, which its unique lookup refuses): the old
// build, still serving, writes on (it resolves the duplicate and moves
// blocks between cities the failed build had indexed), the new build's
// next EnsureIndexes completes the lookups, and they are exact.
func testEvoRollingDeployFailed(t *testing.T, e *env) {
	ctx := bg
	lease := runtime.WithLayoutLease(rollingLease)
	v1 := rollingOldBuild(t, e, lease)
	must(t, v1.SetEmail(ctx, "p5", "p4@example.com"))
	v2 := lookupPlayers.On(t, e.db, lease)
	if err := v2.EnsureIndexes(ctx); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("EnsureIndexes of the new build over an email held twice: %v, want ErrDuplicate", err)
	}
	// The old build writes on, whenever it checks the record.
	oslo := "Oslo"
	must(t, v1.SetCity(ctx, "p0", "Oslo"))
	must(t, v1.Update(ctx, "p1", etf.PlayerUpdate{City: &oslo}))
	must(t, v1.Create(ctx, &etf.Player{ID: "n1", Email: "n1@example.com", City: "Rome"}))
	must(t, v1.Delete(ctx, "p2"))
	must(t, v1.SetEmail(ctx, "p5", "p5@example.com"))
	time.Sleep(2 * rollingLease) // every lease the old build held is over
	must(t, v1.SetCity(ctx, "p3", "Lima"))
	must(t, v2.EnsureIndexes(ctx))
	if bad := checkRollingLookups(t, v2); bad > 0 {
		t.Fatalf("%d lookup violations after the new build's second EnsureIndexes", bad)
	}
	if got := rollingState(t, v2); len(got) != 6 || got["p0"].City != "Oslo" || got["p3"].City != "Lima" || got["p5"].Email != "p5@example.com" {
		t.Fatalf("the blocks after the old build's writes: %v", got)
	}
}

func mapsEqual(a, b map[string]lookups.Player) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}

// testEvoRollingDeployConcurrent: two writers of the old build write
// while the new build runs EnsureIndexes and then writes the emails the
// old writers give next. Every write of the old build that began after
// EnsureIndexes returned fails with ErrLayout; each player is in the state
// of the old build's acknowledged writes (a refused write wrote nothing);
// every lookup is exact and no email has two holders. Bounded: each writer
// makes at most 400 writes.
func testEvoRollingDeployConcurrent(t *testing.T, e *env) {
	ctx := bg
	lease := runtime.WithLayoutLease(rollingLease)
	v1 := etfPlayers.On(t, e.db, lease)
	must(t, v1.EnsureIndexes(ctx))
	v2 := lookupPlayers.On(t, e.db, lease)

	const writers, minOps, afterOps, maxOps, newEmails = 2, 40, 15, 400, 400
	var switched atomic.Bool
	switchedCh := make(chan struct{}) // closed once EnsureIndexes returned
	var started atomic.Int64          // writes begun by the old build
	type outcome struct{ after, refused, acked int }
	outcomes := make([]outcome, writers)
	models := make([]map[string]etf.Player, writers)
	var wg sync.WaitGroup
	for w := range writers {
		models[w] = map[string]etf.Player{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			model := models[w]
			var alive []string
			o := &outcomes[w]
			for i := 0; i < maxOps && (i < minOps || o.after < afterOps); i++ {
				if i >= minOps {
					<-switchedCh // the rest after the new build's EnsureIndexes
				}
				after := switched.Load()
				started.Add(1)
				id := ""
				if len(alive) > 0 {
					id = alive[i%len(alive)]
				}
				city := rollingCities[i%3]
				var err error
				var apply func()
				switch op := i % 6; {
				case op == 0 || op == 3 || id == "":
					p := etf.Player{ID: fmt.Sprintf("w%d-%03d", w, i), Email: fmt.Sprintf("s%d-%03d@example.com", w, i), City: city}
					err = v1.Create(ctx, &p)
					apply = func() { model[p.ID] = p; alive = append(alive, p.ID) }
				case op == 1:
					err = v1.SetCity(ctx, id, city)
					apply = func() { p := model[id]; p.City = city; model[id] = p }
				case op == 2:
					err = v1.Update(ctx, id, etf.PlayerUpdate{City: &city})
					apply = func() { p := model[id]; p.City = city; model[id] = p }
				case op == 4:
					p := model[id]
					p.City = city
					err = v1.Put(ctx, &p)
					apply = func() { model[id] = p }
				default:
					err = v1.Delete(ctx, id)
					apply = func() {
						delete(model, id)
						alive = slices.DeleteFunc(alive, func(s string) bool { return s == id })
					}
				}
				if after {
					o.after++
				}
				switch {
				case err == nil:
					o.acked++
					apply()
					if after {
						t.Errorf("writer %d: write %d of the old build, begun after the new build's EnsureIndexes returned, succeeded", w, i)
					}
				case errors.Is(err, runtime.ErrLayout):
					o.refused++
					if !after {
						<-switchedCh // refused already: go on once the new build serves
					}
				default:
					t.Errorf("writer %d: write %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	for started.Load() < minOps/2 {
		time.Sleep(time.Millisecond)
	}
	ensureErr := v2.EnsureIndexes(ctx)
	switched.Store(true)
	close(switchedCh)
	// The new build gives the emails the old writers give next.
	var taken, refused int
	if ensureErr == nil {
		for w := range writers {
			for i := 0; i < newEmails; i += 3 {
				err := v2.Create(ctx, &lookups.Player{ID: fmt.Sprintf("v2-%d-%03d", w, i), Email: fmt.Sprintf("s%d-%03d@example.com", w, i), City: "Lima"})
				switch {
				case err == nil:
					taken++
				case errors.Is(err, runtime.ErrDuplicate):
					refused++
				default:
					t.Errorf("the new build's Create: %v", err)
				}
			}
		}
	}
	wg.Wait()
	must(t, ensureErr)
	state := rollingState(t, v2)
	lost := 0
	for w := range writers {
		o := outcomes[w]
		t.Logf("old writer %d: %d writes acknowledged, %d refused with ErrLayout, %d begun after EnsureIndexes", w, o.acked, o.refused, o.after)
		if o.after == 0 || o.refused == 0 {
			t.Errorf("old writer %d: %d writes after EnsureIndexes, %d refused: the test did not exercise the fence", w, o.after, o.refused)
		}
		for id, want := range models[w] {
			got, ok := state[id]
			if !ok || got.City != want.City || got.Email != want.Email {
				t.Errorf("player %s: stored %+v (found %v), the old build's acknowledged writes leave %+v", id, got, ok, want)
				lost++
			}
		}
		for id := range state {
			if _, ok := models[w][id]; !ok && len(id) > 2 && id[:2] == fmt.Sprintf("w%d", w) {
				t.Errorf("player %s is stored, but no acknowledged write of the old build leaves it", id)
				lost++
			}
		}
	}
	bad := checkRollingLookups(t, v2)
	t.Logf("the new build took %d emails, %d were refused as taken; %d wrong players, %d lookup violations", taken, refused, lost, bad)
}

// listCityPages lists the ids ListByCity finds, following every page of
// limit (at most 100), failing on an aggregate not of city.
func listCityPages(r lookups.PlayerRepository, city string, limit int) ([]string, error) {
	var ids []string
	req := runtime.PageRequest{Limit: limit}
	for range 100 {
		page, err := r.ListByCity(bg, city, req)
		if err != nil {
			return ids, err
		}
		for _, p := range page.Items {
			if p.City != city {
				return ids, fmt.Errorf("ListByCity(%q) found %+v", city, p)
			}
			ids = append(ids, p.ID)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	slices.Sort(ids)
	return ids, nil
}
