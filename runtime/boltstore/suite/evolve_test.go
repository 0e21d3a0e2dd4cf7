package boltstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
)

// The tests of this file are issue 23 on bbolt: data written by one
// version of the evolution model (runtime/storetest/evolve) is read and
// written by another over the same database file.

var bg = context.Background()

// player and score are the values every version of the model holds.
type player struct {
	ID, Name, Email, City string
	Scores                []score
}

type score struct {
	Game   string
	Points int
}

func (p player) String() string {
	return fmt.Sprintf("%+v", p.Scores) + " " + p.ID + "/" + p.Name + "/" + p.Email + "/" + p.City
}

// same compares two players, an empty slice of scores equal to none.
func same(a, b player) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Email == b.Email && a.City == b.City && len(a.Scores) == len(b.Scores) && (len(a.Scores) == 0 || slices.Equal(a.Scores, b.Scores))
}

func conv[S, D any](in []S, f func(S) D) []D {
	if in == nil {
		return nil
	}
	out := make([]D, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// repoOf digs the runtime.Repo out of a generated repository (as the
// conformance suite does), for Migrate, Layout and the schema primitives.
func repoOf[T any](t *testing.T, repo any) runtime.Repo[T, string] {
	t.Helper()
	want := reflect.TypeFor[runtime.Repo[T, string]]()
	var find func(v reflect.Value, depth int) (runtime.Repo[T, string], bool)
	find = func(v reflect.Value, depth int) (runtime.Repo[T, string], bool) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || depth > 3 {
			return runtime.Repo[T, string]{}, false
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Type() == want && f.CanAddr() {
				return reflect.NewAt(want, unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(runtime.Repo[T, string]), true
			}
			if f.Kind() == reflect.Struct {
				if r, ok := find(f, depth+1); ok {
					return r, true
				}
			}
		}
		return runtime.Repo[T, string]{}, false
	}
	r, ok := find(reflect.ValueOf(repo), 0)
	if !ok {
		t.Fatalf("no runtime.Repo in %T", repo)
	}
	return r
}

// version is one version of the model, seen through player values.
type version interface {
	Name() string
	Ensure(ctx context.Context) error
	Create(p player) error
	Get(id string) (player, error)
	Put(p player) error
	// Write is the version's entry-level write of the scores (SetScores,
	// AppendScores or an Update of the root entry), nil if it has none;
	// effect is what it does to the player.
	Write() (write func(id string) error, effect func(*player))
	// ListScores lists the scores through the partition (false if the
	// version has no partition).
	ListScores(id string) ([]score, bool, error)
	Entries(id string) (got, want []string)
	Migrate(dry bool) (runtime.MigrateReport, error)
	// Blocks is the store's MigrateBlocks of the first ten blocks.
	Blocks(dry bool) ([]runtime.BlockMigration, error)
	Repo() any
}

type model[T any] struct {
	name  string
	repo  any
	r     runtime.Repo[T, string]
	to    func(player) *T
	from  func(*T) player
	write func(id string) error
	eff   func(*player)
	list  func(id string) ([]score, error)
}

func (m *model[T]) Name() string                     { return m.name }
func (m *model[T]) Repo() any                        { return m.repo }
func (m *model[T]) Ensure(ctx context.Context) error { return m.r.Ensure(ctx) }
func (m *model[T]) Create(p player) error            { return m.r.Create(bg, m.to(p)) }
func (m *model[T]) Put(p player) error               { return m.r.Put(bg, m.to(p)) }
func (m *model[T]) Get(id string) (player, error) {
	t, err := m.r.Get(bg, id)
	if err != nil {
		return player{}, err
	}
	return m.from(t), nil
}
func (m *model[T]) Write() (func(string) error, func(*player)) { return m.write, m.eff }
func (m *model[T]) ListScores(id string) ([]score, bool, error) {
	if m.list == nil {
		return nil, false, nil
	}
	s, err := m.list(id)
	return s, true, err
}
func (m *model[T]) Entries(id string) (got, want []string) {
	stored, err := m.r.Get(bg, id)
	if err != nil {
		panic(err)
	}
	want = m.r.D.Entries(stored)
	got, err = m.r.S.Layout(bg, id)
	if err != nil {
		panic(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	return got, want
}
func (m *model[T]) Migrate(dry bool) (runtime.MigrateReport, error) {
	return m.r.Migrate(bg, runtime.MigrateOptions{DryRun: dry, Batch: 2})
}

func (m *model[T]) Blocks(dry bool) ([]runtime.BlockMigration, error) {
	res, _, _, err := m.r.S.MigrateBlocks(bg, nil, 10, dry)
	return res, err
}

func page[E any](p runtime.Page[E], err error) ([]E, error) { return p.Items, err }

var newScore = score{"new", 9}

// The versions of the model, by name.
var versions = map[string]func(t *testing.T, db *bbolt.DB) version{
	"etf": func(t *testing.T, db *bbolt.DB) version {
		r := etf.NewPlayerBoltRepository(db)
		return &model[etf.Player]{name: "etf", repo: r, r: repoOf[etf.Player](t, r),
			to: func(p player) *etf.Player {
				return &etf.Player{ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: conv(p.Scores, func(s score) etf.Score { return etf.Score(s) })}
			},
			from: func(q *etf.Player) player {
				return player{q.ID, q.Name, q.Email, q.City, conv(q.Scores, func(s etf.Score) score { return score(s) })}
			},
			write: func(id string) error { return r.SetScores(bg, id, []etf.Score{etf.Score(newScore)}) },
			eff:   func(p *player) { p.Scores = []score{newScore} },
		}
	},
	"eao": func(t *testing.T, db *bbolt.DB) version {
		r := eao.NewPlayerBoltRepository(db)
		return &model[eao.Player]{name: "eao", repo: r, r: repoOf[eao.Player](t, r),
			to: func(p player) *eao.Player {
				return &eao.Player{ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: conv(p.Scores, func(s score) eao.Score { return eao.Score(s) })}
			},
			from: func(q *eao.Player) player {
				return player{q.ID, q.Name, q.Email, q.City, conv(q.Scores, func(s eao.Score) score { return score(s) })}
			},
		}
	},
	"part": func(t *testing.T, db *bbolt.DB) version {
		r := part.NewPlayerBoltRepository(db)
		return &model[part.Player]{name: "part", repo: r, r: repoOf[part.Player](t, r),
			to: func(p player) *part.Player {
				return &part.Player{ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: conv(p.Scores, func(s score) part.Score { return part.Score(s) })}
			},
			from: func(q *part.Player) player {
				return player{q.ID, q.Name, q.Email, q.City, conv(q.Scores, func(s part.Score) score { return score(s) })}
			},
			write: func(id string) error { _, err := r.AppendScores(bg, id, part.Score(newScore)); return err },
			eff:   func(p *player) { p.Scores = append(slices.Clone(p.Scores), newScore) },
			list: func(id string) ([]score, error) {
				s, err := page(r.ListScores(bg, id, runtime.PageRequest{Limit: 100}))
				if err == nil {
					err = reversed(s, func(req runtime.PageRequest) (runtime.Page[part.Score], error) { return r.ListScores(bg, id, req) })
				}
				return conv(s, func(s part.Score) score { return score(s) }), err
			},
		}
	},
	"eaopart": func(t *testing.T, db *bbolt.DB) version {
		r := eaopart.NewPlayerBoltRepository(db)
		return &model[eaopart.Player]{name: "eaopart", repo: r, r: repoOf[eaopart.Player](t, r),
			to: func(p player) *eaopart.Player {
				return &eaopart.Player{ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: conv(p.Scores, func(s score) eaopart.Score { return eaopart.Score(s) })}
			},
			from: func(q *eaopart.Player) player {
				return player{q.ID, q.Name, q.Email, q.City, conv(q.Scores, func(s eaopart.Score) score { return score(s) })}
			},
			write: func(id string) error { _, err := r.AppendScores(bg, id, eaopart.Score(newScore)); return err },
			eff:   func(p *player) { p.Scores = append(slices.Clone(p.Scores), newScore) },
			list: func(id string) ([]score, error) {
				s, err := page(r.ListScores(bg, id, runtime.PageRequest{Limit: 100}))
				if err == nil {
					err = reversed(s, func(req runtime.PageRequest) (runtime.Page[eaopart.Score], error) { return r.ListScores(bg, id, req) })
				}
				return conv(s, func(s eaopart.Score) score { return score(s) }), err
			},
		}
	},
}

// rootWrite is eaopart's other entry-level write: the root entry.
func rootWrite(v version) func(id string) error {
	r := v.Repo().(*eaopart.PlayerBoltRepository)
	return func(id string) error {
		return r.Update(bg, id, eaopart.PlayerUpdate{Root: &eaopart.Player{Name: "Renamed", Email: "r@example.com", City: "Oslo"}})
	}
}

func players() []player {
	return []player{
		{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []score{{"g1", 3}, {"g2", 5}}},
		{ID: "p2", Name: "Ann", Email: "ann@example.com", City: "Rome", Scores: []score{{"g1", 1}}},
		{ID: "p3", Name: "Bob", Email: "bob@example.com", City: "Oslo"},
		{ID: "p4", Name: "Eve", Email: "eve@example.com", City: "Oslo", Scores: []score{{"g3", 7}}},
		{ID: "p5", Name: "Joe", Email: "joe@example.com", City: "Oslo", Scores: []score{{"g4", 2}, {"g5", 4}}},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantGet(t *testing.T, v version, want player) {
	t.Helper()
	got, err := v.Get(want.ID)
	if err != nil {
		t.Fatalf("%s: Get %s: %v", v.Name(), want.ID, err)
	}
	if !same(got, want) {
		t.Fatalf("%s: Get %s = %v, want %v", v.Name(), want.ID, got, want)
	}
}

func wantCurrent(t *testing.T, v version, id string) {
	t.Helper()
	got, want := v.Entries(id)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: block %s holds entries %q, its layout %q", v.Name(), id, got, want)
	}
}

// TestLayoutChanges writes blocks with each version of the model and reads
// and writes them with each other: reads are right, an entry-level write
// converts the block (readable by both versions afterwards), Get then Put
// keeps every value and leaves the block in the new layout, and Migrate
// rewrites the rest (a dry run first, which writes nothing), then finds
// everything current.
func TestLayoutChanges(t *testing.T) {
	names := []string{"etf", "eao", "part", "eaopart"}
	for _, n1 := range names {
		for _, n2 := range names {
			if n1 == n2 {
				continue
			}
			t.Run(n1+"->"+n2, func(t *testing.T) {
				db := boltharness.Open(t)
				v1, v2 := versions[n1](t, db), versions[n2](t, db)
				must(t, v1.Ensure(bg))
				ps := players()
				for _, p := range ps {
					must(t, v1.Create(p))
				}
				oldEntries, _ := v1.Entries("p4")
				must(t, v2.Ensure(bg))

				// Reads.
				for _, p := range ps {
					wantGet(t, v2, p)
					if got, ok, err := v2.ListScores(p.ID); ok && (err != nil || !same(player{Scores: got}, player{Scores: p.Scores})) {
						t.Fatalf("%s: ListScores %s = %v, %v; want %v", n2, p.ID, got, err, p.Scores)
					}
				}
				// An entry-level write on an old block converts it.
				if write, effect := v2.Write(); write != nil {
					must(t, write("p2"))
					effect(&ps[1])
					wantGet(t, v2, ps[1])
					wantGet(t, v1, ps[1])
					wantCurrent(t, v2, "p2")
				}
				if n2 == "eaopart" {
					// The root entry of the old block may hold the scores.
					must(t, rootWrite(v2)("p5"))
					ps[4].Name, ps[4].Email, ps[4].City = "Renamed", "r@example.com", "Oslo"
					wantGet(t, v2, ps[4])
					wantGet(t, v1, ps[4])
					wantCurrent(t, v2, "p5")
				}
				// Get then Put keeps every value.
				got, err := v2.Get("p1")
				must(t, err)
				must(t, v2.Put(got))
				wantGet(t, v1, ps[0])
				wantGet(t, v2, ps[0])
				wantCurrent(t, v2, "p1")

				// Migrate: a dry run writes nothing.
				dry, err := v2.Migrate(true)
				must(t, err)
				if dry.Migrated == 0 || dry.Scanned != 5 || len(dry.Failed) > 0 {
					t.Fatalf("dry run: %+v", dry)
				}
				if got, _ := v1.Entries("p4"); !slices.Equal(got, oldEntries) {
					t.Fatalf("the dry run changed p4 from %q to %q", oldEntries, got)
				}
				rep, err := v2.Migrate(false)
				must(t, err)
				if rep.Migrated != dry.Migrated || rep.Migrated+rep.Current != 5 || len(rep.Failed) > 0 {
					t.Fatalf("Migrate: %+v after a dry run %+v", rep, dry)
				}
				for _, p := range ps {
					wantCurrent(t, v2, p.ID)
					wantGet(t, v2, p)
					wantGet(t, v1, p)
				}
				again, err := v2.Migrate(false)
				must(t, err)
				if again.Migrated != 0 || again.Current != 5 {
					t.Fatalf("a second Migrate: %+v", again)
				}
			})
		}
	}
}

// TestVersionAdded: blocks written before the aggregate had a version are
// at version 0: Get reads 0, Put with 0 replaces them and sets 1, while
// Put with 0 on a block that has a version still conflicts, and Update
// with IfVersion takes the absent version for 0.
func TestVersionAdded(t *testing.T) {
	db := boltharness.Open(t)
	v1 := etf.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(bg))
	must(t, v1.Create(bg, &etf.Player{ID: "p1", Name: "Mary", Scores: []etf.Score{{Game: "g", Points: 1}}}))
	must(t, v1.Create(bg, &etf.Player{ID: "p2", Name: "Ann"}))
	v2 := versioned.NewPlayerBoltRepository(db)
	must(t, v2.EnsureIndexes(bg))
	got, err := v2.Get(bg, "p1")
	must(t, err)
	if got.Version != 0 || got.Name != "Mary" || len(got.Scores) != 1 {
		t.Fatalf("Get of a block without a version entry: %+v", got)
	}
	stale := *got
	got.Name = "Mary Ann"
	must(t, v2.Put(bg, got))
	if got.Version != 1 {
		t.Fatalf("Put at version 0 set version %d, want 1", got.Version)
	}
	if err := v2.Put(bg, &stale); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("Put at version 0 of a block at version 1: %v, want ErrConflict", err)
	}
	again, err := v2.Get(bg, "p1")
	must(t, err)
	if again.Version != 1 || again.Name != "Mary Ann" || len(again.Scores) != 1 {
		t.Fatalf("after Put: %+v", again)
	}
	// Update with IfVersion: the absent version is 0, which no IfVersion
	// names (0 is AnyVersion): IfVersion 1 conflicts, no IfVersion applies.
	name := "Annie"
	if err := v2.Update(bg, "p2", versioned.PlayerUpdate{Name: &name, IfVersion: 1}); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("Update IfVersion 1 of a block without a version: %v, want ErrConflict", err)
	}
	must(t, v2.Update(bg, "p2", versioned.PlayerUpdate{Name: &name}))
	p2, err := v2.Get(bg, "p2")
	must(t, err)
	if p2.Version != 1 || p2.Name != "Annie" {
		t.Fatalf("after Update: %+v", p2)
	}
	// The old version reads them all.
	for _, id := range []string{"p1", "p2"} {
		if _, err := v1.Get(bg, id); err != nil {
			t.Fatal(err)
		}
	}
}

// schemaOf reads the collection's schema record.
func schemaOf[T any](t *testing.T, r runtime.Repo[T, string]) *runtime.SchemaRecord {
	t.Helper()
	raw, err := r.S.LoadSchema(bg)
	must(t, err)
	rec, err := runtime.DecodeSchema(raw)
	must(t, err)
	if rec == nil {
		t.Fatal("no schema record")
	}
	return rec
}

func emails(t *testing.T, r *lookups.PlayerBoltRepository, ids ...string) {
	t.Helper()
	for _, id := range ids {
		got, err := r.GetByEmail(bg, id+"@example.com")
		if err != nil || got.ID != id {
			t.Fatalf("GetByEmail %s@example.com: %v, %v", id, got, err)
		}
	}
}

// TestLookupAdded: lookups added to a collection that holds data are
// built from its blocks by EnsureIndexes (here blocks written before any
// schema record existed), their reads fail with ErrNotReady until then,
// and afterwards they find every old block and guard unique values.
func TestLookupAdded(t *testing.T) {
	db := boltharness.Open(t)
	v1 := etf.NewPlayerBoltRepository(db)
	for i, city := range []string{"Rome", "Rome", "Oslo"} {
		id := fmt.Sprint("p", i)
		must(t, v1.Create(bg, &etf.Player{ID: id, Email: id + "@example.com", City: city}))
	}
	v2 := lookups.NewPlayerBoltRepository(db)
	if _, err := v2.GetByEmail(bg, "p0@example.com"); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("GetByEmail before EnsureIndexes: %v, want ErrNotReady", err)
	}
	if err := v2.Create(bg, &lookups.Player{ID: "x", Email: "p0@example.com"}); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("Create before EnsureIndexes: %v, want ErrNotReady", err)
	}
	var last runtime.BuildProgress
	must(t, v2.EnsureIndexes(runtime.WithBuildProgress(bg, func(p runtime.BuildProgress) { last = p })))
	if !last.Done || last.Blocks != 3 || !slices.Equal(last.Lookups, []string{"email", "city"}) {
		t.Fatalf("last progress %+v", last)
	}
	emails(t, v2, "p0", "p1", "p2")
	rome, err := page(v2.ListByCity(bg, "Rome", runtime.PageRequest{}))
	must(t, err)
	if len(rome) != 2 {
		t.Fatalf("ListByCity Rome: %d players, want 2", len(rome))
	}
	if err := v2.Create(bg, &lookups.Player{ID: "x", Email: "p0@example.com"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create with an old block's email: %v, want ErrDuplicate", err)
	}
	for _, lk := range schemaOf(t, repoOf[lookups.Player](t, v2)).Layout.Lookups {
		if lk.Building || lk.Resume != nil {
			t.Fatalf("lookup %s still building after EnsureIndexes: %+v", lk.Name, lk)
		}
	}
	// A second EnsureIndexes has nothing to build.
	last = runtime.BuildProgress{}
	must(t, v2.EnsureIndexes(runtime.WithBuildProgress(bg, func(p runtime.BuildProgress) { last = p })))
	if last.Blocks != 0 || last.Done {
		t.Fatalf("a second EnsureIndexes built again: %+v", last)
	}
}

// TestLookupBuildResumes: a build cut short (its context cancelled after
// the second page of blocks) leaves the lookups building, their reads
// failing with ErrIndexBuilding, and the next EnsureIndexes goes on after
// the last page recorded instead of starting again.
func TestLookupBuildResumes(t *testing.T) {
	db := boltharness.Open(t)
	v1 := etf.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(bg))
	const n = 200 // the engine's pages are of 64 blocks
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("p%03d", i)
		must(t, v1.Create(bg, &etf.Player{ID: ids[i], Email: ids[i] + "@example.com", City: "Rome"}))
	}
	v2 := lookups.NewPlayerBoltRepository(db)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	pages := 0
	err := v2.EnsureIndexes(runtime.WithBuildProgress(ctx, func(p runtime.BuildProgress) {
		if pages++; pages == 3 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureIndexes cancelled in its build: %v", err)
	}
	rec := schemaOf(t, repoOf[lookups.Player](t, v2))
	for _, lk := range rec.Layout.Lookups {
		if !lk.Building || lk.Resume == nil {
			t.Fatalf("lookup %s after a cancelled build: %+v, want building with a position", lk.Name, lk)
		}
	}
	if _, err := v2.GetByEmail(bg, "p000@example.com"); !errors.Is(err, runtime.ErrIndexBuilding) {
		t.Fatalf("GetByEmail during the build: %v, want ErrIndexBuilding", err)
	}
	if _, err := v2.ListByCity(bg, "Rome", runtime.PageRequest{}); !errors.Is(err, runtime.ErrIndexBuilding) {
		t.Fatalf("ListByCity during the build: %v, want ErrIndexBuilding", err)
	}
	if err := v2.Create(bg, &lookups.Player{ID: "x", Email: "x@example.com"}); !errors.Is(err, runtime.ErrIndexBuilding) {
		t.Fatalf("Create during the build of a unique lookup: %v, want ErrIndexBuilding", err)
	}
	var last runtime.BuildProgress
	must(t, v2.EnsureIndexes(runtime.WithBuildProgress(bg, func(p runtime.BuildProgress) { last = p })))
	// Two pages of 64 were recorded before the cancel: the rest is built.
	if !last.Done || last.Blocks != n-2*64 {
		t.Fatalf("the resumed build: %+v, want %d blocks", last, n-2*64)
	}
	emails(t, v2, ids...)
	all, err := page(v2.ListByCity(bg, "Rome", runtime.PageRequest{Limit: 1000}))
	must(t, err)
	if len(all) != n {
		t.Fatalf("ListByCity: %d players, want %d", len(all), n)
	}
}

// TestLookupBuildDuplicate: a unique lookup added over blocks that already
// hold a value twice fails with ErrDuplicate naming the holders, stays
// building (its reads and unique writes refused), and is built once the
// duplicate is gone.
func TestLookupBuildDuplicate(t *testing.T) {
	db := boltharness.Open(t)
	v1 := etf.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(bg))
	must(t, v1.Create(bg, &etf.Player{ID: "a", Email: "same@example.com"}))
	must(t, v1.Create(bg, &etf.Player{ID: "b", Email: "other@example.com"}))
	must(t, v1.Create(bg, &etf.Player{ID: "c", Email: "same@example.com"}))
	v2 := lookups.NewPlayerBoltRepository(db)
	err := v2.EnsureIndexes(bg)
	if !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("EnsureIndexes over a duplicate: %v, want ErrDuplicate", err)
	}
	if msg := err.Error(); !containsAll(msg, `"same@example.com"`, `"a"`, `"c"`) {
		t.Fatalf("the error does not name the value and both holders: %s", msg)
	}
	if _, err := v2.GetByEmail(bg, "other@example.com"); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("GetByEmail after the failed build: %v, want ErrNotReady", err)
	}
	if err := v2.EnsureIndexes(bg); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("EnsureIndexes again, the duplicate still there: %v, want ErrDuplicate", err)
	}
	// The failed build recorded the old layout again: the old version,
	// still serving, writes on and resolves the duplicate; the build then
	// completes. A write of the new version's looked-up field waits for
	// its EnsureIndexes; its other writes go on.
	if err := v2.SetEmail(bg, "b", "b@example.com"); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("SetEmail of the new version after its failed build: %v, want ErrNotReady", err)
	}
	must(t, v1.SetEmail(bg, "c", "c@example.com"))
	must(t, v2.EnsureIndexes(bg))
	emails(t, v2, "c")
	got, err := v2.GetByEmail(bg, "same@example.com")
	if err != nil || got.ID != "a" {
		t.Fatalf("GetByEmail same@example.com: %v, %v", got, err)
	}
	if err := v2.SetEmail(bg, "b", "same@example.com"); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("SetEmail to a held value: %v, want ErrDuplicate", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestLookupRemoved: EnsureIndexes of a version without the lookups drops
// their buckets; DropLookup of a lookup with no bucket is no error.
func TestLookupRemoved(t *testing.T) {
	db := boltharness.Open(t)
	v1 := lookups.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(bg))
	must(t, v1.Create(bg, &lookups.Player{ID: "p", Email: "p@example.com", City: "Rome"}))
	buckets := func() (out []string) {
		must(t, db.View(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error { out = append(out, string(name)); return nil })
		}))
		return out
	}
	if b := buckets(); !slices.Contains(b, "players.email") || !slices.Contains(b, "players.city") {
		t.Fatalf("buckets %q", b)
	}
	v2 := etf.NewPlayerBoltRepository(db)
	must(t, v2.EnsureIndexes(bg))
	if b := buckets(); slices.Contains(b, "players.email") || slices.Contains(b, "players.city") || !slices.Contains(b, boltstore.SchemaBucket) {
		t.Fatalf("buckets after the lookups were removed: %q", b)
	}
	r := repoOf[etf.Player](t, v2)
	must(t, r.S.DropLookup(bg, runtime.LookupLayout{Name: "email", Fields: []string{"email"}, Unique: true}))
	if len(schemaOf(t, r).Layout.Lookups) != 0 {
		t.Fatalf("the record keeps lookups: %+v", schemaOf(t, r).Layout)
	}
	// Back to the version with lookups: they are built again.
	v3 := lookups.NewPlayerBoltRepository(db)
	must(t, v3.EnsureIndexes(bg))
	emails(t, v3, "p")
}

// TestSaveSchema: the record is one conditional write.
func TestSaveSchema(t *testing.T) {
	db := boltharness.Open(t)
	r := repoOf[etf.Player](t, etf.NewPlayerBoltRepository(db))
	raw, err := r.S.LoadSchema(bg)
	must(t, err)
	if raw != nil {
		t.Fatalf("a new database has a record: %q", raw)
	}
	must(t, r.S.SaveSchema(bg, nil, []byte("one")))
	for _, old := range [][]byte{nil, []byte("two"), []byte("")} {
		if err := r.S.SaveSchema(bg, old, []byte("three")); !errors.Is(err, runtime.ErrConflict) {
			t.Fatalf("SaveSchema over %q with old %q: %v, want ErrConflict", "one", old, err)
		}
	}
	must(t, r.S.SaveSchema(bg, []byte("one"), []byte("two")))
	raw, err = r.S.LoadSchema(bg)
	must(t, err)
	if string(raw) != "two" {
		t.Fatalf("LoadSchema: %q", raw)
	}
}

// TestMigrateHistory: EnsureIndexes of a version whose blocks read
// differently records the old layout; a complete Migrate clears it.
func TestMigrateHistory(t *testing.T) {
	db := boltharness.Open(t)
	v1 := versions["etf"](t, db)
	must(t, v1.Ensure(bg))
	must(t, v1.Create(players()[0]))
	v2 := versions["eaopart"](t, db)
	must(t, v2.Ensure(bg))
	r := repoOf[eaopart.Player](t, v2.Repo())
	rec := schemaOf(t, r)
	if len(rec.History) != 1 || rec.History[0].Strategy != "etf" || rec.Layout.Strategy != "eao" {
		t.Fatalf("record %+v", rec)
	}
	rep, err := v2.Migrate(false)
	must(t, err)
	if rep.Migrated != 1 {
		t.Fatalf("Migrate: %+v", rep)
	}
	if rec := schemaOf(t, r); len(rec.History) != 0 {
		t.Fatalf("history after Migrate: %+v", rec.History)
	}
}

// TestMigrateUnreadable: a block no layout reads is reported, not fatal.
// TestMigrateFrom: what MigrateBlocks says a block was found in, in the
// words of every store (runtime.LayoutDiff).
func TestMigrateFrom(t *testing.T) {
	for _, c := range []struct{ v1, v2, from string }{
		{"etf", "eao", "etf"}, {"eao", "etf", "eao"}, {"etf", "part", "scores whole"}, {"part", "etf", "scores partitioned"},
		{"eao", "eaopart", "scores whole in the root entry"}, {"eaopart", "eao", "scores partitioned"}, {"part", "eaopart", "etf"},
		{"etf", "eaopart", "etf, scores whole"}, {"eaopart", "etf", "eao, scores partitioned"}, {"part", "part", ""},
	} {
		db := boltharness.Open(t)
		v1 := versions[c.v1](t, db)
		must(t, v1.Ensure(bg))
		must(t, v1.Create(players()[0]))
		// A dry run, the migration, and a run over the migrated block.
		for i, dry := range []bool{true, false, false} {
			res, err := versions[c.v2](t, db).Blocks(dry)
			must(t, err)
			if len(res) != 1 || res[0].From != c.from || res[0].Migrated != (c.from != "") || res[0].Err != nil {
				t.Errorf("%s -> %s, run %d: %+v, want from %q", c.v1, c.v2, i, res, c.from)
			}
			if !dry {
				c.from = ""
			}
		}
	}
}

func TestMigrateUnreadable(t *testing.T) {
	db := boltharness.Open(t)
	v1 := versions["etf"](t, db)
	must(t, v1.Ensure(bg))
	for _, p := range players() {
		must(t, v1.Create(p))
	}
	key := runtime.AppendString(boltstore.BlockPrefix(runtime.AppendString(nil, "p2")), "name")
	must(t, db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("players")).Put(key, []byte{0x02, 0xff, 0xff, 0xff, 0x7f, 'x', 0})
	}))
	v2 := versions["eao"](t, db)
	must(t, v2.Ensure(bg))
	rep, err := v2.Migrate(false)
	must(t, err)
	if rep.Migrated != 4 || len(rep.Failed) != 1 || rep.Failed[0].ID != "p2" || !errors.Is(rep.Failed[0].Err, runtime.ErrUnreadable) {
		t.Fatalf("Migrate: %+v", rep)
	}
	if rec := schemaOf(t, repoOf[eao.Player](t, v2.Repo())); len(rec.History) != 1 {
		t.Fatalf("a Migrate with failures cleared the history: %+v", rec)
	}
}

// TestLookupChanged: a lookup whose options changed (recorded as not
// unique, the model has it unique) is not trusted until EnsureIndexes has
// dropped its old index, whose entries are of the other form, and built
// it anew.
func TestLookupChanged(t *testing.T) {
	db := boltharness.Open(t)
	v1 := lookups.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(bg))
	must(t, v1.Create(bg, &lookups.Player{ID: "p", Email: "p@example.com", City: "Rome"}))
	// As a version with a non-unique email lookup would have left it: the
	// record says so, and the bucket holds an entry of the non-unique form
	// (value and block key, empty value).
	r := repoOf[lookups.Player](t, v1)
	raw, err := r.S.LoadSchema(bg)
	must(t, err)
	rec, err := runtime.DecodeSchema(raw)
	must(t, err)
	for i := range rec.Layout.Lookups {
		if rec.Layout.Lookups[i].Name == "email" {
			rec.Layout.Lookups[i].Unique = false
		}
	}
	changed, err := json.Marshal(rec)
	must(t, err)
	must(t, r.S.SaveSchema(bg, raw, changed))
	must(t, db.Update(func(tx *bbolt.Tx) error {
		k := append(runtime.AppendString(nil, "q@example.com"), runtime.AppendString(nil, "q")...)
		return tx.Bucket([]byte("players.email")).Put(k, []byte{})
	}))
	v2 := lookups.NewPlayerBoltRepository(db)
	if _, err := v2.GetByEmail(bg, "p@example.com"); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("GetByEmail of a lookup recorded with other options: %v, want ErrNotReady", err)
	}
	must(t, v2.EnsureIndexes(bg))
	emails(t, v2, "p")
	all, err := page(v2.ListByEmail(bg, "q@example.com", runtime.PageRequest{}))
	if err != nil || len(all) != 0 {
		t.Fatalf("ListByEmail of the old entry's value: %v, %v", all, err)
	}
	must(t, db.View(func(tx *bbolt.Tx) error {
		if n := tx.Bucket([]byte("players.email")).Stats().KeyN; n != 1 {
			t.Errorf("the rebuilt bucket holds %d entries, want 1", n)
		}
		return nil
	}))
}

// reversed checks that the descending pages of list, 2 elements a page,
// are the elements asc in reverse order, whatever layout the block is
// stored in (whole or partitioned).
func reversed[E any](asc []E, list func(runtime.PageRequest) (runtime.Page[E], error)) error {
	var got []E
	req := runtime.PageRequest{Limit: 2, Desc: true}
	for range 1000 {
		p, err := list(req)
		if err != nil {
			return err
		}
		got = append(got, p.Items...)
		if p.Next == "" {
			break
		}
		req.Cursor = p.Next
	}
	want := slices.Clone(asc)
	slices.Reverse(want)
	if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
		return fmt.Errorf("descending pages %v, want %v", got, want)
	}
	return nil
}
