package runtime

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The evolution core (evolve.go) without a store: the layouts of
// descriptors, what changed between two, the schema record, and the gate,
// reconcile, build and Migrate over a store that only keeps a schema
// record (schemaStore).

type evoPlayer struct {
	ID      string
	Name    string
	Email   string
	City    string
	Scores  []int
	Version int64
}

type evoRoot struct {
	Name   string `bson:"name"`
	Email  string `bson:"email"`
	City   string `bson:"city"`
	Scores []int  `bson:"scores"`
}

// evoDesc builds the descriptor of evoPlayer as noamgen would for the
// given options.
func evoDesc(eao, partition, version bool, lookups ...*Lookup[evoPlayer]) *Desc[evoPlayer, string] {
	d := &Desc[evoPlayer, string]{
		Aggregate: "Player", Collection: "players", Keys: StringKeys[string](),
		ID: func(p *evoPlayer) *string { return &p.ID },
		Fields: []*Field[evoPlayer]{
			NewField("name", "Name", func(p *evoPlayer) *string { return &p.Name }),
			NewField("email", "Email", func(p *evoPlayer) *string { return &p.Email }),
			NewField("city", "City", func(p *evoPlayer) *string { return &p.City }),
		},
		Lookups: lookups,
	}
	if partition {
		d.Fields = append(d.Fields, NewPartition("scores", "Scores", func(p *evoPlayer) *[]int { return &p.Scores }))
	} else {
		d.Fields = append(d.Fields, NewField("scores", "Scores", func(p *evoPlayer) *[]int { return &p.Scores }))
	}
	if eao {
		d.EAO = true
		d.Root = NewRoot([]string{"name", "email", "city", "scores"}, func(p *evoPlayer) evoRoot {
			return evoRoot{p.Name, p.Email, p.City, p.Scores}
		}, func(p *evoPlayer, r evoRoot) { p.Name, p.Email, p.City, p.Scores = r.Name, r.Email, r.City, r.Scores })
	}
	if version {
		d.Version = NewVersion("version", "Version", func(p *evoPlayer) *int64 { return &p.Version })
	}
	return d.Init()
}

var (
	evoEmail = &Lookup[evoPlayer]{Name: "email", Unique: true, Parts: 1, Fields: []string{"email"}}
	evoCity  = &Lookup[evoPlayer]{Name: "city", Parts: 1, Fields: []string{"city"}, Table: true}
)

func TestLayoutOf(t *testing.T) {
	for _, c := range []struct {
		name string
		d    *Desc[evoPlayer, string]
		want Layout
	}{
		{"etf", evoDesc(false, false, false), Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city", "scores"}}},
		{"eao", evoDesc(true, false, false), Layout{Collection: "players", Strategy: "eao", Fields: []string{"name", "email", "city", "scores"}}},
		{"part", evoDesc(false, true, false), Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city"}, Partitions: []string{"scores"}}},
		{"eaopart", evoDesc(true, true, false), Layout{Collection: "players", Strategy: "eao", Fields: []string{"name", "email", "city"}, Partitions: []string{"scores"}}},
		{"versioned", evoDesc(false, false, true), Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city", "scores"}, Version: "version"}},
		{"lookups", evoDesc(false, false, false, evoEmail, evoCity), Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city", "scores"}, Lookups: []LookupLayout{
			{Name: "email", Fields: []string{"email"}, Unique: true},
			{Name: "city", Fields: []string{"city"}, Table: true},
		}}},
	} {
		if got := LayoutOf(c.d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: LayoutOf = %+v, want %+v", c.name, got, c.want)
		}
	}
	// The layout's lookups are its own: changing them leaves the
	// descriptor alone.
	d := evoDesc(false, false, false, evoEmail)
	l := LayoutOf(d)
	l.Lookups[0].Fields[0] = "x"
	if d.Lookups[0].Fields[0] != "email" {
		t.Errorf("LayoutOf shares the lookup's fields with the descriptor")
	}
	counted := evoDesc(false, false, false)
	counted.Counter = &Counter[string]{}
	if !LayoutOf(counted).Counter {
		t.Errorf("LayoutOf of a counted descriptor: Counter not set")
	}
}

func TestLayoutSameBlocks(t *testing.T) {
	etf := LayoutOf(evoDesc(false, false, false))
	for _, c := range []struct {
		name string
		o    Layout
		want bool
	}{
		{"same", LayoutOf(evoDesc(false, false, false)), true},
		{"lookups added", LayoutOf(evoDesc(false, false, false, evoEmail, evoCity)), true},
		{"eao", LayoutOf(evoDesc(true, false, false)), false},
		{"partitioned", LayoutOf(evoDesc(false, true, false)), false},
		{"versioned", LayoutOf(evoDesc(false, false, true)), false},
		{"field removed", Layout{Collection: "players", Strategy: "etf", Fields: []string{"name"}}, true},
		{"field added", Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city", "scores", "age"}}, true},
	} {
		if got := etf.SameBlocks(c.o); got != c.want {
			t.Errorf("%s: SameBlocks = %v, want %v", c.name, got, c.want)
		}
		if got := c.o.SameBlocks(etf); got != c.want {
			t.Errorf("%s (reversed): SameBlocks = %v, want %v", c.name, got, c.want)
		}
	}
	// Partitions compare as sets.
	a := Layout{Strategy: "etf", Partitions: []string{"a", "b"}}
	b := Layout{Strategy: "etf", Partitions: []string{"b", "a"}}
	if !a.SameBlocks(b) {
		t.Errorf("partitions in another order: SameBlocks = false")
	}
	if !slices.Equal(a.Partitions, []string{"a", "b"}) {
		t.Errorf("SameBlocks reordered the layout's partitions: %q", a.Partitions)
	}
}

func TestLayoutChanges(t *testing.T) {
	etf := LayoutOf(evoDesc(false, false, false))
	lookups := LayoutOf(evoDesc(false, false, false, evoEmail, evoCity))
	emailOnly := LayoutOf(evoDesc(false, false, false, evoEmail))
	notUnique := LayoutOf(evoDesc(false, false, false, &Lookup[evoPlayer]{Name: "email", Parts: 1, Fields: []string{"email"}}))
	for _, c := range []struct {
		name     string
		from, to Layout
		want     []string
	}{
		{"none", etf, etf, nil},
		{"etf -> eao", etf, LayoutOf(evoDesc(true, false, false)), []string{"strategy etf -> eao"}},
		{"whole -> partitioned", etf, LayoutOf(evoDesc(false, true, false)), []string{"scores: whole -> partitioned"}},
		{"partitioned -> whole", LayoutOf(evoDesc(true, true, false)), etf, []string{"strategy eao -> etf", "scores: partitioned -> whole"}},
		{"version added", etf, LayoutOf(evoDesc(false, false, true)), []string{`version entry "" -> "version"`}},
		{"lookups added", etf, lookups, []string{"lookup email(email) unique added", "lookup city(city) table added"}},
		{"lookup removed", lookups, emailOnly, []string{"lookup city(city) table removed"}},
		{"unique dropped", emailOnly, notUnique, []string{"lookup email(email) unique -> email(email)"}},
		{"fields", Layout{Strategy: "etf", Fields: []string{"name", "age"}}, Layout{Strategy: "etf", Fields: []string{"name", "nick"}}, []string{"field nick added", "field age removed"}},
	} {
		if got := c.from.Changes(c.to); !slices.Equal(got, c.want) {
			t.Errorf("%s: Changes = %q, want %q", c.name, got, c.want)
		}
	}
	// The build state of a lookup is no change.
	building := LayoutOf(evoDesc(false, false, false, evoEmail, evoCity))
	building.Lookups[0].Building, building.Lookups[0].Resume = true, []byte("p7")
	if got := building.Changes(lookups); got != nil {
		t.Errorf("a lookup being built against the same one complete: Changes = %q, want none", got)
	}
}

func TestDecodeSchema(t *testing.T) {
	rec, err := DecodeSchema(nil)
	if rec != nil || err != nil {
		t.Fatalf("DecodeSchema(nil) = %v, %v, want nil, nil", rec, err)
	}
	want := &SchemaRecord{
		Layout:  LayoutOf(evoDesc(true, true, true, evoEmail, evoCity)),
		History: []Layout{LayoutOf(evoDesc(false, false, false))},
	}
	want.Layout.Lookups[1].Building, want.Layout.Lookups[1].Resume = true, []byte{0, 1, 0xff}
	got, err := DecodeSchema(encodeSchema(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeSchema(encodeSchema(r)) = %+v, want %+v", got, want)
	}
	if _, err := DecodeSchema([]byte("{not json")); err == nil || !strings.Contains(err.Error(), "schema record") {
		t.Errorf("DecodeSchema of garbage: err = %v, want an error naming the schema record", err)
	}
}

func TestLayoutMismatch(t *testing.T) {
	err := LayoutMismatch("Get", "Player", "p1", "scores", "whole", "partitioned")
	if !errors.Is(err, ErrLayout) {
		t.Fatalf("LayoutMismatch is not ErrLayout: %v", err)
	}
	for _, s := range []string{"Get", "Player", "p1", "scores", "whole", "partitioned"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("LayoutMismatch %q does not name %q", err, s)
		}
	}
}

// schemaStore is a store that only keeps a schema record and a few
// blocks: what the evolution core asks of a store besides Ensure.
type schemaStore struct {
	Store[evoPlayer, string]
	rec     []byte
	blocks  []string // block keys, in listing order
	dropped []string
	saves   int
	loads   int
	// conflicts makes the next saves fail with ErrConflict after
	// changing nothing (another process wrote meanwhile).
	conflicts int
	// repairs records the options of each Repair call; dups makes Repair
	// report a unique conflict on lookup "email".
	repairs []RepairOptions
	dups    bool
	// migrated: the blocks MigrateBlocks finds in another layout.
	migrated map[string]bool
}

// Caps: a store whose lookups are all index tables (no LookupForms).
func (s *schemaStore) Caps() Caps { return Caps{} }

func (s *schemaStore) Ensure(context.Context) error { return nil }

func (s *schemaStore) LoadSchema(context.Context) ([]byte, error) {
	s.loads++
	return s.rec, nil
}

func (s *schemaStore) SaveSchema(_ context.Context, old, rec []byte) error {
	if s.conflicts > 0 {
		s.conflicts--
		return Fail("SaveSchema", "Player", nil, ErrConflict, nil)
	}
	if string(old) != string(s.rec) || (old == nil) != (s.rec == nil) {
		return Fail("SaveSchema", "Player", nil, ErrConflict, nil)
	}
	s.rec = slices.Clone(rec)
	s.saves++
	return nil
}

func (s *schemaStore) DropLookup(_ context.Context, l LookupLayout) error {
	s.dropped = append(s.dropped, l.Name)
	return nil
}

func (s *schemaStore) ReadBlocks(_ context.Context, _ string, after []byte, n int, _ bool) ([]*evoPlayer, []byte, bool, error) {
	var out []*evoPlayer
	var last []byte
	for _, id := range s.blocks {
		if id > string(after) && len(out) < n {
			out = append(out, &evoPlayer{ID: id})
			last = []byte(id)
		}
	}
	return out, last, last != nil && string(last) < s.blocks[len(s.blocks)-1], nil
}

// Repair walks the blocks a page of two at a time from the options'
// position, as the index engine does.
func (s *schemaStore) Repair(ctx context.Context) (RepairReport, error) {
	o := RepairOptionsOf(ctx)
	s.repairs = append(s.repairs, o)
	var rep RepairReport
	after := o.After
	for {
		items, last, more, err := s.ReadBlocks(ctx, "Repair", after, 2, false)
		if err != nil {
			return rep, err
		}
		rep.Aggregates += len(items)
		if len(items) > 0 && o.OnPage != nil {
			if err := o.OnPage(last, len(items)); err != nil {
				return rep, err
			}
		}
		if !more {
			break
		}
		after = last
	}
	if s.dups {
		rep.AddConflict("players.email", AppendString(nil, "x@y"), AppendString(nil, "a"), AppendString(nil, "b"))
	}
	return rep, nil
}

func (s *schemaStore) MigrateBlocks(_ context.Context, after []byte, n int, dryRun bool) ([]BlockMigration, []byte, bool, error) {
	var res []BlockMigration
	var last []byte
	for _, id := range s.blocks {
		if id > string(after) && len(res) < n {
			m := BlockMigration{ID: id}
			if s.migrated[id] {
				m.From, m.Migrated = "etf", true
				if !dryRun {
					delete(s.migrated, id)
				}
			}
			res = append(res, m)
			last = []byte(id)
		}
	}
	return res, last, last != nil && string(last) < s.blocks[len(s.blocks)-1], nil
}

func (s *schemaStore) record(t *testing.T) *SchemaRecord {
	t.Helper()
	rec, err := DecodeSchema(s.rec)
	if err != nil || rec == nil {
		t.Fatalf("schema record %q: %v", s.rec, err)
	}
	return rec
}

func TestEnsureRecordsLayout(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{}
	d := evoDesc(false, false, false, evoEmail, evoCity)
	r := NewRepo(d, Store[evoPlayer, string](s), quickLease)
	if err := r.gate(ctx, "GetByEmail", evoEmail); !errors.Is(err, ErrNotReady) {
		t.Fatalf("before EnsureIndexes: gate = %v, want ErrNotReady", err)
	}
	if err := r.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	// An empty collection: every lookup is complete at once.
	if rec := s.record(t); !reflect.DeepEqual(rec.Layout, LayoutOf(d)) || rec.History != nil {
		t.Fatalf("record after the first EnsureIndexes = %+v, want the layout %+v and no history", rec, LayoutOf(d))
	}
	if len(s.repairs) != 0 {
		t.Errorf("EnsureIndexes on an empty collection built lookups: %d Repair calls", len(s.repairs))
	}
	// EnsureIndexes again: nothing to write.
	saves := s.saves
	if err := r.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if s.saves != saves {
		t.Errorf("a second EnsureIndexes with the same layout saved the record again")
	}
	// Ready once: the gate sends nothing more.
	loads := s.loads
	for _, l := range []*Lookup[evoPlayer]{evoEmail, evoCity, nil} {
		if err := r.gate(ctx, "Get", l); err != nil {
			t.Fatalf("gate after EnsureIndexes: %v", err)
		}
	}
	if s.loads != loads {
		t.Errorf("the gate of a ready repository loaded the schema record %d times", s.loads-loads)
	}
}

func TestEnsureHistoryAndDrop(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{}
	v1 := evoDesc(false, false, false, evoEmail, evoCity)
	if err := NewRepo(v1, Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	// A repository in another layout, without lookup city, over the same
	// store; conflicting saves are retried.
	s.conflicts = 2
	v2 := evoDesc(true, false, false, evoEmail)
	if err := NewRepo(v2, Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	rec := s.record(t)
	if !reflect.DeepEqual(rec.Layout, LayoutOf(v2)) {
		t.Errorf("layout recorded = %+v, want %+v", rec.Layout, LayoutOf(v2))
	}
	if len(rec.History) != 1 || !reflect.DeepEqual(rec.History[0], LayoutOf(v1)) {
		t.Errorf("history = %+v, want the ETF layout", rec.History)
	}
	if !slices.Equal(s.dropped, []string{"city"}) {
		t.Errorf("dropped lookups = %q, want city", s.dropped)
	}
	// Back to v1: city is new again (built, from the first block) and
	// the EAO layout joins the history.
	s.blocks = []string{"a", "b", "c"}
	r1 := NewRepo(v1, Store[evoPlayer, string](s), quickLease)
	if err := r1.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.repairs) != 1 || s.repairs[0].After != nil {
		t.Fatalf("re-adding lookup city: Repair calls %+v, want one from the first block", s.repairs)
	}
	rec = s.record(t)
	if len(rec.History) != 2 || rec.History[1].Strategy != "eao" {
		t.Errorf("history = %+v, want etf then eao", rec.History)
	}
	for _, l := range rec.Layout.Lookups {
		if l.Building || l.Resume != nil {
			t.Errorf("after the build: lookup %+v still building", l)
		}
	}
	// Layouts that read blocks alike add nothing to the history.
	if err := NewRepo(evoDesc(false, false, false), Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if rec := s.record(t); len(rec.History) != 2 {
		t.Errorf("lookups removed: history = %+v, want it unchanged", rec.History)
	}
}

func TestEnsureHistoryBounded(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{}
	for i := range maxHistory + 5 {
		if err := NewRepo(evoDesc(i%2 == 1, false, false), Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rec := s.record(t); len(rec.History) != maxHistory {
		t.Errorf("history of %d layouts after %d changes, want at most %d", len(rec.History), maxHistory+4, maxHistory)
	}
}

func TestEnsureBuildsOverData(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{blocks: []string{"a", "b", "c", "d", "e"}}
	// Blocks without a record: nothing vouches for lookups, they are
	// built.
	d := evoDesc(false, false, false, evoEmail, evoCity)
	var seen []BuildProgress
	stop := errors.New("stop")
	bctx := WithBuildProgress(ctx, func(p BuildProgress) { seen = append(seen, p) })
	r := NewRepo(d, Store[evoPlayer, string](s), quickLease)
	// A build cut short after its first page keeps its position.
	s.repairs = nil
	cut := NewRepo(d, Store[evoPlayer, string](&cutStore{schemaStore: s, after: 1, err: stop}), quickLease)
	if err := cut.Ensure(bctx); !errors.Is(err, stop) {
		t.Fatalf("a build cut short: err = %v, want the page's error", err)
	}
	rec := s.record(t)
	for _, l := range rec.Layout.Lookups {
		if !l.Building || string(l.Resume) != "b" {
			t.Errorf("after a build cut after its first page: lookup %+v, want building from b", l)
		}
	}
	if err := r.gate(ctx, "GetByCity", evoCity); !errors.Is(err, ErrIndexBuilding) {
		t.Errorf("gate of a lookup being built = %v, want ErrIndexBuilding", err)
	}
	if err := r.gate(ctx, "Create", nil); !errors.Is(err, ErrIndexBuilding) {
		t.Errorf("gate of a write while a unique lookup is built = %v, want ErrIndexBuilding", err)
	}
	// The next EnsureIndexes resumes after b and completes.
	seen = nil
	if err := r.Ensure(bctx); err != nil {
		t.Fatal(err)
	}
	if n := len(s.repairs); n != 2 || string(s.repairs[1].After) != "b" {
		t.Fatalf("Repair calls %d, the last from %q: want 2, the second after b", n, s.repairs[n-1].After)
	}
	if len(seen) == 0 || !seen[len(seen)-1].Done || seen[len(seen)-1].Blocks != 3 {
		t.Errorf("progress of the resumed build = %+v, want 3 blocks then done", seen)
	}
	for _, p := range seen {
		if p.Collection != "players" || !slices.Equal(p.Lookups, []string{"email", "city"}) {
			t.Errorf("progress %+v: want collection players, lookups email and city", p)
		}
	}
	for _, l := range s.record(t).Layout.Lookups {
		if l.Building || l.Resume != nil {
			t.Errorf("after the build: lookup %+v", l)
		}
	}
	if err := r.gate(ctx, "GetByCity", evoCity); err != nil {
		t.Errorf("gate after the build: %v", err)
	}
}

func TestEnsureUniqueDuplicates(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{}
	if err := NewRepo(evoDesc(false, false, false), Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	s.blocks, s.dups = []string{"a", "b", "c"}, true
	d := evoDesc(false, false, false, evoEmail, evoCity)
	r := NewRepo(d, Store[evoPlayer, string](s), quickLease)
	err := r.Ensure(ctx)
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("unique lookup over duplicates: EnsureIndexes = %v, want ErrDuplicate", err)
	}
	for _, w := range []string{"x@y", "a", "b"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %q", err, w)
		}
	}
	// The layout the failed build replaced is recorded again (the fence
	// moved twice), so that the build still serving writes on.
	if rec := s.record(t); len(rec.Layout.Lookups) != 0 || rec.Fence != 3 {
		t.Errorf("after duplicates: recorded %d lookups at fence %d, want the replaced layout (none) at fence 3", len(rec.Layout.Lookups), rec.Fence)
	}
	if err := r.gate(ctx, "GetByEmail", evoEmail); !errors.Is(err, ErrNotReady) {
		t.Errorf("gate = %v, want ErrNotReady", err)
	}
	s.dups = false
	if err := r.Ensure(ctx); err != nil {
		t.Fatalf("duplicates resolved: %v", err)
	}
	if last := s.repairs[len(s.repairs)-1]; last.After != nil {
		t.Errorf("the build after duplicates started after %q, want the first block", last.After)
	}
	if err := r.gate(ctx, "GetByEmail", evoEmail); err != nil {
		t.Errorf("gate = %v", err)
	}
}

// cutStore is a schemaStore whose Repair stops after a number of pages
// with err, as a crash or a cancelled context would.
type cutStore struct {
	*schemaStore
	after int
	err   error
}

func (c *cutStore) Repair(ctx context.Context) (RepairReport, error) {
	o := RepairOptionsOf(ctx)
	pages := 0
	on := o.OnPage
	o.OnPage = func(last []byte, n int) error {
		if err := on(last, n); err != nil {
			return err
		}
		if pages++; pages == c.after {
			return c.err
		}
		return nil
	}
	return c.schemaStore.Repair(WithRepairOptions(ctx, o))
}

func TestMigrateClearsHistory(t *testing.T) {
	ctx := context.Background()
	s := &schemaStore{}
	if err := NewRepo(evoDesc(false, false, false), Store[evoPlayer, string](s), quickLease).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	s.blocks = []string{"a", "b", "c", "d", "e"}
	s.migrated = map[string]bool{"a": true, "c": true, "e": true}
	r := NewRepo(evoDesc(true, false, false), Store[evoPlayer, string](s), quickLease)
	if err := r.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	var batches int
	rep, err := r.Migrate(ctx, MigrateOptions{DryRun: true, Batch: 2, Progress: func(MigrateReport) { batches++ }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 5 || rep.Migrated != 3 || rep.Current != 2 || batches != 3 || string(rep.Resume) != "e" {
		t.Errorf("dry run: %+v after %d batches, want 5 scanned, 3 to migrate, 2 current in 3 batches, resume e", rep, batches)
	}
	if len(s.migrated) != 3 || len(s.record(t).History) != 1 {
		t.Fatalf("the dry run changed something: %v still to migrate, history %+v", s.migrated, s.record(t).History)
	}
	// A run resumed from a position leaves the history: it did not see
	// every block.
	if _, err := r.Migrate(ctx, MigrateOptions{Resume: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if s.migrated["c"] || s.migrated["e"] || !s.migrated["a"] || len(s.record(t).History) != 1 {
		t.Fatalf("a run resumed after b: left %v, history %+v; want a left and the history kept", s.migrated, s.record(t).History)
	}
	rep, err = r.Migrate(ctx, MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Migrated != 1 || rep.Current != 4 || len(s.record(t).History) != 0 {
		t.Errorf("a complete run: %+v, history %+v; want 1 migrated, 4 current and no history", rep, s.record(t).History)
	}
}

// quickLease is the layout lease of these tests' repositories (their
// store does not fence writes): an EnsureIndexes that records another
// layout waits two of it.
var quickLease = WithLayoutLease(time.Millisecond)
