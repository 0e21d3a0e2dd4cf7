package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
)

// The tests of schema and layout evolution on Redis (evolve.go). Data is
// written by one version of a model and read and written by another over
// the same database, as after a regenerate and a redeploy. The versions
// are descriptors of one Go type, player, written as noamgen writes them
// (the model packages of runtime/storetest/evolve are the same versions,
// generated: TestEvolutionGenerated), so that every pair can be tried and
// Migrate called on the runtime's repository.

type player struct {
	ID      string
	Name    string
	Email   string
	City    string
	Scores  []score
	Version int64
}

type score struct {
	Game   string
	Points int
}

type rootWhole struct {
	Name   string  `bson:"name"`
	Email  string  `bson:"email"`
	City   string  `bson:"city"`
	Scores []score `bson:"scores"`
}

type rootPart struct {
	Name  string `bson:"name"`
	Email string `bson:"email"`
	City  string `bson:"city"`
}

// version is one version of the player model.
type version struct {
	name    string
	eao     bool
	part    bool // scores partitioned
	version bool // a version entry
	lookups bool // email (unique) and city
}

var (
	vETF     = version{name: "etf"}
	vEAO     = version{name: "eao", eao: true}
	vPart    = version{name: "part", part: true}
	vEAOPart = version{name: "eaopart", eao: true, part: true}
	layouts  = []version{vETF, vEAO, vPart, vEAOPart}
)

func (v version) with(lookups, ver bool) version {
	v.lookups, v.version = lookups, ver
	return v
}

// playerModel is a version's descriptor and accessors.
type playerModel struct {
	d                  *runtime.Desc[player, string]
	root, name, scores *runtime.Field[player]
	email              *runtime.Lookup[player]
}

func (v version) model() *playerModel {
	m := &playerModel{}
	name := runtime.NewField("name", "Name", func(p *player) *string { return &p.Name })
	email := runtime.NewField("email", "Email", func(p *player) *string { return &p.Email })
	city := runtime.NewField("city", "City", func(p *player) *string { return &p.City })
	var scores *runtime.Field[player]
	if v.part {
		scores = runtime.NewPartition("scores", "Scores", func(p *player) *[]score { return &p.Scores })
	} else {
		scores = runtime.NewField("scores", "Scores", func(p *player) *[]score { return &p.Scores })
	}
	d := &runtime.Desc[player, string]{
		Aggregate: "Player", Collection: "players", Keys: runtime.StringKeys[string](),
		ID:     func(p *player) *string { return &p.ID },
		Fields: []*runtime.Field[player]{name, email, city, scores},
	}
	if v.eao {
		d.EAO = true
		if v.part {
			d.Root = runtime.NewRoot([]string{"name", "email", "city"}, func(p *player) rootPart {
				return rootPart{Name: p.Name, Email: p.Email, City: p.City}
			}, func(p *player, r rootPart) { p.Name, p.Email, p.City = r.Name, r.Email, r.City })
		} else {
			d.Root = runtime.NewRoot([]string{"name", "email", "city", "scores"}, func(p *player) rootWhole {
				return rootWhole{Name: p.Name, Email: p.Email, City: p.City, Scores: p.Scores}
			}, func(p *player, r rootWhole) { p.Name, p.Email, p.City, p.Scores = r.Name, r.Email, r.City, r.Scores })
		}
	}
	if v.version {
		d.Version = runtime.NewVersion("version", "Version", func(p *player) *int64 { return &p.Version })
	}
	if v.lookups {
		m.email = &runtime.Lookup[player]{Name: "email", Unique: true, Parts: 1, Fields: []string{"email"},
			Values: func(p *player) [][]byte { return [][]byte{runtime.AppendString(nil, p.Email)} }}
		d.Lookups = []*runtime.Lookup[player]{m.email, {Name: "city", Parts: 1, Fields: []string{"city"},
			Values: func(p *player) [][]byte { return [][]byte{runtime.AppendString(nil, p.City)} }}}
	}
	m.d, m.root, m.name, m.scores = d.Init(), d.Root, name, scores
	return m
}

// shortLease is the layout lease of these tests' repositories (on a
// cluster EnsureIndexes waits out two of it after recording another
// layout; the default is 2 s).
var shortLease = runtime.WithLayoutLease(50 * time.Millisecond)

// repo opens version v over c, with a short layout lease.
func (v version) repo(c redis.UniversalClient) (runtime.Repo[player, string], *playerModel) {
	m := v.model()
	return runtime.NewRepo(m.d, redisstore.Open(c, m.d), shortLease), m
}

// ensure opens version v over c and runs its EnsureIndexes.
func (v version) ensure(t *testing.T, c redis.UniversalClient) (runtime.Repo[player, string], *playerModel) {
	t.Helper()
	r, m := v.repo(c)
	must(t, r.Ensure(bg))
	return r, m
}

func newPlayer(id string) *player {
	return &player{ID: id, Name: "Mary " + id, Email: id + "@example.com", City: "Rome",
		Scores: []score{{Game: "g1", Points: 3}, {Game: "g2", Points: 5}}}
}

// same reports whether a and b hold the same values (the version aside;
// no scores and an empty slice of them are the same).
func same(a, b *player) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Email == b.Email && a.City == b.City && slices.Equal(a.Scores, b.Scores)
}

// entries lists the fields of block id's hash but the hidden ones, sorted.
func entries(t *testing.T, c redis.UniversalClient, id string) []string {
	t.Helper()
	keys, err := c.HKeys(bg, "players:{"+id+"}").Result()
	must(t, err)
	keys = slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, "_") })
	slices.Sort(keys)
	return keys
}

// wantLayout fails t unless block p is laid out exactly as m says.
func wantLayout(t *testing.T, c redis.UniversalClient, m *playerModel, p *player, what string) {
	t.Helper()
	want := m.d.Entries(p)
	slices.Sort(want)
	if got := entries(t, c, p.ID); !slices.Equal(got, want) {
		t.Fatalf("%s: block %s holds the entries %q, want %q", what, p.ID, got, want)
	}
}

func wantPlayer(t *testing.T, r runtime.Repo[player, string], want *player, what string) {
	t.Helper()
	got, err := r.Get(bg, want.ID)
	if err != nil {
		t.Fatalf("%s: Get %s: %v", what, want.ID, err)
	}
	if !same(got, want) {
		t.Fatalf("%s: Get %s = %+v, want %+v", what, want.ID, got, want)
	}
}

// pairs calls fn with every ordered pair of different layouts, without
// lookups and with them (in both versions: the email, unique, and the
// city), and checks the lookups with Repair after each.
func pairs(t *testing.T, c redis.UniversalClient, fn func(t *testing.T, v1, v2 version)) {
	for _, l := range []bool{false, true} {
		for _, v1 := range layouts {
			for _, v2 := range layouts {
				if v1 == v2 {
					continue
				}
				name := v1.name + "-" + v2.name
				if l {
					name += "-lookups"
				}
				t.Run(name, func(t *testing.T) {
					flush(t, c)
					v1, v2 := v1.with(l, false), v2.with(l, false)
					fn(t, v1, v2)
					if l {
						r, _ := v2.repo(c)
						clean(t, v1.name+" -> "+v2.name, r.Repair)
					}
				})
			}
		}
	}
}

// TestEvolutionReads: a block written in any layout reads right in every
// other (Get, GetMany, a listing), a Get then Put keeps every value and
// leaves the block exactly in the new layout, and the old version reads
// the rewritten block right too.
func TestEvolutionReads(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		pairs(t, c, func(t *testing.T, v1, v2 version) {
			r1, _ := v1.ensure(t, c)
			want := newPlayer(v1.name + "-" + v2.name)
			must(t, r1.Create(bg, want))
			r2, m2 := v2.ensure(t, c)
			wantPlayer(t, r2, want, "the new version")
			many, err := r2.GetMany(bg, []string{want.ID})
			must(t, err)
			if got := many[want.ID]; got == nil || !same(got, want) {
				t.Fatalf("GetMany: %+v", got)
			}
			found := false
			for got, err := range r2.All(bg) {
				must(t, err)
				if got.ID == want.ID {
					found = true
					if !same(got, want) {
						t.Fatalf("All: %+v, want %+v", got, want)
					}
				}
			}
			if !found {
				t.Fatal("All did not list the block")
			}
			got, err := r2.Get(bg, want.ID)
			must(t, err)
			must(t, r2.Put(bg, got))
			wantLayout(t, c, m2, want, "after a Get then Put")
			wantPlayer(t, r2, want, "after a Get then Put")
			wantPlayer(t, r1, want, "the old version, after the new one's Put")
		})
	})
}

// TestEvolutionEntryWrites: an entry-level write of a block written in
// another layout (the SetScores on bbolt, which left a block no
// version read) is made as a whole-block write in the writer's layout:
// afterwards the block holds exactly the writer's entries, with the
// change and every other value, and the old version reads it right too.
func TestEvolutionEntryWrites(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		pairs(t, c, func(t *testing.T, v1, v2 version) {
			r1, _ := v1.ensure(t, c)
			// The old version writes its blocks before the new version's
			// EnsureIndexes records the new layout: after it, the old
			// version's writes get ErrLayout (the layout fence).
			olds := make([]*player, 4)
			for i := range olds {
				olds[i] = newPlayer(fmt.Sprintf("%s-%s-%d", v1.name, v2.name, i))
				must(t, r1.Create(bg, olds[i]))
			}
			r2, m2 := v2.ensure(t, c)
			type write struct {
				name  string
				run   func(id string) error
				apply func(p *player)
			}
			writes := []write{{
				name: "set the name",
				run: func(id string) error {
					if v2.eao {
						p := newPlayer(id)
						p.Name = "Ann"
						return r2.Set(bg, "Update", id, runtime.Set(m2.root, m2.root.Value(p)))
					}
					return r2.Set(bg, "SetName", id, runtime.Set(m2.name, "Ann"))
				},
				apply: func(p *player) { p.Name = "Ann" },
			}}
			if !v2.eao || v2.part {
				writes = append(writes, write{
					name: "set the scores",
					run: func(id string) error {
						return r2.Set(bg, "SetScores", id, runtime.Set(m2.scores, []score{{Game: "g9", Points: 9}}))
					},
					apply: func(p *player) { p.Scores = []score{{Game: "g9", Points: 9}} },
				})
			}
			if v2.part {
				writes = append(writes, write{
					name: "append a score",
					run: func(id string) error {
						before, err := r2.Get(bg, id)
						if err != nil {
							return err
						}
						i, err := r2.Append(bg, "AppendScores", id, m2.scores, score{Game: "g3", Points: 7})
						if err == nil && i != len(before.Scores) {
							return fmt.Errorf("AppendScores returned index %d, want %d", i, len(before.Scores))
						}
						return err
					},
					apply: func(p *player) { p.Scores = append(p.Scores, score{Game: "g3", Points: 7}) },
				}, write{
					name: "set a score",
					run: func(id string) error {
						return r2.Set(bg, "SetScoresAt", id, runtime.SetAt(m2.scores, 1, score{Game: "g2", Points: 6}))
					},
					apply: func(p *player) { p.Scores[1].Points = 6 },
				})
			}
			for i, w := range writes {
				t.Run(strings.ReplaceAll(w.name, " ", "_"), func(t *testing.T) {
					p := olds[i]
					if err := w.run(p.ID); err != nil {
						t.Fatalf("%s on a block written %s, read %s: %v", w.name, v1.name, v2.name, err)
					}
					w.apply(p)
					wantLayout(t, c, m2, p, w.name)
					wantPlayer(t, r2, p, w.name)
					wantPlayer(t, r1, p, w.name+", read by the old version")
					// The next write finds the block in its layout.
					must(t, w.run(p.ID))
				})
			}
		})
	})
}

// TestEvolutionElements: the elements of a partition stored whole (an ETF
// field, a member of an EAO root entry) are read in pages like those of a
// partitioned one.
func TestEvolutionElements(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		for _, v1 := range []version{vETF, vEAO} {
			for _, v2 := range []version{vPart, vEAOPart} {
				t.Run(v1.name+"-"+v2.name, func(t *testing.T) {
					r1, _ := v1.ensure(t, c)
					p := newPlayer(v1.name + "-" + v2.name)
					p.Scores = append(p.Scores, score{Game: "g3", Points: 1})
					must(t, r1.Create(bg, p))
					r2, m2 := v2.ensure(t, c)
					var got []score
					for start := 0; ; start += 2 {
						more, err := r2.S.ReadElems(bg, "ListScores", p.ID, m2.scores, start, 2, false, func(_ int, d runtime.Decoder) error {
							var s score
							err := d.Decode(&s)
							got = append(got, s)
							return err
						})
						must(t, err)
						if !more {
							break
						}
					}
					if !slices.Equal(got, p.Scores) {
						t.Fatalf("the elements read %v, want %v", got, p.Scores)
					}
					// Backwards, from the last.
					var back []score
					for start := -1; ; {
						last := -1
						more, err := r2.S.ReadElems(bg, "ListScores", p.ID, m2.scores, start, 2, true, func(i int, d runtime.Decoder) error {
							var s score
							err := d.Decode(&s)
							back, last = append(back, s), i
							return err
						})
						must(t, err)
						if !more {
							break
						}
						start = last - 1
					}
					want := slices.Clone(p.Scores)
					slices.Reverse(want)
					if !slices.Equal(back, want) {
						t.Fatalf("the elements read backwards %v, want %v", back, want)
					}
				})
			}
		}
	})
}

// TestEvolutionVersion: a version added to a model with data. A block
// without a version entry is at version 0: Get reads 0, Put of it at 0
// replaces it (version 1), an Update's IfVersion takes it as 0; a Put at
// 0 of a block that has a version still fails with ErrConflict.
func TestEvolutionVersion(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		for _, l := range []bool{false, true} {
			t.Run(fmt.Sprint("lookups=", l), func(t *testing.T) {
				r1, _ := vETF.with(l, false).ensure(t, c)
				p, q := newPlayer(fmt.Sprint("v", l)), newPlayer(fmt.Sprint("w", l))
				must(t, r1.Create(bg, p))
				must(t, r1.Create(bg, q))
				r2, m2 := vETF.with(l, true).ensure(t, c)
				got, err := r2.Get(bg, p.ID)
				must(t, err)
				if got.Version != 0 {
					t.Fatalf("a block without a version reads version %d", got.Version)
				}
				got.Name = "Ann"
				must(t, r2.Put(bg, got))
				if got.Version != 1 {
					t.Fatalf("Put set version %d, want 1", got.Version)
				}
				again, err := r2.Get(bg, p.ID)
				must(t, err)
				if again.Version != 1 || again.Name != "Ann" {
					t.Fatalf("after Put: %+v", again)
				}
				stale := *again
				stale.Version = 0
				if err := r2.Put(bg, &stale); !errors.Is(err, runtime.ErrConflict) {
					t.Fatalf("Put at version 0 of a block at version 1: %v, want ErrConflict", err)
				}
				err = r2.Update(bg, "Update", q.ID, runtime.Update[player]{Changes: []runtime.Change[player]{runtime.Set(m2.name, "Bob")}, IfVersion: 1})
				if !errors.Is(err, runtime.ErrConflict) {
					t.Fatalf("Update if version 1 of a block without a version: %v, want ErrConflict", err)
				}
				must(t, r2.Set(bg, "SetName", q.ID, runtime.Set(m2.name, "Bob")))
				got, err = r2.Get(bg, q.ID)
				must(t, err)
				if got.Version != 1 || got.Name != "Bob" {
					t.Fatalf("after SetName of a block without a version: %+v, want version 1", got)
				}
			})
		}
	})
}

// TestEvolutionMigrate: Migrate rewrites the blocks of an older layout in
// batches, each whole in the current layout with its values, version and
// lookup entries kept (on a cluster through the lookup protocol); a dry
// run writes nothing; a second run finds every block current; a block
// that does not decode is reported, not a failure of the run.
func TestEvolutionMigrate(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		v1, v2 := vETF.with(true, true), vEAOPart.with(true, true)
		r1, _ := v1.ensure(t, c)
		var old []*player
		for i := range 5 {
			p := newPlayer(fmt.Sprint("p", i))
			p.City = fmt.Sprint("c", i%2)
			must(t, r1.Create(bg, p))
			old = append(old, p)
		}
		r2, m2 := v2.ensure(t, c)
		cur := newPlayer("q")
		must(t, r2.Create(bg, cur))
		before := entries(t, c, "p0")

		rep, err := r2.Migrate(bg, runtime.MigrateOptions{DryRun: true, Batch: 2})
		must(t, err)
		if rep.Scanned != 6 || rep.Migrated != 5 || rep.Current != 1 || len(rep.Failed) != 0 {
			t.Fatalf("dry run: %+v, want 5 to migrate, 1 current", rep)
		}
		if got := entries(t, c, "p0"); !slices.Equal(got, before) {
			t.Fatalf("a dry run changed block p0: %q, was %q", got, before)
		}

		var batches int
		rep, err = r2.Migrate(bg, runtime.MigrateOptions{Batch: 2, Progress: func(runtime.MigrateReport) { batches++ }})
		must(t, err)
		if rep.Scanned != 6 || rep.Migrated != 5 || rep.Current != 1 || len(rep.Failed) != 0 || batches != 3 {
			t.Fatalf("Migrate: %+v in %d batches, want 5 migrated, 1 current in 3", rep, batches)
		}
		for _, p := range old {
			wantLayout(t, c, m2, p, "after Migrate")
			wantPlayer(t, r2, p, "after Migrate")
			got, err := r2.GetBy(bg, "GetByEmail", m2.email, runtime.AppendString(nil, p.Email))
			must(t, err)
			if got.ID != p.ID || got.Version != 1 {
				t.Fatalf("GetByEmail(%s) after Migrate: %s at version %d", p.Email, got.ID, got.Version)
			}
		}
		clean(t, "Migrate", r2.Repair)

		rep, err = r2.Migrate(bg, runtime.MigrateOptions{Batch: 4})
		must(t, err)
		if rep.Migrated != 0 || rep.Current != 6 {
			t.Fatalf("a second Migrate: %+v, want every block current", rep)
		}

		// An ETF block whose field does not decode as the EAO root
		// entry's member is reported, and the run goes on. (The old
		// version writes them after recording its layout again: with
		// the new one recorded, its writes fail with ErrLayout.)
		must(t, r1.Ensure(bg))
		bad := newPlayer("r")
		must(t, r1.Create(bg, bad))
		must(t, c.HSet(bg, "players:{r}", "name", "\x02\xff\xff\xff\x7fx\x00").Err())
		tail := newPlayer("s")
		must(t, r1.Create(bg, tail))
		must(t, r2.Ensure(bg))
		rep, err = r2.Migrate(bg, runtime.MigrateOptions{Batch: 3})
		must(t, err)
		if len(rep.Failed) != 1 || rep.Failed[0].ID != "r" || !errors.Is(rep.Failed[0].Err, runtime.ErrUnreadable) || rep.Migrated != 1 {
			t.Fatalf("Migrate with an unreadable block: %+v", rep)
		}
		wantPlayer(t, r2, tail, "the block after the unreadable one")
	})
}

// TestEvolutionMigrateFrom: what MigrateBlocks says each block was.
func TestEvolutionMigrateFrom(t *testing.T) {
	c := redistest.Server(t)
	for _, tc := range []struct {
		v1, v2 version
		from   string
	}{
		{vETF, vEAO, "etf"}, {vEAO, vETF, "eao"}, {vETF, vPart, "scores whole"}, {vPart, vETF, "scores partitioned"},
		{vEAO, vEAOPart, "scores whole in the root entry"}, {vEAOPart, vEAO, "scores partitioned"}, {vPart, vEAOPart, "etf"},
		{vETF, vEAOPart, "etf, scores whole"}, {vEAOPart, vETF, "eao, scores partitioned"},
	} {
		flush(t, c)
		r1, _ := tc.v1.repo(c)
		must(t, r1.Create(bg, newPlayer("p")))
		_, m2 := tc.v2.repo(c)
		res, _, more, err := redisstore.Open(c, m2.d).MigrateBlocks(bg, nil, 10, true)
		must(t, err)
		if more || len(res) != 1 || res[0].From != tc.from || !res[0].Migrated {
			t.Errorf("%s -> %s: %+v, want from %q", tc.v1.name, tc.v2.name, res, tc.from)
		}
	}
}

// TestSchemaRecord: the schema record is the string noam:schema:{players},
// set only over the record it was read as (or none).
func TestSchemaRecord(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		s := redisstore.Open(c, vETF.model().d)
		raw, err := s.LoadSchema(bg)
		must(t, err)
		if raw != nil {
			t.Fatalf("a record before any: %q", raw)
		}
		must(t, s.SaveSchema(bg, nil, []byte("a")))
		if err := s.SaveSchema(bg, nil, []byte("b")); !errors.Is(err, runtime.ErrConflict) {
			t.Fatalf("SaveSchema over none when there is one: %v, want ErrConflict", err)
		}
		if err := s.SaveSchema(bg, []byte("x"), []byte("b")); !errors.Is(err, runtime.ErrConflict) {
			t.Fatalf("SaveSchema over another record: %v, want ErrConflict", err)
		}
		must(t, s.SaveSchema(bg, []byte("a"), []byte("b")))
		raw, err = s.LoadSchema(bg)
		must(t, err)
		if string(raw) != "b" {
			t.Fatalf("the record is %q, want b", raw)
		}
		if v := c.Get(bg, redisstore.SchemaKey("players")).Val(); v != "b" {
			t.Fatalf("%s holds %q", redisstore.SchemaKey("players"), v)
		}
		// EnsureIndexes records the layout there.
		must(t, c.Del(bg, redisstore.SchemaKey("players")).Err())
		r, _ := vEAO.ensure(t, c)
		raw, err = r.S.LoadSchema(bg)
		must(t, err)
		rec, err := runtime.DecodeSchema(raw)
		must(t, err)
		if rec == nil || rec.Layout.Strategy != "eao" || rec.Layout.Collection != "players" {
			t.Fatalf("the record after EnsureIndexes: %+v", rec)
		}
	})
}

// TestDropLookup: the lookups a new version no longer has are dropped by
// its EnsureIndexes (their three keys); dropping again is no error.
func TestDropLookup(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		r1, _ := vETF.with(true, false).ensure(t, c)
		must(t, r1.Create(bg, newPlayer("p")))
		keys := []string{"{players.email}", "{players.email}:meta", "{players.email}:claims", "{players.city}", "{players.city}:meta"}
		for _, k := range keys {
			if c.Exists(bg, k).Val() != 1 {
				t.Fatalf("no key %s before the lookups are removed", k)
			}
		}
		r2, _ := vETF.ensure(t, c)
		for _, k := range keys {
			if c.Exists(bg, k).Val() != 0 {
				t.Fatalf("key %s is left after the lookups were removed", k)
			}
		}
		must(t, r2.S.DropLookup(bg, runtime.LookupLayout{Name: "email", Fields: []string{"email"}, Unique: true}))
		wantPlayer(t, r2, newPlayer("p"), "after the lookups were removed")
	})
}

// TestLookupAdded: lookups added to a model with data are built from the
// blocks by EnsureIndexes (on a cluster too); a unique one over values
// held twice fails with ErrDuplicate and stays building.
func TestLookupAdded(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		r1, _ := vEAO.ensure(t, c)
		for i := range 5 {
			must(t, r1.Create(bg, newPlayer(fmt.Sprint("p", i))))
		}
		r2, m2 := vETF.with(true, false).ensure(t, c)
		for i := range 5 {
			got, err := r2.GetBy(bg, "GetByEmail", m2.email, runtime.AppendString(nil, fmt.Sprintf("p%d@example.com", i)))
			must(t, err)
			if got.ID != fmt.Sprint("p", i) || got.Name != "Mary "+got.ID {
				t.Fatalf("GetByEmail: %+v", got)
			}
		}
		// Values held twice.
		flush(t, c)
		for _, id := range []string{"a", "b"} {
			p := newPlayer(id)
			p.Email = "same@example.com"
			must(t, r1.Create(bg, p))
		}
		r3, m3 := vETF.with(true, false).repo(c)
		if err := r3.Ensure(bg); !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("EnsureIndexes of a unique lookup over duplicates: %v, want ErrDuplicate", err)
		}
		if _, err := r3.GetBy(bg, "GetByEmail", m3.email, runtime.AppendString(nil, "same@example.com")); !errors.Is(err, runtime.ErrIndexBuilding) {
			t.Fatalf("GetByEmail while the lookup is not built: %v, want ErrIndexBuilding", err)
		}
	})
}

// TestEvolutionGenerated: the generated versions of the model
// (runtime/storetest/evolve) over one database.
func TestEvolutionGenerated(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		v1 := etf.NewPlayerRedisRepository(c, shortLease)
		must(t, v1.EnsureIndexes(bg))
		must(t, v1.Create(bg, &etf.Player{ID: "p", Name: "Mary", Email: "m@example.com", City: "Rome", Scores: []etf.Score{{Game: "g1", Points: 3}}}))
		v2 := eao.NewPlayerRedisRepository(c, shortLease)
		must(t, v2.EnsureIndexes(bg))
		got, err := v2.Get(bg, "p")
		must(t, err)
		if got.Name != "Mary" || got.City != "Rome" || len(got.Scores) != 1 || got.Scores[0].Points != 3 {
			t.Fatalf("eao read the etf block as %+v", got)
		}
		v3 := part.NewPlayerRedisRepository(c, shortLease)
		must(t, v3.EnsureIndexes(bg))
		i, err := v3.AppendScores(bg, "p", part.Score{Game: "g2", Points: 4})
		must(t, err)
		if i != 1 {
			t.Fatalf("AppendScores on the etf block: index %d", i)
		}
		v4 := eaopart.NewPlayerRedisRepository(c, shortLease)
		must(t, v4.EnsureIndexes(bg))
		must(t, v4.SetScoresAt(bg, "p", 0, eaopart.Score{Game: "g1", Points: 9}))
		back, err := v1.Get(bg, "p")
		must(t, err)
		if back.Name != "Mary" || len(back.Scores) != 2 || back.Scores[0].Points != 9 || back.Scores[1].Points != 4 {
			t.Fatalf("etf reads the block back as %+v", back)
		}
		if got := entries(t, c, "p"); !slices.Equal(got, []string{"", "scores", "scores[0]", "scores[1]"}) {
			t.Fatalf("the block holds %q, want the eaopart layout", got)
		}
	})
}

// flush empties the database (every master of a cluster).
func flush(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	if cc, ok := c.(*redis.ClusterClient); ok {
		must(t, cc.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() }))
		return
	}
	must(t, c.FlushAll(bg).Err())
}
