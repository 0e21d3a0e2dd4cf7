package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
)

// The MongoDB adapter's side of schema and layout evolution (issue 23):
// data written by one version of the evolution model (the packages under
// runtime/storetest/evolve, aggregate Player of collection "players") is
// read, written and migrated by another over the same database.

// player and score hold the values of every version's Player (they share
// field names: a JSON round trip converts between them).
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

// conv converts between the versions' Player types and player.
func conv[B any](t *testing.T, a any) *B {
	t.Helper()
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b := new(B)
	if err := json.Unmarshal(raw, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// version is one version of the model over a database, through player
// values. Setters a version does not have are nil.
type version struct {
	name        string
	partitioned bool
	ensure      func(context.Context) error
	create      func(context.Context, *player) error
	get         func(context.Context, string) (*player, error)
	put         func(context.Context, *player) error
	list        func(context.Context) ([]*player, error)
	setScores   func(context.Context, string, []score) error
	appendScore func(context.Context, string, score) (int, error)
	setScoreAt  func(context.Context, string, int, score) error
	// The repository under the generated one (repoOf).
	layout  func(context.Context, string) ([]string, error)
	entries func(*player) []string
	migrate func(context.Context, runtime.MigrateOptions) (runtime.MigrateReport, error)
	blocks  func(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error)
	coll    *mongo.Collection
}

// repoOf returns the runtime.Repo under a generated repository (the field
// r of its embedded _playerRepo), for what the generated methods do not
// reach yet: the store's Layout and MigrateBlocks, and Repo.Migrate.
func repoOf[P any](repo any) runtime.Repo[P, string] {
	v := reflect.ValueOf(repo).Elem().Field(0).Field(0)
	return *(*runtime.Repo[P, string])(unsafe.Pointer(v.UnsafeAddr()))
}

type generated[P any] interface {
	EnsureIndexes(context.Context) error
	Create(context.Context, *P) error
	Get(context.Context, string) (*P, error)
	Put(context.Context, *P) error
	List(context.Context, runtime.PageRequest) (runtime.Page[*P], error)
	Collection() *mongo.Collection
}

func versionOf[P, S any](t *testing.T, name string, repo generated[P]) version {
	r := repoOf[P](repo)
	v := version{
		name:   name,
		ensure: repo.EnsureIndexes,
		create: func(ctx context.Context, p *player) error {
			x := conv[P](t, p)
			err := repo.Create(ctx, x)
			*p = *conv[player](t, x)
			return err
		},
		get: func(ctx context.Context, id string) (*player, error) {
			x, err := repo.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			return conv[player](t, x), nil
		},
		put: func(ctx context.Context, p *player) error {
			x := conv[P](t, p)
			err := repo.Put(ctx, x)
			*p = *conv[player](t, x)
			return err
		},
		list: func(ctx context.Context) ([]*player, error) {
			page, err := repo.List(ctx, runtime.PageRequest{Limit: 100})
			var out []*player
			for _, x := range page.Items {
				out = append(out, conv[player](t, x))
			}
			return out, err
		},
		layout:  r.S.Layout,
		entries: func(p *player) []string { return r.D.Entries(conv[P](t, p)) },
		migrate: r.Migrate,
		blocks:  r.S.MigrateBlocks,
		coll:    repo.Collection(),
	}
	for _, f := range r.D.Fields {
		v.partitioned = v.partitioned || f.Kind == runtime.KindPartition
	}
	if s, ok := any(repo).(interface {
		SetScores(context.Context, string, []S) error
	}); ok {
		v.setScores = func(ctx context.Context, id string, sc []score) error {
			return s.SetScores(ctx, id, *conv[[]S](t, sc))
		}
	}
	if s, ok := any(repo).(interface {
		AppendScores(context.Context, string, S) (int, error)
		SetScoresAt(context.Context, string, int, S) error
	}); ok {
		v.appendScore = func(ctx context.Context, id string, sc score) (int, error) {
			return s.AppendScores(ctx, id, *conv[S](t, sc))
		}
		v.setScoreAt = func(ctx context.Context, id string, i int, sc score) error {
			return s.SetScoresAt(ctx, id, i, *conv[S](t, sc))
		}
	}
	return v
}

// versions open each version of the model over a database.
var versions = map[string]func(*testing.T, *mongo.Database, ...runtime.Option) version{
	"etf": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[etf.Player, etf.Score](t, "etf", etf.NewPlayerMongoRepository(db, leased(o)...))
	},
	"eao": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[eao.Player, eao.Score](t, "eao", eao.NewPlayerMongoRepository(db, leased(o)...))
	},
	"part": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[part.Player, part.Score](t, "part", part.NewPlayerMongoRepository(db, leased(o)...))
	},
	"eaopart": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[eaopart.Player, eaopart.Score](t, "eaopart", eaopart.NewPlayerMongoRepository(db, leased(o)...))
	},
	"lookups": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[lookups.Player, lookups.Score](t, "lookups", lookups.NewPlayerMongoRepository(db, leased(o)...))
	},
	"versioned": func(t *testing.T, db *mongo.Database, o ...runtime.Option) version {
		return versionOf[versioned.Player, versioned.Score](t, "versioned", versioned.NewPlayerMongoRepository(db, leased(o)...))
	},
}

var bg = context.Background()

// leased adds a short layout lease, so that an EnsureIndexes that
// changes the layout (here at nearly every step) waits 100 ms, not the
// default lease's seconds.
func leased(o []runtime.Option) []runtime.Option {
	return append(slices.Clip(o), runtime.WithLayoutLease(50*time.Millisecond))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// samePlayer compares the values of two players (not their versions).
func samePlayer(a, b *player) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Email == b.Email && a.City == b.City &&
		slices.Equal(a.Scores, b.Scores) && (len(a.Scores) > 0 || len(b.Scores) == 0)
}

func newPlayer(id string, scores int) *player {
	p := &player{ID: id, Name: "name " + id, Email: id + "@example.com", City: "Rome"}
	for i := range scores {
		p.Scores = append(p.Scores, score{Game: "g" + string(rune('a'+i)), Points: i + 1})
	}
	return p
}

// readsAll checks that v reads p (Get and List) with every value.
func readsAll(t *testing.T, v version, want ...*player) {
	t.Helper()
	for _, w := range want {
		got, err := v.get(bg, w.ID)
		if err != nil {
			t.Fatalf("%s: Get %s: %v", v.name, w.ID, err)
		}
		if !samePlayer(got, w) {
			t.Fatalf("%s: Get %s = %+v, want %+v", v.name, w.ID, got, w)
		}
	}
	all, err := v.list(bg)
	if err != nil {
		t.Fatalf("%s: List: %v", v.name, err)
	}
	if len(all) != len(want) {
		t.Fatalf("%s: List: %d players, want %d", v.name, len(all), len(want))
	}
	for i, w := range want {
		if !samePlayer(all[i], w) {
			t.Fatalf("%s: List[%d] = %+v, want %+v", v.name, i, all[i], w)
		}
	}
}

// inLayout checks that block p is stored exactly in v's layout.
func inLayout(t *testing.T, v version, p *player) {
	t.Helper()
	got, err := v.layout(bg, p.ID)
	must(t, err)
	if want := v.entries(p); !slices.Equal(got, want) {
		t.Fatalf("%s: block %s holds entries %q, its layout has %q", v.name, p.ID, got, want)
	}
}

// TestEvolutionMongoLayouts: for each change of layout (ETF <-> EAO, a
// field whole <-> partitioned, with either strategy), blocks written by
// the first version read right with the second, a Get then Put keeps
// every value and writes the block in the second layout, and the first
// version still reads it.
func TestEvolutionMongoLayouts(t *testing.T) {
	pairs := [][2]string{
		{"etf", "eao"}, {"eao", "etf"},
		{"part", "eaopart"}, {"eaopart", "part"},
		{"etf", "part"}, {"part", "etf"},
		{"eao", "eaopart"}, {"eaopart", "eao"},
		{"etf", "eaopart"}, {"eaopart", "etf"},
	}
	for _, pair := range pairs {
		t.Run(pair[0]+"_to_"+pair[1], func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := versions[pair[0]](t, db)
			must(t, v1.ensure(bg))
			p1, p2 := newPlayer("p1", 3), newPlayer("p2", 0)
			must(t, v1.create(bg, p1))
			must(t, v1.create(bg, p2))
			v2 := versions[pair[1]](t, db)
			must(t, v2.ensure(bg))
			readsAll(t, v2, p1, p2)
			got, err := v2.get(bg, "p1")
			must(t, err)
			got.City = "Milan"
			must(t, v2.put(bg, got))
			p1.City = "Milan"
			inLayout(t, v2, p1)
			readsAll(t, v2, p1, p2)
			readsAll(t, v1, p1, p2)
		})
	}
}

// TestEvolutionMongoEntryWrites: the entry-level writes of one version on
// a block written by another leave a block both read right: an append to
// an array written whole counts its elements first (its index is the
// element's), a whole slice written over a partitioned array drops its
// count.
func TestEvolutionMongoEntryWrites(t *testing.T) {
	for _, opts := range [][]runtime.Option{nil, {mongostore.IndexTables()}} {
		for _, pair := range [][2]string{{"etf", "part"}, {"etf", "eaopart"}, {"eao", "part"}} {
			t.Run(pair[0]+"_appended_by_"+pair[1], func(t *testing.T) {
				db := mongotest.Start(t)
				v1 := versions[pair[0]](t, db, opts...)
				must(t, v1.ensure(bg))
				p := newPlayer("p1", 2)
				must(t, v1.create(bg, p))
				empty := newPlayer("p2", 0)
				must(t, v1.create(bg, empty))
				v2 := versions[pair[1]](t, db, opts...)
				must(t, v2.ensure(bg))
				i, err := v2.appendScore(bg, "p1", score{Game: "new", Points: 9})
				must(t, err)
				if i != 2 {
					t.Fatalf("the append to the 2 scores written whole is at index %d, want 2", i)
				}
				p.Scores = append(p.Scores, score{Game: "new", Points: 9})
				inLayout(t, v2, p)
				if i, err := v2.appendScore(bg, "p1", score{Game: "next", Points: 10}); err != nil || i != 3 {
					t.Fatalf("the next append: index %d, %v; want 3", i, err)
				}
				p.Scores = append(p.Scores, score{Game: "next", Points: 10})
				if err := v2.setScoreAt(bg, "p2", 0, score{}); !errors.Is(err, runtime.ErrNotFound) {
					t.Fatalf("SetScoresAt of no element: %v, want ErrNotFound", err)
				}
				if i, err := v2.appendScore(bg, "p2", score{Game: "first", Points: 1}); err != nil || i != 0 {
					t.Fatalf("the append to no scores: index %d, %v; want 0", i, err)
				}
				empty.Scores = []score{{Game: "first", Points: 1}}
				if _, err := v2.appendScore(bg, "none", score{}); !errors.Is(err, runtime.ErrNotFound) {
					t.Fatalf("an append to no block: %v, want ErrNotFound", err)
				}
				readsAll(t, v2, p, empty)
				readsAll(t, v1, p, empty)
				// An element written in an array written whole leaves the
				// block in the old layout, read right by both versions. The
				// old build writes it after a rollback (its EnsureIndexes
				// records its layout again: until then its writes get
				// ErrLayout), then the new build is deployed again.
				old := newPlayer("p3", 2)
				if err := v1.create(bg, old); !errors.Is(err, runtime.ErrLayout) {
					t.Fatalf("a write of the old build after the new one recorded its layout: %v, want ErrLayout", err)
				}
				must(t, v1.ensure(bg))
				must(t, v1.create(bg, old))
				must(t, v2.ensure(bg))
				must(t, v2.setScoreAt(bg, "p3", 1, score{Game: "set", Points: 5}))
				old.Scores[1] = score{Game: "set", Points: 5}
				inLayout(t, v1, old)
				// As v2 sees it: whole, in v2's strategy (no mix).
				got, err := v2.layout(bg, "p3")
				must(t, err)
				if slices.Contains(got, "") && len(got) != 1 || slices.Contains(got, "scores[0]") {
					t.Fatalf("%s sees the block written whole as %q", v2.name, got)
				}
				readsAll(t, v2, p, empty, old)
				readsAll(t, v1, p, empty, old)
			})
		}
		t.Run("part_set_whole_by_etf", func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := versions["part"](t, db, opts...)
			must(t, v1.ensure(bg))
			p := newPlayer("p1", 3)
			must(t, v1.create(bg, p))
			v2 := versions["etf"](t, db, opts...)
			must(t, v2.ensure(bg))
			p.Scores = []score{{Game: "only", Points: 1}}
			must(t, v2.setScores(bg, "p1", p.Scores))
			inLayout(t, v2, p)
			// The partitioned version, rolled back to, appends after the
			// one element.
			must(t, v1.ensure(bg))
			if i, err := v1.appendScore(bg, "p1", score{Game: "two", Points: 2}); err != nil || i != 1 {
				t.Fatalf("append after the whole write: index %d, %v; want 1", i, err)
			}
			p.Scores = append(p.Scores, score{Game: "two", Points: 2})
			readsAll(t, v1, p)
			readsAll(t, v2, p)
		})
	}
}

// TestEvolutionMongoMigrate: Migrate rewrites the blocks of another
// layout into the repository's (a dry run first counts them and writes
// nothing), a second run finds them all current, and blocks that read the
// same in both layouts (ETF and EAO) are current from the start.
func TestEvolutionMongoMigrate(t *testing.T) {
	for _, c := range []struct {
		v1, v2 string
		from   string // what MigrateBlocks reports of an old block, "" when it is current
	}{
		{"etf", "part", "scores whole"},
		{"part", "etf", "scores partitioned"},
		{"eaopart", "eao", "scores partitioned"},
		{"eao", "eaopart", "scores whole in the root entry"},
		{"etf", "eao", ""},
		{"eao", "etf", ""},
		{"etf", "versioned", "no version entry version"},
	} {
		t.Run(c.v1+"_to_"+c.v2, func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := versions[c.v1](t, db)
			must(t, v1.ensure(bg))
			var want []*player
			for _, id := range []string{"a", "b", "c", "d", "e"} {
				p := newPlayer(id, len(want))
				must(t, v1.create(bg, p))
				want = append(want, p)
			}
			v2 := versions[c.v2](t, db)
			must(t, v2.ensure(bg))
			before := documents(t, v2.coll)
			old := 0
			if c.from != "" {
				old = len(want)
			}
			rep, err := v2.migrate(bg, runtime.MigrateOptions{DryRun: true, Batch: 2})
			must(t, err)
			if rep.Scanned != len(want) || rep.Migrated != old || rep.Current != len(want)-old || len(rep.Failed) != 0 {
				t.Fatalf("dry run: %+v, want %d migrated of %d", rep, old, len(want))
			}
			if after := documents(t, v2.coll); !slices.EqualFunc(before, after, func(a, b bson.Raw) bool { return string(a) == string(b) }) {
				t.Fatalf("the dry run changed documents:\n%v\n%v", before, after)
			}
			res, _, _, err := v2.blocks(bg, nil, 1, true)
			must(t, err)
			if len(res) != 1 || res[0].ID != "a" || res[0].From != c.from || res[0].Migrated != (c.from != "") {
				t.Fatalf("MigrateBlocks of the first block: %+v, want from %q", res, c.from)
			}
			var batches int
			rep, err = v2.migrate(bg, runtime.MigrateOptions{Batch: 2, Progress: func(runtime.MigrateReport) { batches++ }})
			must(t, err)
			if rep.Migrated != old || rep.Current != len(want)-old || len(rep.Failed) != 0 || batches != 3 {
				t.Fatalf("migration: %+v in %d batches, want %d migrated of %d in 3 batches", rep, batches, old, len(want))
			}
			for _, p := range want {
				inLayout(t, v2, p) // a versioned block holds its version (0)
			}
			readsAll(t, v2, want...)
			readsAll(t, v1, want...)
			rep, err = v2.migrate(bg, runtime.MigrateOptions{})
			must(t, err)
			if rep.Migrated != 0 || rep.Current != len(want) {
				t.Fatalf("second migration: %+v, want every block current", rep)
			}
		})
	}
}

// documents reads every document of coll in _id order.
func documents(t *testing.T, coll *mongo.Collection) []bson.Raw {
	t.Helper()
	cur, err := coll.Find(bg, bson.D{})
	must(t, err)
	var out []bson.Raw
	must(t, cur.All(bg, &out))
	return out
}

// TestEvolutionMongoMigrateUnreadable: a block that reads in no layout is
// reported failed, and the migration goes on with the next.
func TestEvolutionMongoMigrateUnreadable(t *testing.T) {
	db := mongotest.Start(t)
	v1 := versions["etf"](t, db)
	must(t, v1.ensure(bg))
	for _, id := range []string{"a", "b", "c"} {
		must(t, v1.create(bg, newPlayer(id, 1)))
	}
	_, err := v1.coll.UpdateOne(bg, bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "scores", Value: "not an array"}}}})
	must(t, err)
	v2 := versions["part"](t, db)
	must(t, v2.ensure(bg))
	rep, err := v2.migrate(bg, runtime.MigrateOptions{})
	must(t, err)
	if rep.Migrated != 2 || len(rep.Failed) != 1 || rep.Failed[0].ID != "b" || !errors.Is(rep.Failed[0].Err, runtime.ErrUnreadable) {
		t.Fatalf("migration: %+v, want a and c migrated and b failed (ErrUnreadable)", rep)
	}
}

// TestEvolutionMongoVersionAdded: a block written before the model had a
// version reads at version 0; a Get then Put replaces it at version 1,
// and a Put of version 0 on a block with a version is ErrConflict.
func TestEvolutionMongoVersionAdded(t *testing.T) {
	for _, m := range lookupMappings {
		opts := m.opts
		t.Run(m.name, func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := versions["lookups"](t, db, opts...)
			must(t, v1.ensure(bg))
			must(t, v1.create(bg, newPlayer("p1", 2)))
			must(t, v1.create(bg, newPlayer("p2", 0)))
			v2 := versions["versioned"](t, db, opts...)
			must(t, v2.ensure(bg))
			got, err := v2.get(bg, "p1")
			must(t, err)
			if got.Version != 0 {
				t.Fatalf("a block without a version reads version %d, want 0", got.Version)
			}
			got.Name = "changed"
			must(t, v2.put(bg, got))
			if got.Version != 1 {
				t.Fatalf("Put set version %d, want 1", got.Version)
			}
			again, err := v2.get(bg, "p1")
			must(t, err)
			if again.Version != 1 || again.Name != "changed" || len(again.Scores) != 2 {
				t.Fatalf("after the Put: %+v", again)
			}
			stale := *again
			stale.Version = 0
			if err := v2.put(bg, &stale); !errors.Is(err, runtime.ErrConflict) {
				t.Fatalf("Put of version 0 on a block at version 1: %v, want ErrConflict", err)
			}
			// A stale version-0 Put racing the first: only one wins.
			p2, err := v2.get(bg, "p2")
			must(t, err)
			second := *p2
			must(t, v2.put(bg, p2))
			if err := v2.put(bg, &second); !errors.Is(err, runtime.ErrConflict) {
				t.Fatalf("a second Put of version 0: %v, want ErrConflict", err)
			}
		})
	}
}

// TestEvolutionMongoSchemaRecord: the schema record is the document
// {_id: "players", rec} of _noam_schema, written by EnsureIndexes and
// changed only from the record as read (ErrConflict otherwise).
func TestEvolutionMongoSchemaRecord(t *testing.T) {
	db := mongotest.Start(t)
	repo := etf.NewPlayerMongoRepository(db)
	s := repoOf[etf.Player](repo).S
	rec, err := s.LoadSchema(bg)
	if err != nil || rec != nil {
		t.Fatalf("LoadSchema before EnsureIndexes: %q, %v; want none", rec, err)
	}
	must(t, s.SaveSchema(bg, nil, []byte("r1")))
	if err := s.SaveSchema(bg, nil, []byte("r2")); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("SaveSchema over an existing record as if none: %v, want ErrConflict", err)
	}
	if err := s.SaveSchema(bg, []byte("other"), []byte("r2")); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("SaveSchema from another record: %v, want ErrConflict", err)
	}
	must(t, s.SaveSchema(bg, []byte("r1"), []byte("r2")))
	if rec, err := s.LoadSchema(bg); err != nil || string(rec) != "r2" {
		t.Fatalf("LoadSchema: %q, %v; want r2", rec, err)
	}
	_, err = db.Collection(mongostore.SchemaCollection).DeleteOne(bg, bson.D{{Key: "_id", Value: "players"}})
	must(t, err)
	must(t, repo.EnsureIndexes(bg))
	raw, err := db.Collection(mongostore.SchemaCollection).FindOne(bg, bson.D{{Key: "_id", Value: "players"}}).Raw()
	must(t, err)
	_, data, ok := raw.Lookup("rec").BinaryOK()
	if !ok {
		t.Fatalf("schema document %v has no binary rec", raw)
	}
	got, err := runtime.DecodeSchema(data)
	must(t, err)
	if got.Layout.Collection != "players" || got.Layout.Strategy != "etf" {
		t.Fatalf("recorded layout %+v", got.Layout)
	}
	// Another collection's record is another document.
	if n, err := db.Collection(mongostore.SchemaCollection).CountDocuments(bg, bson.D{}); err != nil || n != 1 {
		t.Fatalf("%d schema documents, %v; want 1", n, err)
	}
}

// lookupMappings are the mappings of the lookups model's lookups tested:
// the default one (on FerretDB, unique lookups in index tables), every
// lookup in an index table, and every lookup on a native index (on
// FerretDB, unique indexes without the partial filter).
var lookupMappings = []struct {
	name string
	opts []runtime.Option
}{
	{"default", mongotest.NativeOptions()},
	{"tables", []runtime.Option{mongostore.IndexTables()}},
	{"native", []runtime.Option{mongostore.NoPartialIndexes()}},
}

// indexNames lists the names of coll's indexes.
func indexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(bg)
	must(t, err)
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// collectionNames lists the database's collections.
func collectionNames(t *testing.T, db *mongo.Database) []string {
	t.Helper()
	names, err := db.ListCollectionNames(bg, bson.D{})
	must(t, err)
	slices.Sort(names)
	return names
}

// TestEvolutionMongoLookups: lookups added to a collection with data
// answer for the blocks written before them once EnsureIndexes returns
// (and claim their unique values); removed again, their native indexes
// and index tables are dropped (a value the unique lookup held is free),
// and dropping them again is no error.
func TestEvolutionMongoLookups(t *testing.T) {
	for _, m := range lookupMappings {
		t.Run(m.name, func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := etf.NewPlayerMongoRepository(db, leased(m.opts)...)
			must(t, v1.EnsureIndexes(bg))
			must(t, v1.Create(bg, &etf.Player{ID: "p1", Email: "a@x", City: "Rome"}))
			must(t, v1.Create(bg, &etf.Player{ID: "p2", Email: "b@x", City: "Rome"}))
			v2 := lookups.NewPlayerMongoRepository(db, leased(m.opts)...)
			must(t, v2.EnsureIndexes(bg))
			got, err := v2.GetByEmail(bg, "a@x")
			if err != nil || got.ID != "p1" {
				t.Fatalf("GetByEmail of a block written before the lookup: %+v, %v", got, err)
			}
			page, err := v2.ListByCity(bg, "Rome", runtime.PageRequest{})
			if err != nil || len(page.Items) != 2 {
				t.Fatalf("ListByCity: %d players, %v; want 2", len(page.Items), err)
			}
			if err := v2.Create(bg, &lookups.Player{ID: "p3", Email: "a@x"}); !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatalf("Create with a value an old block holds: %v, want ErrDuplicate", err)
			}
			// Back to the version without lookups.
			v3 := etf.NewPlayerMongoRepository(db, leased(m.opts)...)
			must(t, v3.EnsureIndexes(bg))
			if got := indexNames(t, v3.Collection()); !slices.Equal(got, []string{"_id_"}) {
				t.Fatalf("indexes after the lookups were removed: %q", got)
			}
			for _, c := range collectionNames(t, db) {
				if strings.HasPrefix(c, "players__") {
					t.Fatalf("index table %s left after its lookup was removed", c)
				}
			}
			must(t, v3.Create(bg, &etf.Player{ID: "p3", Email: "a@x"}))
			s := repoOf[etf.Player](v3).S
			for _, l := range runtime.LayoutOf(repoOf[lookups.Player](v2).D).Lookups {
				must(t, s.DropLookup(bg, l))
			}
		})
	}
}

// TestEvolutionMongoUniqueOverDuplicates: a unique lookup added over
// blocks that already hold a value twice fails EnsureIndexes with
// ErrDuplicate naming the value and its holders, its reads and the
// writes that claim values stay refused, and once the duplicate is
// resolved EnsureIndexes completes it.
func TestEvolutionMongoUniqueOverDuplicates(t *testing.T) {
	for _, m := range lookupMappings {
		t.Run(m.name, func(t *testing.T) {
			db := mongotest.Start(t)
			v1 := etf.NewPlayerMongoRepository(db, leased(m.opts)...)
			must(t, v1.EnsureIndexes(bg))
			must(t, v1.Create(bg, &etf.Player{ID: "p1", Email: "same@x", City: "Rome"}))
			must(t, v1.Create(bg, &etf.Player{ID: "p2", Email: "same@x", City: "Oslo"}))
			must(t, v1.Create(bg, &etf.Player{ID: "p3", Email: "other@x", City: "Oslo"}))
			v2 := lookups.NewPlayerMongoRepository(db, leased(m.opts)...)
			err := v2.EnsureIndexes(bg)
			if !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatalf("EnsureIndexes over duplicates: %v, want ErrDuplicate", err)
			}
			for _, s := range []string{`"same@x"`, `"p1"`, `"p2"`} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not name %s: %v", s, err)
				}
			}
			if _, err := v2.GetByEmail(bg, "other@x"); !errors.Is(err, runtime.ErrNotReady) && !errors.Is(err, runtime.ErrIndexBuilding) {
				t.Fatalf("GetByEmail before the lookup is complete: %v, want ErrNotReady or ErrIndexBuilding", err)
			}
			if err := v2.Create(bg, &lookups.Player{ID: "p4", Email: "other@x"}); !errors.Is(err, runtime.ErrNotReady) && !errors.Is(err, runtime.ErrIndexBuilding) {
				t.Fatalf("Create before the lookup is complete: %v, want ErrNotReady or ErrIndexBuilding", err)
			}
			// The failed build recorded the old layout again (or, with
			// native unique indexes, recorded nothing): the old build
			// writes on and resolves the duplicate.
			must(t, v1.SetEmail(bg, "p2", "mine@x"))
			must(t, v2.EnsureIndexes(bg))
			if got, err := v2.GetByEmail(bg, "same@x"); err != nil || got.ID != "p1" {
				t.Fatalf("GetByEmail: %+v, %v", got, err)
			}
			if err := v2.Create(bg, &lookups.Player{ID: "p4", Email: "other@x"}); !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatalf("Create with a taken value: %v, want ErrDuplicate", err)
			}
		})
	}
}

// TestEvolutionMongoIndexReplaced: a native index made for an earlier
// version of a lookup (here email not unique: {email, _id}) is not the
// lookup's: writes are refused (ErrNotReady) until EnsureIndexes replaces
// it, which it does only once the blocks hold no value twice.
func TestEvolutionMongoIndexReplaced(t *testing.T) {
	db := mongotest.Start(t)
	opts := leased([]runtime.Option{mongostore.NoPartialIndexes()})
	v1 := etf.NewPlayerMongoRepository(db, opts...)
	must(t, v1.EnsureIndexes(bg))
	old := mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName(mongostore.IndexName("email"))}
	_, err := v1.Collection().Indexes().CreateOne(bg, old)
	must(t, err)
	must(t, v1.Create(bg, &etf.Player{ID: "p1", Email: "same@x"}))
	must(t, v1.Create(bg, &etf.Player{ID: "p2", Email: "same@x"}))
	v2 := lookups.NewPlayerMongoRepository(db, opts...)
	// The store's own check, under the repository's gate.
	if err := repoOf[lookups.Player](v2).S.Create(bg, &lookups.Player{ID: "p3", Email: "same@x"}); !errors.Is(err, runtime.ErrNotReady) {
		t.Fatalf("a write while the index of email is not unique: %v, want ErrNotReady", err)
	}
	if err := v2.EnsureIndexes(bg); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("EnsureIndexes over duplicates: %v, want ErrDuplicate", err)
	}
	if got := indexNames(t, v1.Collection()); !slices.Contains(got, mongostore.IndexName("email")) {
		t.Fatalf("the earlier index was dropped though the new one cannot be built: %q", got)
	}
	must(t, v1.SetEmail(bg, "p2", "mine@x"))
	must(t, v2.EnsureIndexes(bg))
	if err := v2.Create(bg, &lookups.Player{ID: "p3", Email: "same@x"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create with a taken value once the index is replaced: %v, want ErrDuplicate", err)
	}
	// A second EnsureIndexes finds the index as it should be.
	must(t, v2.EnsureIndexes(bg))
}

// tdoc is an aggregate whose partition tags is looked up: its appends go
// through the lookup protocol of index tables.
type tdoc struct {
	ID   string
	Tags []string
}

var tdocDesc = (&runtime.Desc[tdoc, string]{
	Aggregate:  "TDoc",
	Collection: "tdocs",
	Keys:       runtime.StringKeys[string](),
	ID:         func(d *tdoc) *string { return &d.ID },
	Fields: []*runtime.Field[tdoc]{
		runtime.NewPartition("tags", "Tags", func(d *tdoc) *[]string { return &d.Tags }),
	},
	Lookups: []*runtime.Lookup[tdoc]{
		{Name: "tags", Parts: 1, Fields: []string{"tags"}, Paths: []runtime.LookupPath{{Path: "tags", Multi: true}},
			Values: func(d *tdoc) [][]byte { return encStrings(d.Tags...) }},
	},
}).Init()

// TestEvolutionMongoAppendIndexed: an append through the lookup protocol
// (the partition is looked up, in an index table or a native index) to an
// array written whole, without its count, is at the index after its
// elements, and the lookup finds it.
func TestEvolutionMongoAppendIndexed(t *testing.T) {
	for _, m := range lookupMappings {
		t.Run(m.name, func(t *testing.T) {
			db := mongotest.Start(t)
			s := mongostore.Open(db, tdocDesc, m.opts...)
			r := runtime.NewRepo(tdocDesc, s)
			must(t, r.Ensure(bg))
			// The document of a block written while tags was whole.
			_, err := s.Collection().InsertOne(bg, bson.D{{Key: "_id", Value: "d1"}, {Key: "tags", Value: bson.A{"a", "b"}}})
			must(t, err)
			i, err := r.Append(bg, "AppendTags", "d1", tdocDesc.Field("tags"), "c")
			if err != nil || i != 2 {
				t.Fatalf("append: index %d, %v; want 2", i, err)
			}
			got, err := r.Get(bg, "d1")
			if err != nil || !slices.Equal(got.Tags, []string{"a", "b", "c"}) {
				t.Fatalf("Get: %+v, %v", got, err)
			}
			page, err := r.ListBy(bg, "ListByTags", tdocDesc.Lookups[0], runtime.NewKeyRange(runtime.AppendString(nil, "c")), runtime.PageRequest{})
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("ListByTags c: %+v, %v", page.Items, err)
			}
			entries, err := s.Layout(bg, "d1")
			must(t, err)
			if want := []string{"tags", "tags[0]", "tags[1]", "tags[2]"}; !slices.Equal(entries, want) {
				t.Fatalf("entries %q, want %q", entries, want)
			}
		})
	}
}

// TestEvolutionMongoLookupRemapped: a collection's lookup mapping is
// recorded at its first EnsureIndexes, so a repository whose options name
// another mapping is refused (ErrMappingConflict) and changes nothing.
// Moving the lookups is an operator's step: with no process writing, the
// recorded mapping is removed (forgetMapping) and EnsureIndexes of the new
// options builds the index tables from the blocks and drops the native
// indexes; moved back, the index tables are dropped, so that a later move
// to tables builds them again rather than trusting stale entries.
func TestEvolutionMongoLookupRemapped(t *testing.T) {
	db := mongotest.Start(t)
	native := leased([]runtime.Option{mongostore.NoPartialIndexes()})
	tables := leased([]runtime.Option{mongostore.IndexTables()})
	v1 := lookups.NewPlayerMongoRepository(db, native...)
	must(t, v1.EnsureIndexes(bg))
	must(t, v1.Create(bg, &lookups.Player{ID: "p1", Email: "a@x", City: "Rome"}))
	must(t, v1.Create(bg, &lookups.Player{ID: "p2", Email: "b@x", City: "Rome"}))
	check := func(r *lookups.PlayerMongoRepository, email, id string, gone ...string) {
		t.Helper()
		if got, err := r.GetByEmail(bg, email); err != nil || got.ID != id {
			t.Fatalf("GetByEmail %s: %+v, %v; want %s", email, got, err, id)
		}
		for _, g := range gone {
			if _, err := r.GetByEmail(bg, g); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("GetByEmail %s: %v, want ErrNotFound", g, err)
			}
		}
		if page, err := r.ListByCity(bg, "Rome", runtime.PageRequest{}); err != nil || len(page.Items) != 2 {
			t.Fatalf("ListByCity: %d players, %v; want 2", len(page.Items), err)
		}
		if err := r.Create(bg, &lookups.Player{ID: "p9", Email: email}); !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("Create with a taken value: %v, want ErrDuplicate", err)
		}
	}
	v2 := lookups.NewPlayerMongoRepository(db, tables...)
	if err := v2.EnsureIndexes(bg); !errors.Is(err, mongostore.ErrMappingConflict) {
		t.Fatalf("EnsureIndexes of other options than the recorded mapping: %v, want ErrMappingConflict", err)
	}
	if err := v2.Create(bg, &lookups.Player{ID: "p5", Email: "e@x"}); !errors.Is(err, mongostore.ErrMappingConflict) {
		t.Fatalf("Create under other options than the recorded mapping: %v, want ErrMappingConflict", err)
	}
	check(v1, "a@x", "p1")
	forgetMapping(t, db, "players")
	v2 = lookups.NewPlayerMongoRepository(db, tables...)
	must(t, v2.EnsureIndexes(bg))
	if got := indexNames(t, v2.Collection()); !slices.Equal(got, []string{"_id_"}) {
		t.Fatalf("indexes once the lookups keep index tables: %q", got)
	}
	check(v2, "a@x", "p1")
	forgetMapping(t, db, "players")
	v3 := lookups.NewPlayerMongoRepository(db, native...)
	must(t, v3.EnsureIndexes(bg))
	for _, c := range collectionNames(t, db) {
		if strings.HasPrefix(c, "players__") {
			t.Fatalf("index table %s left once its lookup is a native index", c)
		}
	}
	must(t, v3.SetEmail(bg, "p1", "c@x"))
	check(v3, "c@x", "p1", "a@x")
	forgetMapping(t, db, "players")
	v4 := lookups.NewPlayerMongoRepository(db, tables...)
	must(t, v4.EnsureIndexes(bg))
	check(v4, "c@x", "p1", "a@x")
}
