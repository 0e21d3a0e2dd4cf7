package dynamostore_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
)

// The evolution tests of the adapter (issue 23): data written by one
// version of the evolution model (runtime/storetest/evolve) is read and
// written by another over the same tables, as after a regenerate.

// repoOf finds the runtime.Repo a generated repository embeds.
func repoOf[T any, K comparable](t *testing.T, repo any) runtime.Repo[T, K] {
	t.Helper()
	want := reflect.TypeFor[runtime.Repo[T, K]]()
	var find func(v reflect.Value, depth int) (runtime.Repo[T, K], bool)
	find = func(v reflect.Value, depth int) (runtime.Repo[T, K], bool) {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || depth > 3 {
			return runtime.Repo[T, K]{}, false
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Type() == want {
				return reflect.NewAt(want, unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(runtime.Repo[T, K]), true
			}
			if f.Kind() == reflect.Struct {
				if r, ok := find(f, depth+1); ok {
					return r, true
				}
			}
		}
		return runtime.Repo[T, K]{}, false
	}
	r, ok := find(reflect.ValueOf(repo), 0)
	if !ok {
		t.Fatalf("%T embeds no runtime.Repo", repo)
	}
	return r
}

// evo is one test's tables: every version of the model opens them.
type evo struct {
	t *testing.T
	c *dynamodb.Client
	o dynamostore.Options
}

// lease is the layout lease of the versions' repositories: short, so that
// an EnsureIndexes that records another layout waits little.
var lease = runtime.WithLayoutLease(20 * time.Millisecond)

// use records the layout of version r again (its EnsureIndexes, as after
// a rollback), so that its writes are not refused by the layout fence: a
// build writes once its EnsureIndexes recorded its layout, and then meets
// blocks another build wrote in another layout.
func (e *evo) use(r interface{ EnsureIndexes(context.Context) error }) {
	e.t.Helper()
	must(e.t, r.EnsureIndexes(ctx))
}

func newEvo(t *testing.T) *evo {
	s := dynalitetest.Shared(t)
	return &evo{t: t, c: s.Client(), o: dynamostore.Options{TablePrefix: s.Prefix(t)}}
}

func (e *evo) etf() *etf.PlayerDynamoRepository {
	r := etf.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(e.t, r.EnsureIndexes(ctx))
	return r
}

func (e *evo) eao() *eao.PlayerDynamoRepository {
	r := eao.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(e.t, r.EnsureIndexes(ctx))
	return r
}

func (e *evo) part() *part.PlayerDynamoRepository {
	r := part.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(e.t, r.EnsureIndexes(ctx))
	return r
}

func (e *evo) eaopart() *eaopart.PlayerDynamoRepository {
	r := eaopart.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(e.t, r.EnsureIndexes(ctx))
	return r
}

// raw is the item of block id of the players table.
func (e *evo) raw(id string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.o.TablePrefix + "players"), Key: strKey(id), ConsistentRead: aws.Bool(true)})
	must(e.t, err)
	return out.Item
}

// attrs are the attribute names of an item that its layout decides,
// sorted: all but the write token every write records (dynamostore.WriteAttr,
// checked by TestDeclaredAttributes).
func attrs(item map[string]types.AttributeValue) []string {
	var out []string
	for k := range item {
		if k != dynamostore.WriteAttr {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// player is the values every version holds, whatever its Go type.
type player struct {
	ID, Name, Email, City string
	Scores                []int // points, in order
}

// valuesOf reads the common values of a Player of any version.
func valuesOf(p any) player {
	v := reflect.ValueOf(p).Elem()
	out := player{ID: v.FieldByName("ID").String(), Name: v.FieldByName("Name").String(), Email: v.FieldByName("Email").String(), City: v.FieldByName("City").String()}
	s := v.FieldByName("Scores")
	for i := range s.Len() {
		out.Scores = append(out.Scores, int(s.Index(i).FieldByName("Points").Int()))
	}
	return out
}

func (e *evo) same(what string, got any, want player) {
	e.t.Helper()
	if g := valuesOf(got); !reflect.DeepEqual(g, want) {
		e.t.Fatalf("%s: read %+v, want %+v", what, g, want)
	}
}

// rootUpdate writes the root entry of block id of the eao version (an
// update of its fields, whose generated form is an Update of the root
// entry), as fn changes it.
func rootUpdate(t *testing.T, repo *eao.PlayerDynamoRepository, id string, fn func(*eao.Player)) {
	t.Helper()
	r := repoOf[eao.Player, string](t, repo)
	p, err := repo.Get(ctx, id)
	must(t, err)
	fn(p)
	must(t, r.Set(ctx, "Update", id, runtime.Set(r.D.Root, r.D.Root.Value(p))))
}

// setScores writes partition scores of block id whole (an entry-level
// write the generated code of the partitioned versions does not offer).
func setScores[T any](t *testing.T, repo any, id string, v any) error {
	t.Helper()
	r := repoOf[T, string](t, repo)
	return r.Set(ctx, "SetScores", id, runtime.Set(r.D.Field("scores"), v))
}

var mary = player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []int{3, 5}}

func etfMary() *etf.Player {
	return &etf.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []etf.Score{{Game: "g1", Points: 3}, {Game: "g2", Points: 5}}}
}

func partMary() *part.Player {
	return &part.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []part.Score{{Game: "g1", Points: 3}, {Game: "g2", Points: 5}}}
}

// TestEvolveStrategy: etf -> eao -> etf. Each version reads the other's
// blocks right; an EAO update converts an ETF block in its one request;
// an ETF field write on an EAO block is ErrLayout and writes nothing;
// Get then Put keeps every value.
func TestEvolveStrategy(t *testing.T) {
	e := newEvo(t)
	v1 := e.etf()
	must(t, v1.Create(ctx, etfMary()))
	v2 := e.eao()
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	e.same("eao Get of an etf block", got, mary)
	all, err := v2.GetMany(ctx, []string{"p1"})
	must(t, err)
	e.same("eao GetMany of an etf block", all["p1"], mary)

	// Get then Put: the block is now EAO, with no ETF entry left.
	must(t, v2.Put(ctx, got))
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "_root"}) {
		t.Fatalf("the eao Put left attributes %v, want [_id _root]", a)
	}
	back := e.etf()
	got1, err := back.Get(ctx, "p1")
	must(t, err)
	e.same("etf Get of an eao block", got1, mary)
	page, err := back.List(ctx, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 {
		t.Fatalf("etf List: %d items", len(page.Items))
	}
	e.same("etf List of an eao block", page.Items[0], mary)

	// An ETF entry written beside the root entry would be read by
	// neither version: refused, nothing written.
	before := e.raw("p1")
	err = back.SetName(ctx, "p1", "Anna")
	wantErr(t, err, runtime.ErrLayout, "etf SetName on an eao block")
	if after := e.raw("p1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused SetName changed the item:\n%v\n%v", before, after)
	}
	name := "Anna"
	wantErr(t, back.Update(ctx, "p1", etf.PlayerUpdate{Name: &name}), runtime.ErrLayout, "etf Update on an eao block")

	// The other way: an EAO update (of the root entry) on an ETF block
	// converts it.
	must(t, back.Put(ctx, got1)) // back to ETF
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "city", "email", "name", "scores"}) {
		t.Fatalf("the etf Put left attributes %v", a)
	}
	e.use(v2)
	rootUpdate(t, v2, "p1", func(p *eao.Player) { p.Name = name })
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "_root"}) {
		t.Fatalf("the eao Update left attributes %v, want [_id _root]", a)
	}
	anna := mary
	anna.Name = "Anna"
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.same("eao Get after the update", got, anna)
	got1, err = back.Get(ctx, "p1")
	must(t, err)
	e.same("etf Get after the eao update", got1, anna)
}

// TestEvolvePartitionStrategy: part <-> eaopart (the partition stays, the
// strategy changes). Reads are right both ways; an entry-level write
// leaves a block in the writer's layout or writes nothing, so one on a
// block of the other strategy that does not convert it is ErrLayout.
func TestEvolvePartitionStrategy(t *testing.T) {
	e := newEvo(t)
	v1 := e.part()
	must(t, v1.Create(ctx, partMary()))
	v2 := e.eaopart()
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	e.same("eaopart Get of a part block", got, mary)
	page, err := v2.ListScores(ctx, "p1", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 2 || page.Items[1].Points != 5 {
		t.Fatalf("eaopart ListScores of a part block: %+v", page)
	}
	before := e.raw("p1")
	_, err = v2.AppendScores(ctx, "p1", eaopart.Score{Game: "g3", Points: 7})
	wantErr(t, err, runtime.ErrLayout, "eaopart AppendScores on a part block")
	wantErr(t, v2.SetScoresAt(ctx, "p1", 0, eaopart.Score{Points: 4}), runtime.ErrLayout, "eaopart SetScoresAt on a part block")
	if after := e.raw("p1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused writes changed the item:\n%v\n%v", before, after)
	}
	// The root entry written whole converts the block.
	got.Name = "Anna"
	must(t, v2.Update(ctx, "p1", eaopart.PlayerUpdate{Root: got}))
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "_len", "_root", "scores"}) {
		t.Fatalf("the eaopart Update left attributes %v", a)
	}
	anna := mary
	anna.Name = "Anna"
	got1, err := v1.Get(ctx, "p1")
	must(t, err)
	e.same("part Get of the converted block", got1, anna)
	i, err := v2.AppendScores(ctx, "p1", eaopart.Score{Game: "g3", Points: 7})
	must(t, err)
	if i != 2 {
		t.Fatalf("AppendScores: index %d, want 2", i)
	}
	seven := anna
	seven.Scores = []int{3, 5, 7}
	got1, err = v1.Get(ctx, "p1")
	must(t, err)
	e.same("part Get after the eaopart append", got1, seven)
	page1, err := v1.ListScores(ctx, "p1", runtime.PageRequest{Limit: 2})
	must(t, err)
	if len(page1.Items) != 2 || page1.Items[1].Points != 5 || page1.Next == "" {
		t.Fatalf("part ListScores of an eaopart block: %+v", page1)
	}
	e.use(v1)
	// The ETF version's writes on the EAO block: refused.
	before = e.raw("p1")
	wantErr(t, v1.SetCity(ctx, "p1", "Oslo"), runtime.ErrLayout, "part SetCity on an eaopart block")
	wantErr(t, v1.SetScoresAt(ctx, "p1", 0, part.Score{Points: 4}), runtime.ErrLayout, "part SetScoresAt on an eaopart block")
	_, err = v1.AppendScores(ctx, "p1", part.Score{Points: 4})
	wantErr(t, err, runtime.ErrLayout, "part AppendScores on an eaopart block")
	if after := e.raw("p1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused writes changed the item:\n%v\n%v", before, after)
	}
	// Get then Put through the ETF version: ETF again.
	got1, err = v1.Get(ctx, "p1")
	must(t, err)
	must(t, v1.Put(ctx, got1))
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "_len", "city", "email", "name", "scores"}) {
		t.Fatalf("the part Put left attributes %v", a)
	}
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.same("eaopart Get after the part Put", got, seven)
}

// TestEvolveWholeToPartition: etf (scores whole) -> part (scores
// partitioned) and back.
func TestEvolveWholeToPartition(t *testing.T) {
	e := newEvo(t)
	v1 := e.etf()
	must(t, v1.Create(ctx, etfMary()))
	v2 := e.part()
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	e.same("part Get of an etf block", got, mary)
	page, err := v2.ListScores(ctx, "p1", runtime.PageRequest{Limit: 1})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].Points != 3 || page.Next == "" {
		t.Fatalf("part ListScores of a whole list: %+v", page)
	}
	page, err = v2.ListScores(ctx, "p1", runtime.PageRequest{Limit: 1, Cursor: page.Next})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].Points != 5 || page.Next != "" {
		t.Fatalf("part ListScores of a whole list, page 2: %+v", page)
	}

	// Element writes on the whole list: refused, nothing written.
	before := e.raw("p1")
	_, err = v2.AppendScores(ctx, "p1", part.Score{Game: "g3", Points: 7})
	wantErr(t, err, runtime.ErrLayout, "part AppendScores on a whole list")
	wantErr(t, v2.SetScoresAt(ctx, "p1", 0, part.Score{Points: 1}), runtime.ErrLayout, "part SetScoresAt on a whole list")
	if after := e.raw("p1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused writes changed the item:\n%v\n%v", before, after)
	}
	got1, err := v1.Get(ctx, "p1")
	must(t, err)
	e.same("etf Get after the refused writes", got1, mary)

	// The whole list written with its count converts it (the block had
	// no _len map).
	must(t, setScores[part.Player](t, v2, "p1", []part.Score{{Game: "g1", Points: 3}, {Game: "g2", Points: 5}, {Game: "g3", Points: 7}}))
	seven := mary
	seven.Scores = []int{3, 5, 7}
	i, err := v2.AppendScores(ctx, "p1", part.Score{Game: "g4", Points: 9})
	must(t, err)
	if i != 3 {
		t.Fatalf("AppendScores after the conversion: index %d, want 3", i)
	}
	nine := seven
	nine.Scores = []int{3, 5, 7, 9}
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.same("part Get after the conversion", got, nine)
	got1, err = v1.Get(ctx, "p1")
	must(t, err)
	e.same("etf Get of the partitioned block", got1, nine)

	// Back: the ETF version writes the list whole, and its count goes.
	back := e.etf()
	must(t, back.SetScores(ctx, "p1", []etf.Score{{Points: 1}}))
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "city", "email", "name", "scores"}) {
		t.Fatalf("the etf SetScores left attributes %v", a)
	}
	one := mary
	one.Scores = []int{1}
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.same("part Get after the etf SetScores", got, one)
	// Get then Put in each version keeps every value.
	got1, err = back.Get(ctx, "p1")
	must(t, err)
	must(t, back.Put(ctx, got1))
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.use(v2)
	must(t, v2.Put(ctx, got))
	got1, err = back.Get(ctx, "p1")
	must(t, err)
	e.same("etf Get after the part Put", got1, one)
}

// TestEvolveEAOWholeToPartition: eao (scores whole inside the root entry)
// -> eaopart and part.
func TestEvolveEAOWholeToPartition(t *testing.T) {
	e := newEvo(t)
	v1 := e.eao()
	must(t, v1.Create(ctx, &eao.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []eao.Score{{Points: 3}, {Points: 5}}}))
	v2 := e.eaopart()
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	e.same("eaopart Get of an eao block", got, mary)
	v3 := e.part()
	got3, err := v3.Get(ctx, "p1")
	must(t, err)
	e.same("part Get of an eao block", got3, mary)
	page, err := v2.ListScores(ctx, "p1", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 2 || page.Items[1].Points != 5 {
		t.Fatalf("eaopart ListScores of a list inside the root entry: %+v", page)
	}
	// Backwards, a page of one, from the list inside the root entry.
	desc, err := v2.ListScores(ctx, "p1", runtime.PageRequest{Limit: 1, Desc: true})
	must(t, err)
	if len(desc.Items) != 1 || desc.Items[0].Points != 5 || desc.Next == "" {
		t.Fatalf("eaopart ListScores of a list inside the root entry, descending: %+v", desc)
	}
	desc, err = v2.ListScores(ctx, "p1", runtime.PageRequest{Limit: 1, Desc: true, Cursor: desc.Next})
	must(t, err)
	if len(desc.Items) != 1 || desc.Items[0].Points != 3 || desc.Next != "" {
		t.Fatalf("eaopart ListScores of a list inside the root entry, descending, second page: %+v", desc)
	}
	e.use(v2)
	before := e.raw("p1")
	_, err = v2.AppendScores(ctx, "p1", eaopart.Score{Points: 7})
	wantErr(t, err, runtime.ErrLayout, "eaopart AppendScores on a list inside the root entry")
	wantErr(t, setScores[eaopart.Player](t, v2, "p1", []eaopart.Score{{Points: 1}}), runtime.ErrLayout, "eaopart SetScores on a list inside the root entry")
	e.use(v3)
	wantErr(t, setScores[part.Player](t, v3, "p1", []part.Score{{Points: 1}}), runtime.ErrLayout, "part SetScores on a list inside the root entry")
	if after := e.raw("p1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused writes changed the item:\n%v\n%v", before, after)
	}
	// Get then Put converts it.
	e.use(v2)
	must(t, v2.Put(ctx, got))
	got1, err := v1.Get(ctx, "p1")
	must(t, err)
	e.same("eao Get of an eaopart block", got1, mary)
	// The eao version's root update converts it back (its _len goes).
	e.use(v1)
	rootUpdate(t, v1, "p1", func(p *eao.Player) { p.Name = "Anna" })
	if a := attrs(e.raw("p1")); !slices.Equal(a, []string{"_id", "_root"}) {
		t.Fatalf("the eao Update left attributes %v, want [_id _root]", a)
	}
	anna := mary
	anna.Name = "Anna"
	got, err = v2.Get(ctx, "p1")
	must(t, err)
	e.same("eaopart Get after the eao update", got, anna)
}

// TestEvolveVersion: a version added to existing data: a block without a
// version entry reads version 0, Get then Put sets 1, and a Put of
// version 0 over a block that has a version is still ErrConflict.
func TestEvolveVersion(t *testing.T) {
	e := newEvo(t)
	must(t, e.etf().Create(ctx, etfMary()))
	v2 := versioned.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(t, v2.EnsureIndexes(ctx))
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	if got.Version != 0 {
		t.Fatalf("a block without a version entry read version %d, want 0", got.Version)
	}
	e.same("versioned Get", got, mary)
	must(t, v2.Put(ctx, got))
	if got.Version != 1 {
		t.Fatalf("Put of version 0 over an unversioned block: version %d, want 1", got.Version)
	}
	again, err := v2.Get(ctx, "p1")
	must(t, err)
	if again.Version != 1 {
		t.Fatalf("read version %d, want 1", again.Version)
	}
	stale := *again
	stale.Version = 0
	wantErr(t, v2.Put(ctx, &stale), runtime.ErrConflict, "Put of version 0 over a versioned block")
	must(t, v2.Put(ctx, again))
	if again.Version != 2 {
		t.Fatalf("second Put: version %d, want 2", again.Version)
	}
}

// TestEvolveVersionIfVersion: an update with IfVersion on a block without
// a version entry takes it as version 0.
func TestEvolveVersionIfVersion(t *testing.T) {
	e := newEvo(t)
	must(t, e.etf().Create(ctx, etfMary()))
	v2 := versioned.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(t, v2.EnsureIndexes(ctx))
	name := "Anna"
	wantErr(t, v2.Update(ctx, "p1", versioned.PlayerUpdate{Name: &name, IfVersion: 1}), runtime.ErrConflict, "IfVersion 1 on a block at version 0")
	must(t, v2.Update(ctx, "p1", versioned.PlayerUpdate{Name: &name}))
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	if got.Version != 1 || got.Name != "Anna" {
		t.Fatalf("after the update: %+v", got)
	}
}

// TestEvolveMigrate: MigrateBlocks rewrites the blocks of an older layout,
// a dry run writes nothing, a second run finds everything current.
func TestEvolveMigrate(t *testing.T) {
	e := newEvo(t)
	v1 := e.etf()
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		p := etfMary()
		p.ID = id
		must(t, v1.Create(ctx, p))
	}
	v2 := e.eao()
	r := repoOf[eao.Player, string](t, v2)
	before := map[string]map[string]types.AttributeValue{}
	for _, id := range ids {
		before[id] = e.raw(id)
	}
	var progress int
	rep, err := r.Migrate(ctx, runtime.MigrateOptions{DryRun: true, Batch: 2, Progress: func(runtime.MigrateReport) { progress++ }})
	must(t, err)
	if rep.Scanned != 5 || rep.Migrated != 5 || rep.Current != 0 || len(rep.Failed) != 0 {
		t.Fatalf("dry run: %+v", rep)
	}
	if progress < 3 {
		t.Fatalf("dry run of 5 blocks in batches of 2: %d progress calls", progress)
	}
	for _, id := range ids {
		if after := e.raw(id); !reflect.DeepEqual(after, before[id]) {
			t.Fatalf("the dry run changed block %s", id)
		}
	}
	rep, err = r.Migrate(ctx, runtime.MigrateOptions{Batch: 2})
	must(t, err)
	if rep.Scanned != 5 || rep.Migrated != 5 || len(rep.Failed) != 0 {
		t.Fatalf("migration: %+v", rep)
	}
	for _, id := range ids {
		if a := attrs(e.raw(id)); !slices.Equal(a, []string{"_id", "_root"}) {
			t.Fatalf("block %s after the migration: attributes %v", id, a)
		}
		got, err := v1.Get(ctx, id)
		must(t, err)
		want := mary
		want.ID = id
		e.same("etf Get after the migration", got, want)
	}
	rep, err = r.Migrate(ctx, runtime.MigrateOptions{})
	must(t, err)
	if rep.Scanned != 5 || rep.Current != 5 || rep.Migrated != 0 || len(rep.Failed) != 0 {
		t.Fatalf("second migration: %+v", rep)
	}
}

// TestEvolveMigrateLookups: a migration of blocks with lookups keeps
// their lookup stamp (a rewrite changes no value): the lookups stay right,
// and current blocks are not written.
func TestEvolveMigrateLookups(t *testing.T) {
	e := newEvo(t)
	e.o.IndexTables = true // the index items of city, which is otherwise a GSI
	v1 := lookups.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(t, v1.EnsureIndexes(ctx))
	must(t, v1.Create(ctx, &lookups.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []lookups.Score{{Points: 3}}}))
	// The partitioned version of the same model with lookups is not
	// generated: migrate partitioned -> whole with the etf version over a
	// part block, and check the lookups version still finds it.
	must(t, e.part().Create(ctx, &part.Player{ID: "p2", Name: "Ann", Email: "ann@example.com", City: "Oslo", Scores: []part.Score{{Points: 1}, {Points: 2}}}))
	r := repoOf[lookups.Player, string](t, v1)
	must(t, v1.EnsureIndexes(ctx)) // p2 came without the lookups' protocol: build
	stamp := e.raw("p1")["_inc"]
	rep, err := r.Migrate(ctx, runtime.MigrateOptions{})
	must(t, err)
	if rep.Migrated != 1 || rep.Current != 1 || len(rep.Failed) != 0 {
		t.Fatalf("migration: %+v", rep)
	}
	if _, ok := e.raw("p2")["_len"]; ok {
		t.Fatal("the migration left the count of the partition")
	}
	if !reflect.DeepEqual(e.raw("p1")["_inc"], stamp) {
		t.Fatal("a current block changed")
	}
	got, err := v1.GetByEmail(ctx, "ann@example.com")
	must(t, err)
	if got.ID != "p2" || len(got.Scores) != 2 {
		t.Fatalf("GetByEmail after the migration: %+v", got)
	}
	page, err := v1.ListByCity(ctx, "Oslo", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "p2" {
		t.Fatalf("ListByCity after the migration: %+v", page.Items)
	}
}

// TestSchemaRecord: SaveSchema is a compare-and-set; LoadSchema reads what
// it stored; a missing table is ErrNotReady.
func TestSchemaRecord(t *testing.T) {
	e := newEvo(t)
	r := repoOf[etf.Player, string](t, etf.NewPlayerDynamoRepository(e.c, e.o, lease))
	err := r.Ensure(ctx)
	must(t, err)
	s := r.S
	raw, err := s.LoadSchema(ctx)
	must(t, err)
	rec, err := runtime.DecodeSchema(raw)
	must(t, err)
	if rec == nil || rec.Layout.Strategy != "etf" || rec.Layout.Collection != "players" {
		t.Fatalf("the record EnsureIndexes saved: %+v", rec)
	}
	wantErr(t, s.SaveSchema(ctx, nil, []byte("x")), runtime.ErrConflict, "SaveSchema over a record, expecting none")
	wantErr(t, s.SaveSchema(ctx, []byte("other"), []byte("x")), runtime.ErrConflict, "SaveSchema expecting another record")
	must(t, s.SaveSchema(ctx, raw, []byte("x")))
	got, err := s.LoadSchema(ctx)
	must(t, err)
	if string(got) != "x" {
		t.Fatalf("LoadSchema: %q", got)
	}
	// Without the tables: ErrNotReady.
	fresh := newEvo(t)
	l := lookups.NewPlayerDynamoRepository(fresh.c, fresh.o)
	_, err = l.GetByEmail(ctx, "mary@example.com")
	wantErr(t, err, runtime.ErrNotReady, "GetByEmail before EnsureIndexes")
}

// TestDropLookup: a lookup the model no longer has is dropped by
// EnsureIndexes; DropLookup is idempotent.
func TestDropLookup(t *testing.T) {
	e := newEvo(t)
	e.o.IndexTables = true // the index items of city, which is otherwise a GSI
	v1 := lookups.NewPlayerDynamoRepository(e.c, e.o, lease)
	must(t, v1.EnsureIndexes(ctx))
	must(t, v1.Create(ctx, &lookups.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome"}))
	must(t, v1.Create(ctx, &lookups.Player{ID: "p2", Name: "Ann", Email: "ann@example.com", City: "Rome"}))
	idx := func(l string) int {
		out, err := e.c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(e.o.TablePrefix + dynamostore.IndexTable("players")), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("p = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: l}},
		})
		must(t, err)
		return len(out.Items)
	}
	if idx("email") != 2 || idx("city") != 2 {
		t.Fatalf("index items: email %d, city %d", idx("email"), idx("city"))
	}
	e.etf() // the model without lookups: EnsureIndexes drops them
	if idx("email") != 0 || idx("city") != 0 {
		t.Fatalf("index items after the lookups were dropped: email %d, city %d", idx("email"), idx("city"))
	}
	r := repoOf[etf.Player, string](t, etf.NewPlayerDynamoRepository(e.c, e.o, lease))
	must(t, r.S.DropLookup(ctx, runtime.LookupLayout{Name: "email", Fields: []string{"email"}, Unique: true}))
	// A store that never had an index table.
	fresh := newEvo(t)
	r = repoOf[etf.Player, string](t, etf.NewPlayerDynamoRepository(fresh.c, fresh.o))
	must(t, r.S.DropLookup(ctx, runtime.LookupLayout{Name: "email"}))
	// Back to the lookups: built from the blocks again.
	must(t, v1.EnsureIndexes(ctx))
	got, err := v1.GetByEmail(ctx, "ann@example.com")
	must(t, err)
	if got.ID != "p2" {
		t.Fatalf("GetByEmail after the rebuild: %+v", got)
	}
}

// targetHook is an HTTP client that calls before, once, ahead of the first
// request of the DynamoDB operation op (its X-Amz-Target) sent once armed.
type targetHook struct {
	base   dynamodb.HTTPClient
	op     string
	armed  atomic.Bool
	once   sync.Once
	before func()
}

func (h *targetHook) Do(req *http.Request) (*http.Response, error) {
	if h.armed.Load() && strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+h.op) {
		h.once.Do(h.before)
	}
	return h.base.Do(req)
}

// TestEvolveMigrateKeepsAWriteInBetween: a write lands on a block between
// Migrate's read of it and its rewrite, on an element far past what a
// condition expression can compare (the 400th of a partition, in an item
// of tens of KB): the rewrite, conditioned on the block's write token
// (_w), fails, Migrate reads the block again and rewrites it with the
// write kept. (Before the token, the condition compared the values only
// up to the expression limit and then the item's size: the write was
// overwritten.) The write is made as every write of a repository makes it:
// the element and a fresh token in one UpdateItem.
func TestEvolveMigrateKeepsAWriteInBetween(t *testing.T) {
	e := newEvo(t)
	v1 := e.part()
	p := partMary()
	p.Scores = nil
	for i := range 400 {
		p.Scores = append(p.Scores, part.Score{Game: fmt.Sprintf("game-%03d", i), Points: i})
	}
	must(t, v1.Create(ctx, p))
	item := e.raw("p1")
	elem := item["scores"].(*types.AttributeValueMemberL).Value[399].(*types.AttributeValueMemberM)
	changed := map[string]types.AttributeValue{}
	for k, v := range elem.Value {
		changed[k] = v
	}
	var points string
	for k, v := range changed {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			points = k
			_ = n
		}
	}
	if points == "" {
		t.Fatalf("element 399 has no number attribute: %v", elem.Value)
	}
	changed[points] = &types.AttributeValueMemberN{Value: "988"} // as long as 399: the item keeps its size
	hook := &targetHook{op: "PutItem", before: func() {
		_, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(e.o.TablePrefix + "players"),
			Key:                       strKey("p1"),
			UpdateExpression:          aws.String("SET #s[399] = :v, #w = :w"),
			ExpressionAttributeNames:  map[string]string{"#s": "scores", "#w": dynamostore.WriteAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberM{Value: changed}, ":w": &types.AttributeValueMemberS{Value: "injected"}},
		})
		if err != nil {
			t.Errorf("the write in between: %v", err)
		}
	}}
	c := dynamodb.New(e.c.Options(), func(o *dynamodb.Options) { hook.base = o.HTTPClient; o.HTTPClient = hook })
	v2 := eaopart.NewPlayerDynamoRepository(c, e.o, lease)
	must(t, v2.EnsureIndexes(ctx))
	hook.armed.Store(true) // the next PutItem is Migrate's rewrite
	rep, err := repoOf[eaopart.Player, string](t, v2).Migrate(ctx, runtime.MigrateOptions{})
	must(t, err)
	hook.once.Do(func() { t.Error("Migrate sent no PutItem") })
	if rep.Migrated != 1 || len(rep.Failed) != 0 {
		t.Fatalf("Migrate: %+v, want the block migrated", rep)
	}
	got, err := v2.Get(ctx, "p1")
	must(t, err)
	if len(got.Scores) != 400 || got.Scores[399].Points != 988 || got.Scores[398].Points != 398 {
		t.Fatalf("after Migrate: %d scores, the last %+v; want the write in between kept (points 988)", len(got.Scores), got.Scores[len(got.Scores)-1])
	}
	if a := attrs(e.raw("p1")); !slices.Contains(a, "_root") {
		t.Fatalf("the block after Migrate is not in the new layout: %v", a)
	}
}
