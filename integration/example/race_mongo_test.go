package example

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/benchtest"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// skipUnlessReal skips tests whose correctness rests on the server's
// single-document atomicity under concurrency, which FerretDB v1 does not
// provide (see the probes j_ConcurrentVersionedReplace and
// j_CounterUpsertInc/Concurrent in package mongotest).
func skipUnlessReal(t *testing.T) {
	t.Helper()
	if !mongotest.Real() {
		t.Skip("FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run this against a real MongoDB")
	}
}

// TestMongoCounterRace: 16 goroutines add 500 each through Get and Put
// with version retries; no update is lost.
func TestMongoCounterRace(t *testing.T) {
	skipUnlessReal(t)
	repo := bench.NewCounterMongoRepository(mongotest.Start(t))
	must(t, repo.EnsureIndexes(bg))
	benchtest.CounterRace(t, repo, 16, 500)
}

// TestMongoUniqueRace: goroutines race to give one unique name to
// different hotels, by Create and by SetName: exactly one wins each round,
// the others fail with runtime.ErrDuplicate, and the index tables stay
// consistent.
func TestMongoUniqueRace(t *testing.T) {
	t.Run("Concurrent", func(t *testing.T) {
		skipUnlessReal(t)
		uniqueRace(t, mongotest.Start(t))
	})
	// With one connection the server runs one command at a time, so every
	// command is atomic even on FerretDB, and the goroutines' commands
	// interleave at command boundaries: the interleavings the protocol is
	// designed for.
	t.Run("OneConnection", func(t *testing.T) {
		uniqueRace(t, mongotest.StartWithOptions(t, options.Client().SetMaxPoolSize(1)))
	})
}

func uniqueRace(t *testing.T, db *mongo.Database) {
	hotels := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, hotels.EnsureIndexes(bg))
	const workers, rounds = 8, 20
	for w := range workers {
		must(t, hotels.Create(bg, &hotel.Hotel{ID: fmt.Sprintf("s%d", w), Name: fmt.Sprintf("own %d", w), City: "X"}))
	}
	for round := range rounds {
		name := fmt.Sprintf("contested %d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []string
		var other []error
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				id := fmt.Sprintf("s%d", w)
				if w%2 == 0 {
					id = fmt.Sprintf("c%d-%d", round, w)
					err = hotels.Create(bg, &hotel.Hotel{ID: id, Name: name, City: "Y"})
				} else {
					err = hotels.SetName(bg, id, name)
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, id)
				case !errors.Is(err, runtime.ErrDuplicate):
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		if len(won) != 1 || len(other) != 0 {
			t.Fatalf("round %d: winners %v, other errors %v; want exactly one winner", round, won, other)
		}
		h, err := hotels.GetByName(bg, name)
		must(t, err)
		if h.ID != won[0] {
			t.Fatalf("round %d: GetByName = %s, winner %s", round, h.ID, won[0])
		}
	}
	rep, err := hotels.Repair(bg)
	must(t, err)
	if rep.Added != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair after the races: %v (conflicts %q)", rep, rep.Conflicts)
	}
	t.Logf("Repair after the races: %v (stale entries of failed attempts are allowed)", rep)
}

// TestMongoLookupRace runs random writes of a few hotels from several
// goroutines (Create and Delete of the same keys, setters, Update and Put
// changing lookup values, some to taken unique names) and then checks the
// protocol's promise: no aggregate lacks an index entry (Repair adds
// nothing) and no unique value is held twice. Stale entries are allowed.
func TestMongoLookupRace(t *testing.T) {
	t.Run("Concurrent", func(t *testing.T) {
		skipUnlessReal(t)
		lookupRace(t, mongotest.Start(t))
	})
	t.Run("OneConnection", func(t *testing.T) {
		lookupRace(t, mongotest.StartWithOptions(t, options.Client().SetMaxPoolSize(1)))
	})
}

func lookupRace(t *testing.T, db *mongo.Database) {
	hotels := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, hotels.EnsureIndexes(bg))
	const workers, ops = 8, 150
	ids := []string{"r0", "r1", "r2"}
	names := []string{"Alpha", "Beta", "Gamma", "Delta"}
	cities := []string{"Dortmund", "Essen", "Bochum"}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			pick := func(s []string) string { return s[rnd.IntN(len(s))] }
			for range ops {
				id := pick(ids)
				var err error
				switch rnd.IntN(6) {
				case 0:
					err = hotels.Create(bg, &hotel.Hotel{ID: id, Name: pick(names), City: pick(cities), Tags: []string{pick(cities)}})
				case 1:
					err = hotels.Delete(bg, id)
				case 2:
					err = hotels.SetCity(bg, id, pick(cities))
				case 3:
					err = hotels.SetName(bg, id, pick(names))
				case 4:
					err = hotels.Update(bg, id, hotel.HotelUpdate{Name: runtime.Ptr(pick(names)), Tags: &[]string{pick(cities), pick(cities)}})
				case 5:
					err = hotels.Put(bg, &hotel.Hotel{ID: id, Name: pick(names), City: pick(cities)})
				}
				if err != nil && !errors.Is(err, runtime.ErrNotFound) && !errors.Is(err, runtime.ErrDuplicate) && !errors.Is(err, runtime.ErrConflict) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// No entry is missing: every stored hotel has all its index entries,
	// and every unique value is owned by the hotel holding it.
	f := &hotelFixture{db: db}
	for h, err := range hotels.All(bg) {
		must(t, err)
		want := map[string]string{
			"name":       nameKey(h.Name),
			"cityStars":  cityStarsKey(h.City, h.Stars, h.ID),
			"addressZip": mongostore.IndexKey(runtime.AppendString(runtime.AppendString(nil, h.Address.Zip), h.ID)),
		}
		for _, tag := range h.Tags {
			want["tags "+tag] = tagKey(tag, h.ID)
		}
		for what, key := range want {
			table := f.table(strings.Fields(what)[0])
			var e struct {
				ID string `bson:"id"`
			}
			if err := table.FindOne(bg, bson.D{{Key: "_id", Value: key}}).Decode(&e); err != nil || e.ID != h.ID {
				t.Fatalf("hotel %+v: %s entry %s: owner %q, %v", h, what, key, e.ID, err)
			}
		}
	}
	before := dump(t, f.all()...)
	rep, err := hotels.Repair(bg)
	must(t, err)
	if rep.Added > rep.Removed || len(rep.Conflicts) != 0 {
		// Added without Removed would be a missing entry (the checks above
		// would have failed); a fixed entry of a failed attempt counts in both.
		t.Fatalf("Repair after the race: %v (conflicts %q); before Repair:\n%s", rep, rep.Conflicts, before)
	}
	t.Logf("Repair after the race: %v (stale entries of failed attempts are allowed)", rep)
	rep, err = hotels.Repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("second Repair: %v", rep)
	}
}
