package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookupsunique"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
)

// Evolution is the schema and layout evolution suite (issue 23, README
// "Changing a model"): data written by one version of a model (the
// packages under runtime/storetest/evolve, each the aggregate Player of
// collection "players") is read and written by another version over the
// same database, as after a regenerate and a redeploy.
func Evolution(t *testing.T, h Harness) {
	// A short layout lease (shortLease), also for the databases a subtest
	// opens itself: on stores without fenced writes, EnsureIndexes that
	// records another layout waits two of it, about 33 times in the suite.
	open := h.Open
	h.Open = func(t *testing.T) DB {
		db := open(t)
		db.Options = append(slices.Clip(db.Options), runtime.WithLayoutLease(shortLease))
		return db
	}
	runTests(t, h, evolutionTests)
}

// The evolution subtests need none of the conformance model's
// repositories: they run as start-up subtests (nothing ensured).
var evolutionTests = []subtest{
	{name: "SchemaPrimitives", fn: testEvoSchemaPrimitives, startUp: true},
	{name: "RecordsLayout", fn: testEvoRecordsLayout, startUp: true},
	{name: "Layouts", fn: testEvoLayouts, startUp: true},
	{name: "Migrate", fn: testEvoMigrate, startUp: true},
	{name: "MigrateRace", fn: testEvoMigrateRace, startUp: true},
	{name: "AddLookup", fn: testEvoAddLookup, startUp: true},
	{name: "AddUniqueLookupOverDuplicates", fn: testEvoUniqueOverDuplicates, startUp: true},
	{name: "ResumedBuild", fn: testEvoResumedBuild, startUp: true},
	{name: "RemoveLookup", fn: testEvoRemoveLookup, startUp: true},
	{name: "BuildUnderWriters", fn: testEvoBuildUnderWriters, startUp: true, concurrent: true},
	{name: "UniqueBuildUnderDeletes", fn: testEvoUniqueBuildUnderDeletes, startUp: true},
	{name: "BuildUnreadable", fn: testEvoBuildUnreadable, startUp: true},
	{name: "AddVersion", fn: testEvoAddVersion, startUp: true},
	{name: "Fields", fn: testEvoFields, startUp: true},
	{name: "RollingDeploy", fn: testEvoRollingDeploy, startUp: true},
	{name: "RollingDeployFailed", fn: testEvoRollingDeployFailed, startUp: true},
	{name: "RollingDeployConcurrent", fn: testEvoRollingDeployConcurrent, startUp: true},
}

// EvolutionSubtests lists the names of the evolution suite's subtests.
func EvolutionSubtests() []string {
	var out []string
	for _, st := range evolutionTests {
		out = append(out, st.name)
	}
	return out
}

// player is a Player of any version of the model, so that one check
// serves every version: the conversions (playerOf, asPlayer) go by field
// name, leaving out the fields a version does not have (renamed's Town is
// City).
type player struct {
	ID, Name, Email, City, Nick string
	Scores                      []score
	Version                     int64
}

type score struct {
	Game   string
	Points int
}

func (p player) String() string {
	return fmt.Sprintf("{%s %q %q %q %q %v v%d}", p.ID, p.Name, p.Email, p.City, p.Nick, p.Scores, p.Version)
}

// same compares two players, a nil and an empty slice of scores alike.
func (p player) same(o player) bool {
	if len(p.Scores) == 0 && len(o.Scores) == 0 {
		p.Scores, o.Scores = nil, nil
	}
	return reflect.DeepEqual(p, o)
}

// playerField maps the fields of player to the Go fields of a version.
var playerField = map[string][]string{"ID": {"ID"}, "Name": {"Name"}, "Email": {"Email"}, "City": {"City", "Town"}, "Nick": {"Nick"}, "Version": {"Version"}}

func playerOf(a any) player {
	v := reflect.ValueOf(a).Elem()
	var p player
	pv := reflect.ValueOf(&p).Elem()
	for name, gos := range playerField {
		for _, g := range gos {
			if f := v.FieldByName(g); f.IsValid() {
				pv.FieldByName(name).Set(f.Convert(pv.FieldByName(name).Type()))
			}
		}
	}
	if s := v.FieldByName("Scores"); s.IsValid() && !s.IsNil() {
		p.Scores = make([]score, s.Len())
		for i := range s.Len() {
			p.Scores[i] = score{Game: s.Index(i).FieldByName("Game").String(), Points: int(s.Index(i).FieldByName("Points").Int())}
		}
	}
	return p
}

func asPlayer[P any](p player) *P {
	out := new(P)
	v := reflect.ValueOf(out).Elem()
	pv := reflect.ValueOf(p)
	for name, gos := range playerField {
		for _, g := range gos {
			if f := v.FieldByName(g); f.IsValid() {
				f.Set(pv.FieldByName(name).Convert(f.Type()))
			}
		}
	}
	if s := v.FieldByName("Scores"); s.IsValid() && p.Scores != nil {
		s.Set(reflect.MakeSlice(s.Type(), len(p.Scores), len(p.Scores)))
		for i, sc := range p.Scores {
			s.Index(i).FieldByName("Game").SetString(sc.Game)
			s.Index(i).FieldByName("Points").SetInt(int64(sc.Points))
		}
	}
	return out
}

// playerRepository is what every version's PlayerRepository has.
type playerRepository[P any] interface {
	Get(ctx context.Context, id string) (*P, error)
	Create(ctx context.Context, p *P) error
	Put(ctx context.Context, p *P) error
	Delete(ctx context.Context, id string) error
	GetMany(ctx context.Context, ids []string) (map[string]*P, error)
	EnsureIndexes(ctx context.Context) error
	List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*P], error)
	All(ctx context.Context) iter.Seq2[*P, error]
}

// version is one version of the evolution model over a database, its
// methods on players.
type version struct {
	name string
	// repo is the generated repository.
	repo        any
	ensure      func(ctx context.Context) error
	create, put func(ctx context.Context, p player) error
	get         func(ctx context.Context, id string) (player, error)
	getMany     func(ctx context.Context, ids []string) (map[string]player, error)
	list        func(ctx context.Context, req runtime.PageRequest) ([]player, string, error)
	all         func(ctx context.Context) ([]player, []error)
	del         func(ctx context.Context, id string) error
	migrate     func(ctx context.Context, o runtime.MigrateOptions) (runtime.MigrateReport, error)
	loadSchema  func(ctx context.Context) ([]byte, error)
	saveSchema  func(ctx context.Context, old, rec []byte) error
	dropLookup  func(ctx context.Context, l runtime.LookupLayout) error
	layout      runtime.Layout
	// entries returns the entries the store holds for block id and
	// those the version's layout gives the aggregate it reads there.
	entries     func(id string) (stored, model []string, err error)
	seen        func(p player) player
	writes      []entryWrite
	partitioned bool
}

// entryWrite is one entry-level write of a version (a setter, an append,
// an Update), and what it does to the aggregate.
type entryWrite struct {
	name  string
	do    func(ctx context.Context, id string) error
	apply func(p *player)
}

// migrater is a generated repository's Migrate (issue 23 item 4).
type migrater interface {
	Migrate(ctx context.Context, o runtime.MigrateOptions) (runtime.MigrateReport, error)
}

func wrap[P any, R playerRepository[P]](t *testing.T, name string, r R) *version {
	rr, ok := repoOf[P, string](r)
	if !ok {
		t.Fatalf("the %s repository %T does not reveal its runtime.Repo", name, r)
	}
	v := &version{
		name:       name,
		repo:       r,
		ensure:     r.EnsureIndexes,
		create:     func(ctx context.Context, p player) error { return r.Create(ctx, asPlayer[P](p)) },
		put:        func(ctx context.Context, p player) error { return r.Put(ctx, asPlayer[P](p)) },
		del:        r.Delete,
		migrate:    rr.Migrate,
		loadSchema: rr.S.LoadSchema,
		saveSchema: rr.S.SaveSchema,
		dropLookup: rr.S.DropLookup,
		layout:     runtime.LayoutIn(rr.D, rr.S),
		seen:       func(p player) player { return playerOf(asPlayer[P](p)) },
	}
	if m, ok := any(r).(migrater); ok {
		v.migrate = m.Migrate
	}
	v.get = func(ctx context.Context, id string) (player, error) {
		p, err := r.Get(ctx, id)
		if err != nil {
			return player{}, err
		}
		return playerOf(p), nil
	}
	v.getMany = func(ctx context.Context, ids []string) (map[string]player, error) {
		m, err := r.GetMany(ctx, ids)
		if err != nil {
			return nil, err
		}
		out := make(map[string]player, len(m))
		for id, p := range m {
			out[id] = playerOf(p)
		}
		return out, nil
	}
	v.list = func(ctx context.Context, req runtime.PageRequest) ([]player, string, error) {
		page, err := r.List(ctx, req)
		var out []player
		for _, p := range page.Items {
			out = append(out, playerOf(p))
		}
		return out, page.Next, err
	}
	v.all = func(ctx context.Context) ([]player, []error) {
		var out []player
		var errs []error
		for p, err := range r.All(ctx) {
			if err != nil {
				errs = append(errs, err)
				if len(errs) > 100 {
					break
				}
				continue
			}
			out = append(out, playerOf(p))
		}
		return out, errs
	}
	v.entries = func(id string) (stored, model []string, err error) {
		agg, err := rr.S.Get(bg, id)
		if err != nil {
			return nil, nil, err
		}
		model = rr.D.Entries(agg)
		stored, err = rr.S.Layout(bg, id)
		slices.Sort(model)
		slices.Sort(stored)
		return stored, model, err
	}
	return v
}

// The updates the entry-level writes make.
var (
	newScores    = []score{{Game: "g9", Points: 9}}
	setScores    = func(p *player) { p.Scores = slices.Clone(newScores) }
	appendScore  = func(p *player) { p.Scores = append(slices.Clone(p.Scores), newScores[0]) }
	setScoreAt0  = func(p *player) { p.Scores = slices.Clone(p.Scores); p.Scores[0] = newScores[0] }
	setName      = func(p *player) { p.Name = "Renamed" }
	setNameTown  = func(p *player) { p.Name, p.City = "Updated", "Oslo" }
	updatedName  = "Updated"
	updatedCity  = "Oslo"
	renamedName  = "Renamed"
	etfScores    = func() []etf.Score { return []etf.Score{{Game: "g9", Points: 9}} }
	partScore    = part.Score{Game: "g9", Points: 9}
	eaopartScore = eaopart.Score{Game: "g9", Points: 9}
)

// versions opens each version of the model over a database.
var versions = map[string]func(t *testing.T, db DB) *version{
	"etf": func(t *testing.T, db DB) *version {
		r := etfPlayers.On(t, db)
		v := wrap[etf.Player](t, "etf", r)
		v.writes = []entryWrite{
			{"SetName", func(ctx context.Context, id string) error { return r.SetName(ctx, id, renamedName) }, setName},
			{"SetScores", func(ctx context.Context, id string) error { return r.SetScores(ctx, id, etfScores()) }, setScores},
			{"Update", func(ctx context.Context, id string) error {
				return r.Update(ctx, id, etf.PlayerUpdate{Name: &updatedName, City: &updatedCity})
			}, setNameTown},
		}
		return v
	},
	"eao": func(t *testing.T, db DB) *version {
		return wrap[eao.Player](t, "eao", eaoPlayers.On(t, db)) // no entry-level writes
	},
	"part": func(t *testing.T, db DB) *version {
		r := partPlayers.On(t, db)
		v := wrap[part.Player](t, "part", r)
		v.partitioned = true
		v.writes = []entryWrite{
			{"SetName", func(ctx context.Context, id string) error { return r.SetName(ctx, id, renamedName) }, setName},
			{"AppendScores", func(ctx context.Context, id string) error { _, err := r.AppendScores(ctx, id, partScore); return err }, appendScore},
			{"SetScoresAt", func(ctx context.Context, id string) error { return r.SetScoresAt(ctx, id, 0, partScore) }, setScoreAt0},
			{"Update", func(ctx context.Context, id string) error {
				return r.Update(ctx, id, part.PlayerUpdate{Name: &updatedName, City: &updatedCity})
			}, setNameTown},
		}
		return v
	},
	"eaopart": func(t *testing.T, db DB) *version {
		r := eaopartPlayers.On(t, db)
		v := wrap[eaopart.Player](t, "eaopart", r)
		v.partitioned = true
		v.writes = []entryWrite{
			{"AppendScores", func(ctx context.Context, id string) error {
				_, err := r.AppendScores(ctx, id, eaopartScore)
				return err
			}, appendScore},
			{"SetScoresAt", func(ctx context.Context, id string) error { return r.SetScoresAt(ctx, id, 0, eaopartScore) }, setScoreAt0},
			{"Update", func(ctx context.Context, id string) error {
				// The root entry: name, email and city (a whole
				// Update of the root writes every root field).
				return r.Update(ctx, id, eaopart.PlayerUpdate{Root: &eaopart.Player{Name: updatedName, Email: "mary@example.com", City: updatedCity}})
			}, func(p *player) { p.Name, p.Email, p.City = updatedName, "mary@example.com", updatedCity }},
		}
		return v
	},
}

// evoData is what the version v1 writes before v2 opens the database:
// players with values in every field, several elements, one element, and
// one with every field zero.
func evoData() []player {
	return []player{
		{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []score{{"g1", 3}, {"g2", 5}}},
		{ID: "p2", Name: "Ann", Email: "ann@example.com", City: "Oslo", Scores: []score{{"g1", 7}}},
		{ID: "p3"},
	}
}

// layoutPair is a change of layout from version from to version to.
// mustRead: the issue (item 3) allows ErrLayout for the change, but the
// store contract (STORES.md) requires blocks of either layout to read
// right: ETF <-> EAO, with or without partitions.
type layoutPair struct {
	from, to string
	mustRead bool
}

var layoutPairs = []layoutPair{
	{"etf", "eao", true},
	{"eao", "etf", true},
	{"part", "eaopart", true},
	{"eaopart", "part", true},
	{"etf", "part", false},
	{"part", "etf", false},
	{"eao", "eaopart", false},
	{"eaopart", "eao", false},
}

// checkEntries checks that block id holds exactly the entries of v's
// layout, or, after an entry-level write that did not need to convert the
// block, exactly those of the layout of old (nil: none): never a mix of
// two layouts.
func (v *version) checkEntries(t *testing.T, id string, old *version) {
	t.Helper()
	stored, model, err := v.entries(id)
	if err != nil {
		t.Errorf("%s: the entries of block %s: %v", v.name, id, err)
		return
	}
	if slices.Equal(stored, model) {
		return
	}
	if old != nil {
		if _, oldModel, err := old.entries(id); err == nil && slices.Equal(stored, oldModel) {
			return
		}
	}
	t.Errorf("block %s holds entries %q, the %s layout says %q (an entry of the old layout left behind?)", id, stored, v.name, model)
}

// checkRead checks one read of block id by version v: right (want as v
// sees it), or, where the change allows it, ErrLayout naming the block;
// never zero values.
func checkRead(t *testing.T, what string, v *version, id string, got player, err error, want player, mustRead bool) bool {
	t.Helper()
	switch {
	case err == nil:
		if w := v.seen(want); !got.same(w) {
			t.Errorf("%s: %s read block %s as %v, want %v", what, v.name, id, got, w)
			return false
		}
		return true
	case errors.Is(err, runtime.ErrLayout):
		if mustRead {
			t.Errorf("%s: %s: %v; want the block read right (the store contract reads this change)", what, v.name, err)
			return false
		}
		checkLayoutErr(t, what, err, id)
		t.Logf("%s: %s: refused with ErrLayout: %v", what, v.name, err)
		return false
	default:
		t.Errorf("%s: %s read block %s: %v, want the values or ErrLayout", what, v.name, id, err)
		return false
	}
}

// checkLayoutErr checks that an ErrLayout names the block and an entry.
func checkLayoutErr(t *testing.T, what string, err error, id string) {
	t.Helper()
	var e *runtime.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: %v is no *runtime.Error", what, err)
		return
	}
	if id != "" && fmt.Sprint(e.ID) != id {
		t.Errorf("%s: %v names block %v, want %s", what, err, e.ID, id)
	}
	if !strings.Contains(err.Error(), "entry") {
		t.Errorf("%s: %v names no entry", what, err)
	}
}

func evoOpen(t *testing.T, db DB, name string) *version {
	t.Helper()
	return versions[name](t, db)
}

// testEvoLayouts: for each change of layout, blocks written by v1 read
// right by v2 through Get, GetMany, List and All (or, where allowed,
// ErrLayout), a Get then Put through v2 keeps every value and leaves no
// entry of the old layout, and each entry-level write of v2 on a v1 block
// either converts it (every value right) or fails with ErrLayout leaving
// the block as it was.
func testEvoLayouts(t *testing.T, e *env) {
	for _, pair := range layoutPairs {
		t.Run(pair.from+"->"+pair.to, func(t *testing.T) {
			ctx := bg
			db := e.h.Open(t)
			v1 := evoOpen(t, db, pair.from)
			must(t, v1.ensure(ctx))
			data := evoData()
			want := map[string]player{}
			for _, p := range data {
				must(t, v1.create(ctx, p))
				want[p.ID] = p
			}
			v2 := evoOpen(t, db, pair.to)
			// The blocks the entry-level writes of v2 start from, one
			// per write.
			for _, w := range v2.writes {
				p := data[0]
				p.ID = "w-" + w.name
				must(t, v1.create(ctx, p))
			}
			must(t, v2.ensure(ctx))
			ids := []string{"p1", "p2", "p3"}

			t.Run("Get", func(t *testing.T) {
				for _, id := range ids {
					got, err := v2.get(ctx, id)
					checkRead(t, "Get", v2, id, got, err, want[id], pair.mustRead)
				}
			})
			t.Run("GetMany", func(t *testing.T) {
				m, err := v2.getMany(ctx, ids)
				if err != nil {
					if errors.Is(err, runtime.ErrLayout) && !pair.mustRead {
						checkLayoutErr(t, "GetMany", err, "")
						return
					}
					t.Fatalf("GetMany: %v, want the values%s", err, map[bool]string{false: " or ErrLayout"}[pair.mustRead])
				}
				for _, id := range ids {
					got, ok := m[id]
					if !ok {
						t.Errorf("GetMany: block %s missing", id)
						continue
					}
					checkRead(t, "GetMany", v2, id, got, nil, want[id], true)
				}
			})
			t.Run("List", func(t *testing.T) {
				var got []player
				var errs []error
				req := runtime.PageRequest{Limit: 2}
				for range 20 {
					items, next, err := v2.list(ctx, req)
					got = append(got, items...)
					if err != nil {
						errs = append(errs, err)
					}
					if next == "" {
						break
					}
					req.Cursor = next
				}
				checkListing(t, "List", v2, got, errs, want, pair.mustRead)
			})
			t.Run("All", func(t *testing.T) {
				got, errs := v2.all(ctx)
				checkListing(t, "All", v2, got, errs, want, pair.mustRead)
			})
			t.Run("GetPut", func(t *testing.T) {
				for _, id := range ids {
					got, err := v2.get(ctx, id)
					if !checkRead(t, "Get", v2, id, got, err, want[id], pair.mustRead) {
						continue
					}
					if err := v2.put(ctx, got); err != nil {
						t.Errorf("Put %s after Get: %v", id, err)
						continue
					}
					got, err = v2.get(ctx, id)
					checkRead(t, "Get after Put", v2, id, got, err, want[id], true)
					v2.checkEntries(t, id, nil)
					// v1 reads the block v2 rewrote (the reverse change).
					got, err = v1.get(ctx, id)
					checkRead(t, "Get after Put through "+v2.name, v1, id, got, err, want[id], pair.mustRead)
				}
			})
			// A version without entry-level writes (EAO without partitions:
			// its fields are written whole, by Put) has nothing to check here.
			if len(v2.writes) > 0 {
				t.Run("EntryWrites", func(t *testing.T) {
					for _, w := range v2.writes {
						id := "w-" + w.name
						old := data[0]
						old.ID = id
						err := w.do(ctx, id)
						switch {
						case err == nil:
							nw := old
							w.apply(&nw)
							got, err := v2.get(ctx, id)
							checkRead(t, w.name+" then Get", v2, id, got, err, nw, true)
							v2.checkEntries(t, id, v1)
							got, err = v1.get(ctx, id)
							checkRead(t, w.name+" through "+v2.name+", then Get", v1, id, got, err, nw, pair.mustRead)
						case errors.Is(err, runtime.ErrLayout):
							checkLayoutErr(t, w.name, err, id)
							t.Logf("%s on a %s block: %v", w.name, v1.name, err)
							got, err := v1.get(ctx, id)
							if err != nil || !got.same(v1.seen(old)) {
								t.Errorf("%s failed with ErrLayout but changed the block: %s reads %v, %v; want %v", w.name, v1.name, got, err, old)
							}
							v1.checkEntries(t, id, nil)
						default:
							t.Errorf("%s through %s on a %s block: %v, want success or ErrLayout", w.name, v2.name, v1.name, err)
						}
					}
				})
			}
		})
	}
}

// checkListing checks the blocks and errors of a listing: every block
// once, right, or (where allowed) an ErrLayout in its place.
func checkListing(t *testing.T, what string, v *version, got []player, errs []error, want map[string]player, mustRead bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p.ID] {
			t.Errorf("%s: block %s twice", what, p.ID)
		}
		seen[p.ID] = true
		w, ok := want[p.ID]
		if !ok {
			if !strings.HasPrefix(p.ID, "w-") {
				t.Errorf("%s: unexpected block %v", what, p)
			}
			continue
		}
		checkRead(t, what, v, p.ID, p, nil, w, true)
	}
	refused := 0
	for _, err := range errs {
		if !errors.Is(err, runtime.ErrLayout) || mustRead {
			t.Errorf("%s: %v, want every block read%s", what, err, map[bool]string{false: " or ErrLayout"}[mustRead])
			continue
		}
		checkLayoutErr(t, what, err, "")
		refused++
	}
	read := 0
	for id := range want {
		if seen[id] {
			read++
		}
	}
	if read+refused < len(want) {
		t.Errorf("%s: %d blocks read and %d refused, want all %d", what, read, refused, len(want))
	}
}

// migratePairs are the changes Migrate is run over.
var migratePairs = []layoutPair{{"etf", "eao", true}, {"eaopart", "part", true}, {"part", "etf", false}, {"eao", "eaopart", false}}

// testEvoMigrate: after a change of layout, a dry run counts every block
// and writes nothing, a run rewrites them all, a second run finds them
// current, v2 then reads every block right in its layout, and the schema
// record's history is cleared.
func testEvoMigrate(t *testing.T, e *env) {
	for _, pair := range migratePairs {
		t.Run(pair.from+"->"+pair.to, func(t *testing.T) {
			ctx := bg
			db := e.h.Open(t)
			v1 := evoOpen(t, db, pair.from)
			must(t, v1.ensure(ctx))
			const n = 7
			want := map[string]player{}
			for i := range n {
				p := evoData()[i%3]
				p.ID = fmt.Sprintf("m%d", i)
				must(t, v1.create(ctx, p))
				want[p.ID] = p
			}
			v2 := evoOpen(t, db, pair.to)
			must(t, v2.ensure(ctx))
			if rec := loadRecord(t, v2); len(rec.History) == 0 || !rec.History[len(rec.History)-1].SameBlocks(v1.layout) {
				t.Fatalf("after EnsureIndexes of %s: history %+v, want the %s layout last", v2.name, rec.History, v1.name)
			}
			// The blocks the store holds in another layout than v2's: all
			// of them, unless the store keeps both layouts alike (a
			// MongoDB document is the same under ETF and EAO).
			old := 0
			for id := range want {
				stored, model, err := v2.entries(id)
				must(t, err)
				if !slices.Equal(stored, model) {
					old++
				}
			}
			if old == 0 {
				t.Logf("the %s store holds the %s blocks as %s would write them: nothing to migrate", e.h.Name, v1.name, v2.name)
			}
			var batches int
			rep, err := v2.migrate(ctx, runtime.MigrateOptions{DryRun: true, Batch: 3, Progress: func(runtime.MigrateReport) { batches++ }})
			must(t, err)
			// At least those (the model's notation does not tell an
			// element count from a whole slice: "scores").
			if rep.Scanned != n || rep.Migrated < old || rep.Migrated+rep.Current != n || len(rep.Failed) != 0 {
				t.Fatalf("dry run: %+v, want %d scanned, at least %d to migrate (the blocks whose entries are not %s's)", rep, n, old, v2.name)
			}
			dry := rep.Migrated
			if batches < 3 {
				t.Errorf("dry run in batches of 3 over %d blocks: %d progress calls, want at least 3", n, batches)
			}
			for id, w := range want {
				got, err := v1.get(ctx, id)
				if err != nil || !got.same(w) {
					t.Errorf("after the dry run, %s reads %s as %v, %v; want %v (unchanged)", v1.name, id, got, err, w)
				}
				v1.checkEntries(t, id, nil)
			}
			if rec := loadRecord(t, v2); len(rec.History) == 0 && old > 0 {
				t.Errorf("the dry run cleared the history")
			}
			rep, err = v2.migrate(ctx, runtime.MigrateOptions{Batch: 3})
			must(t, err)
			if rep.Scanned != n || rep.Migrated != dry || rep.Current != n-dry || len(rep.Failed) != 0 {
				t.Fatalf("migration: %+v, want the %d blocks of the dry run migrated", rep, dry)
			}
			rep, err = v2.migrate(ctx, runtime.MigrateOptions{})
			must(t, err)
			if rep.Scanned != n || rep.Migrated != 0 || rep.Current != n || len(rep.Failed) != 0 {
				t.Errorf("second migration: %+v, want all %d current", rep, n)
			}
			for id, w := range want {
				got, err := v2.get(ctx, id)
				checkRead(t, "Get after Migrate", v2, id, got, err, w, true)
				v2.checkEntries(t, id, nil)
			}
			if rec := loadRecord(t, v2); len(rec.History) != 0 {
				t.Errorf("after a complete migration: history %+v, want none", rec.History)
			}
		})
	}
}

// loadRecord reads the collection's schema record.
func loadRecord(t *testing.T, v *version) *runtime.SchemaRecord {
	t.Helper()
	raw, err := v.loadSchema(bg)
	must(t, err)
	rec, err := runtime.DecodeSchema(raw)
	must(t, err)
	if rec == nil {
		t.Fatalf("no schema record for collection players")
	}
	return rec
}

// testEvoSchemaPrimitives: the store's schema record is one conditional
// write (SaveSchema), and dropping a lookup is idempotent.
func testEvoSchemaPrimitives(t *testing.T, e *env) {
	ctx := bg
	v := evoOpen(t, e.db, "etf")
	must(t, v.ensure(ctx))
	raw, err := v.loadSchema(ctx)
	must(t, err)
	if raw == nil {
		t.Fatal("EnsureIndexes left no schema record")
	}
	a, b := []byte(`{"layout":{"collection":"players","strategy":"etf","fields":["a"]}}`), []byte(`{"layout":{"collection":"players","strategy":"etf","fields":["b"]}}`)
	wantErr(t, v.saveSchema(ctx, nil, a), runtime.ErrConflict, "SaveSchema expecting no record where one is")
	wantErr(t, v.saveSchema(ctx, a, b), runtime.ErrConflict, "SaveSchema expecting another record")
	must(t, v.saveSchema(ctx, raw, a))
	got, err := v.loadSchema(ctx)
	must(t, err)
	if string(got) != string(a) {
		t.Fatalf("LoadSchema after SaveSchema = %q, want %q", got, a)
	}
	wantErr(t, v.saveSchema(ctx, raw, b), runtime.ErrConflict, "SaveSchema expecting the record it replaced")
	must(t, v.saveSchema(ctx, a, raw))
	for range 2 {
		must(t, v.dropLookup(ctx, runtime.LookupLayout{Name: "city", Fields: []string{"city"}}))
		must(t, v.dropLookup(ctx, runtime.LookupLayout{Name: "email", Fields: []string{"email"}, Unique: true}))
	}
	// The blocks are left alone.
	p := evoData()[0]
	must(t, v.create(ctx, p))
	must(t, v.dropLookup(ctx, runtime.LookupLayout{Name: "city", Fields: []string{"city"}}))
	got2, err := v.get(ctx, p.ID)
	must(t, err)
	if !got2.same(p) {
		t.Errorf("after DropLookup: %v, want %v", got2, p)
	}
}

// testEvoRecordsLayout: EnsureIndexes records the repository's layout,
// is idempotent (a second call changes nothing), and keeps the layouts
// blocks may still be written in as history.
func testEvoRecordsLayout(t *testing.T, e *env) {
	ctx := bg
	var prev *version
	var history []runtime.Layout
	for _, name := range []string{"etf", "eao", "eaopart", "part", "etf"} {
		v := evoOpen(t, e.db, name)
		must(t, v.ensure(ctx))
		raw, err := v.loadSchema(ctx)
		must(t, err)
		must(t, v.ensure(ctx))
		again, err := v.loadSchema(ctx)
		must(t, err)
		if string(again) != string(raw) {
			t.Errorf("%s: a second EnsureIndexes changed the record %s into %s", name, raw, again)
		}
		rec, err := runtime.DecodeSchema(raw)
		must(t, err)
		if rec == nil {
			t.Fatalf("%s: EnsureIndexes left no schema record", name)
		}
		if !reflect.DeepEqual(rec.Layout, v.layout) {
			t.Errorf("%s: recorded layout %+v, want %+v", name, rec.Layout, v.layout)
		}
		if prev != nil && !prev.layout.SameBlocks(v.layout) {
			history = append(history, prev.layout)
		}
		if !reflect.DeepEqual(rec.History, history) {
			t.Errorf("%s: history %+v, want %+v", name, rec.History, history)
		}
		prev = v
	}
}

// lookupData is what the lookup subtests write with v1 (etf).
func lookupData() []etf.Player {
	return []etf.Player{
		{ID: "a", Name: "Ann", Email: "ann@example.com", City: "Rome"},
		{ID: "b", Name: "Bob", Email: "bob@example.com", City: "Rome"},
		{ID: "c", Name: "Cid", Email: "cid@example.com", City: "Oslo"},
	}
}

// listCity lists the ids ListByCity finds, following every page of 2
// (at most 100).
func listCity(t *testing.T, r lookups.PlayerRepository, city string) ([]string, error) {
	t.Helper()
	return listCityPages(r, city, 2)
}

// testEvoAddLookup: lookups added to a collection with data are refused
// before EnsureIndexes (ErrNotReady, never a partial answer), built by
// it from the old blocks (progress reported), and then answer for the
// old aggregates and claim their unique values.
func testEvoAddLookup(t *testing.T, e *env) {
	ctx := bg
	v1 := etfPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	for _, p := range lookupData() {
		must(t, v1.Create(ctx, &p))
	}
	v2 := lookupPlayers.On(t, e.db)
	_, err := v2.GetByEmail(ctx, "ann@example.com")
	wantErr(t, err, runtime.ErrNotReady, "GetByEmail of a lookup added to data, before EnsureIndexes")
	_, err = listCity(t, v2, "Rome")
	wantErr(t, err, runtime.ErrNotReady, "ListByCity of a lookup added to data, before EnsureIndexes")
	wantErr(t, v2.Create(ctx, &lookups.Player{ID: "d", Email: "ann@example.com"}), runtime.ErrNotReady, "Create claiming a unique value before EnsureIndexes")

	var progress []runtime.BuildProgress
	must(t, v2.EnsureIndexes(runtime.WithBuildProgress(ctx, func(p runtime.BuildProgress) { progress = append(progress, p) })))
	if len(progress) == 0 || !progress[len(progress)-1].Done {
		t.Errorf("build progress %+v, want reports ending Done", progress)
	} else if last := progress[len(progress)-1]; last.Blocks != len(lookupData()) || last.Collection != "players" || !slices.Contains(last.Lookups, "email") || !slices.Contains(last.Lookups, "city") {
		t.Errorf("build progress %+v, want %d blocks of players, lookups email and city", last, len(lookupData()))
	}
	for _, w := range lookupData() {
		got, err := v2.GetByEmail(ctx, w.Email)
		if err != nil {
			t.Errorf("GetByEmail(%q) of an old aggregate: %v", w.Email, err)
			continue
		}
		if got.ID != w.ID || got.Name != w.Name || got.City != w.City {
			t.Errorf("GetByEmail(%q) = %+v, want %+v", w.Email, got, w)
		}
	}
	ids, err := listCity(t, v2, "Rome")
	must(t, err)
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("ListByCity(Rome) = %q, want a, b", ids)
	}
	wantErr(t, v2.Create(ctx, &lookups.Player{ID: "d", Email: "ann@example.com"}), runtime.ErrDuplicate, "Create with the email of an old aggregate")
	must(t, v2.Create(ctx, &lookups.Player{ID: "d", Email: "dan@example.com", City: "Rome"}))
	ids, err = listCity(t, v2, "Rome")
	must(t, err)
	if !slices.Equal(ids, []string{"a", "b", "d"}) {
		t.Errorf("ListByCity(Rome) after a Create = %q, want a, b, d", ids)
	}
	rec := loadRecord(t, versions["etf"](t, e.db))
	for _, l := range rec.Layout.Lookups {
		if l.Building || l.Resume != nil {
			t.Errorf("after the build: recorded lookup %+v", l)
		}
	}
}

// testEvoUniqueOverDuplicates: a unique lookup added over blocks that
// already hold a value twice is not built: EnsureIndexes fails with
// ErrDuplicate naming both blocks and records the layout it replaced
// again (so that the build still serving writes on: RollingDeployFailed),
// reads of the lookup and writes of its field fail with ErrNotReady, and
// once one holder is deleted EnsureIndexes builds it.
func testEvoUniqueOverDuplicates(t *testing.T, e *env) {
	ctx := bg
	v1 := etfPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	data := lookupData()
	data[1].Email = data[0].Email // a and b
	for _, p := range data {
		must(t, v1.Create(ctx, &p))
	}
	v2 := lookupPlayers.On(t, e.db)
	err := v2.EnsureIndexes(ctx)
	wantErr(t, err, runtime.ErrDuplicate, "EnsureIndexes of a unique lookup over duplicates")
	for _, s := range []string{"a", "b", data[0].Email} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v does not name %q", err, s)
		}
	}
	_, err = v2.GetByEmail(ctx, data[0].Email)
	wantErr(t, err, runtime.ErrNotReady, "GetByEmail while the unique lookup cannot be built")
	_, err = v2.GetByEmail(ctx, data[2].Email)
	wantErr(t, err, runtime.ErrNotReady, "GetByEmail of a value held once while the unique lookup cannot be built")
	wantErr(t, v2.Create(ctx, &lookups.Player{ID: "d", Email: "dan@example.com"}), runtime.ErrNotReady, "Create while the unique lookup cannot be built")
	must(t, v2.Delete(ctx, "b"))
	must(t, v2.EnsureIndexes(ctx))
	got, err := v2.GetByEmail(ctx, data[0].Email)
	must(t, err)
	if got.ID != "a" {
		t.Errorf("GetByEmail(%q) = %s, want a", data[0].Email, got.ID)
	}
	got, err = v2.GetByEmail(ctx, data[2].Email)
	must(t, err)
	if got.ID != "c" {
		t.Errorf("GetByEmail(%q) = %s, want c", data[2].Email, got.ID)
	}
	wantErr(t, v2.Create(ctx, &lookups.Player{ID: "d", Email: data[0].Email}), runtime.ErrDuplicate, "Create with a value the built lookup holds")
}

// testEvoResumedBuild: a build cut short (its context cancelled after
// the first pages) leaves the lookups building, and the next
// EnsureIndexes resumes it where it stopped and completes it.
func testEvoResumedBuild(t *testing.T, e *env) {
	ctx := bg
	v1 := etfPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	const n = 3*64 + 10 // four pages of the engine's RepairBatch
	for i := range n {
		city := []string{"Rome", "Oslo", "Lima"}[i%3]
		must(t, v1.Create(ctx, &etf.Player{ID: fmt.Sprintf("b%03d", i), Name: "P", Email: fmt.Sprintf("p%03d@example.com", i), City: city}))
	}
	v2 := lookupPlayers.On(t, e.db)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first []runtime.BuildProgress
	err := v2.EnsureIndexes(runtime.WithBuildProgress(cctx, func(p runtime.BuildProgress) {
		first = append(first, p)
		if len(first) == 2 {
			cancel() // after the second page: the first one's position is recorded
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureIndexes cancelled during its build: %v (progress %+v), want context.Canceled", err, first)
	}
	rec := loadRecord(t, versions["etf"](t, e.db))
	for _, l := range rec.Layout.Lookups {
		if !l.Building || l.Resume == nil {
			t.Errorf("after a build cut short: recorded lookup %+v, want building with a position", l)
		}
	}
	_, err = v2.GetByEmail(ctx, "p000@example.com")
	wantErr(t, err, runtime.ErrIndexBuilding, "GetByEmail after a build cut short")
	_, err = listCity(t, v2, "Rome")
	wantErr(t, err, runtime.ErrIndexBuilding, "ListByCity after a build cut short")

	var second []runtime.BuildProgress
	must(t, v2.EnsureIndexes(runtime.WithBuildProgress(ctx, func(p runtime.BuildProgress) { second = append(second, p) })))
	if len(second) == 0 || !second[len(second)-1].Done {
		t.Fatalf("resumed build: progress %+v, want it to end Done", second)
	}
	if b := second[len(second)-1].Blocks; b >= n || b == 0 {
		t.Errorf("the resumed build scanned %d blocks, want fewer than the %d of the collection (it resumes)", b, n)
	}
	for i := range n {
		email := fmt.Sprintf("p%03d@example.com", i)
		got, err := v2.GetByEmail(ctx, email)
		if err != nil || got.ID != fmt.Sprintf("b%03d", i) {
			t.Fatalf("GetByEmail(%q) after the resumed build: %v, %v", email, got, err)
		}
	}
	ids, err := listCity(t, v2, "Rome")
	must(t, err)
	if len(ids) != (n+2)/3 {
		t.Errorf("ListByCity(Rome) after the resumed build: %d aggregates, want %d", len(ids), (n+2)/3)
	}
}

// testEvoRemoveLookup: a lookup removed from the model is dropped by
// EnsureIndexes; added back, it is built again from the blocks, with no
// entry of the dropped one answering.
func testEvoRemoveLookup(t *testing.T, e *env) {
	ctx := bg
	v1 := lookupPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	for _, p := range lookupData() {
		l := lookups.Player{ID: p.ID, Name: p.Name, Email: p.Email, City: p.City}
		must(t, v1.Create(ctx, &l))
	}
	v2 := uniquePlayers.On(t, e.db)
	must(t, v2.EnsureIndexes(ctx))
	rec := loadRecord(t, versions["etf"](t, e.db))
	if _, ok := rec.Layout.Lookup("city"); ok {
		t.Errorf("after EnsureIndexes without lookup city: recorded %+v", rec.Layout.Lookups)
	}
	must(t, v2.EnsureIndexes(ctx)) // idempotent
	// While city is gone: a moves away, b is deleted, d arrives.
	must(t, v2.SetCity(ctx, "a", "Lima"))
	must(t, v2.Delete(ctx, "b"))
	must(t, v2.Create(ctx, &lookupsunique.Player{ID: "d", Email: "dan@example.com", City: "Rome"}))
	got, err := v2.GetByEmail(ctx, "ann@example.com")
	must(t, err)
	if got.ID != "a" {
		t.Errorf("GetByEmail(ann) = %s, want a", got.ID)
	}
	// Back to v1: city is built again.
	v1 = lookupPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	for city, want := range map[string][]string{"Rome": {"d"}, "Lima": {"a"}, "Oslo": {"c"}} {
		ids, err := listCity(t, v1, city)
		must(t, err)
		if !slices.Equal(ids, want) {
			t.Errorf("ListByCity(%s) after re-adding the lookup = %q, want %q", city, ids, want)
		}
	}
}

// testEvoAddVersion: blocks written before the model had a version read
// at version 0; a Put at version 0 replaces them and sets 1, while a Put
// at version 0 of a block that has a version is a conflict.
func testEvoAddVersion(t *testing.T, e *env) {
	ctx := bg
	v1 := etfPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	for _, p := range lookupData() {
		must(t, v1.Create(ctx, &p))
	}
	v2 := versionedPlayers.On(t, e.db)
	must(t, v2.EnsureIndexes(ctx))
	got, err := v2.Get(ctx, "a")
	must(t, err)
	if got.Version != 0 || got.Name != "Ann" || got.City != "Rome" {
		t.Fatalf("Get of a block without a version: %+v, want Ann of Rome at version 0", got)
	}
	got.Name = "Anna"
	must(t, v2.Put(ctx, got))
	got, err = v2.Get(ctx, "a")
	must(t, err)
	if got.Version != 1 || got.Name != "Anna" || got.Email != "ann@example.com" {
		t.Errorf("after Get then Put: %+v, want Anna at version 1", got)
	}
	// A Put at version 0 without a Get: the block has no version yet.
	must(t, v2.Put(ctx, &versioned.Player{ID: "b", Name: "Bea", City: "Rome"}))
	got, err = v2.Get(ctx, "b")
	must(t, err)
	if got.Version != 1 || got.Name != "Bea" {
		t.Errorf("after a Put at version 0 of an unversioned block: %+v, want Bea at version 1", got)
	}
	err = v2.Put(ctx, &versioned.Player{ID: "a", Name: "Stale"})
	wantErr(t, err, runtime.ErrConflict, "Put at version 0 of a block at version 1")
	err = v2.Put(ctx, &versioned.Player{ID: "a", Name: "Stale", Version: 5})
	wantErr(t, err, runtime.ErrConflict, "Put at version 5 of a block at version 1")
	got, err = v2.Get(ctx, "a")
	must(t, err)
	if got.Name != "Anna" || got.Version != 1 {
		t.Errorf("a conflicting Put changed the block: %+v", got)
	}
	// An Update checking the version of a block without one sees 0: a
	// check against 1 fails.
	name := "Cyd"
	wantErr(t, v2.Update(ctx, "c", versioned.PlayerUpdate{Name: &name, IfVersion: 1}), runtime.ErrConflict, "Update IfVersion 1 of an unversioned block")
	must(t, v2.SetName(ctx, "c", name))
	got, err = v2.Get(ctx, "c")
	must(t, err)
	if got.Version != 1 || got.Name != name || got.City != "Oslo" {
		t.Errorf("after SetName of an unversioned block: %+v, want %s of Oslo at version 1", got, name)
	}
	// v1 still reads them.
	old, err := v1.Get(ctx, "a")
	must(t, err)
	if old.Name != "Anna" || old.City != "Rome" {
		t.Errorf("the version-less model reads %+v, want Anna of Rome", old)
	}
}

// testEvoFields: fields added and removed, and a field renamed in Go
// whose bson tag keeps its entry key, keep working both ways.
func testEvoFields(t *testing.T, e *env) {
	ctx := bg
	v1 := etfPlayers.On(t, e.db)
	must(t, v1.EnsureIndexes(ctx))
	for _, p := range lookupData() {
		p.Scores = []etf.Score{{Game: "g", Points: 1}}
		must(t, v1.Create(ctx, &p))
	}
	v2 := renamedPlayers.On(t, e.db)
	must(t, v2.EnsureIndexes(ctx))
	got, err := v2.Get(ctx, "a")
	must(t, err)
	if got.Name != "Ann" || got.Town != "Rome" || got.Nick != "" || len(got.Scores) != 1 {
		t.Fatalf("the renamed model reads %+v, want Ann of Rome (Town from the city entry), no nick", got)
	}
	got.Nick = "Annie"
	must(t, v2.Put(ctx, got))
	got, err = v2.Get(ctx, "a")
	must(t, err)
	if got.Nick != "Annie" || got.Town != "Rome" {
		t.Errorf("after Put: %+v", got)
	}
	must(t, v2.SetTown(ctx, "b", "Lima"))
	old, err := v1.Get(ctx, "b")
	must(t, err)
	if old.City != "Lima" || old.Name != "Bob" || old.Email != "bob@example.com" {
		t.Errorf("after SetTown through the renamed model, v1 reads %+v, want Bob of Lima, email kept", old)
	}
	old, err = v1.Get(ctx, "a")
	must(t, err)
	if old.City != "Rome" || old.Name != "Ann" || len(old.Scores) != 1 {
		t.Errorf("after a Put through the renamed model, v1 reads %+v, want Ann of Rome", old)
	}
	// v1 writes again over a block with the added field: the renamed
	// model reads what v1 wrote.
	must(t, v1.SetCity(ctx, "a", "Oslo"))
	got, err = v2.Get(ctx, "a")
	must(t, err)
	if got.Town != "Oslo" {
		t.Errorf("after v1's SetCity, the renamed model reads %+v, want Town Oslo", got)
	}
}
