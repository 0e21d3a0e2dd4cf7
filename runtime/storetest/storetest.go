// Package storetest is the store-independent conformance suite of the store
// contract (runtime.Store): it runs every operation and every documented
// error of the generated repositories of a model that uses every feature
// (package model) against one store. A store takes part with one Harness
// (how to open an empty database, what the store promises), written once
// per store (runtime/<store>store/<store>harness; MongoDB's in
// integration/mongotest):
// the same value drives this suite, Deadlines, RunSizes and the examples'
// suites (example/game/gametest, example/hotel/hoteltest), and no suite is
// copied per store.
//
//	func TestConformance(t *testing.T) { storetest.Run(t, boltharness.Harness()) }
//
// What the suite expects is what the generated TRepository methods document
// (runtime/storetest/model/*_noam.gen.go) and what runtime/store.go says of
// the contract.
//
// The environment variable NOAM_STORETEST_RUN, when set, is a regular
// expression: Run and RunSizes then run only the subtests whose names it
// matches. scripts/test-all.sh runs every test once without -race, then
// only the concurrent subtests (and the batch writes, whose adapters fan
// out) again under -race this way: go test's -run cannot pick those
// subtests and other packages' top-level race tests in one pattern.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// Harness is what one store gives every suite: how to open an empty
// database of the store, and what the store promises.
type Harness struct {
	// Name names the store in messages and subtests ("bolt").
	Name string
	// Open returns an empty database of the store; it is called once per
	// subtest and registers its clean-up with t.Cleanup. Each suite makes
	// its model's repositories over it (EnsureIndexes not yet called).
	Open func(t *testing.T) DB
	// Caps is what the store declares (runtime.Store.Caps): OrderedScan
	// makes the suite check List and All order.
	Caps runtime.Caps
	// AtomicLookupsPerAggregate: the store's AtomicLookups depends on the
	// aggregate (MongoDB: true when all its lookups are native indexes),
	// so the suite leaves it out of the comparison with Caps.
	AtomicLookupsPerAggregate bool
	// Concurrent runs the concurrency tests: only for stores whose writes
	// are atomic under concurrency.
	Concurrent bool
	// NotConcurrent says why Concurrent is not set, for the skip message.
	NotConcurrent string
	// TimePrecision is the precision the store keeps time.Time values at
	// (they also come back in UTC); 0 means a millisecond.
	TimePrecision time.Duration
	// DropClaim, optional, removes behind the repositories' back the claim
	// of encoded value (runtime.AppendString...) of unique lookup lookup
	// ("code") of collection ("matches") in db: the index entry or claim
	// that makes the store refuse the value to a second aggregate, so that
	// the suite can give it to two (as a lost claim would) and check how
	// Repair resolves that. Nil skips that check (a store that enforces
	// unique values itself, such as MongoDB's unique indexes).
	DropClaim func(t *testing.T, db DB, collection, lookup string, value []byte)
	// PauseReadsPass: reads still run while paused (DB.Pause; bbolt:
	// readers never wait for the write lock), so Deadlines lets them
	// succeed.
	PauseReadsPass bool
	// Corrupt overwrites the stored value of entry (a top-level field's
	// key, e.g. "code") of block id (a string key) of collection
	// ("matches") in db, behind the repository's back, with bytes (or a
	// value of another type) the adapter cannot decode: for the
	// unreadable-block subtest (RELIABILITY.md, "Depth and unreadable
	// blocks").
	Corrupt func(t *testing.T, db DB, collection, id, entry string)
	// Declaration is the store's declaration of its layout and requests
	// (runtime/<store>store/layout), and Requests counts the requests the
	// clients of the databases Open returned have sent so far (a command,
	// a pipeline or a script run each, as the declaration counts them):
	// the DeclaredRequests subtest compares the two. Mode is the
	// deployment (access.Store.Modes) the harness runs; Tables, when set,
	// says which lookups the store keeps in index tables whatever their
	// table option (MongoDB's IndexTables and UniqueTables options); Facts
	// gives the terms that depend on the deployment
	// (access.IfProjectionRefused).
	// Batches: the store writes a batch (CreateMany, PutMany, DeleteMany)
	// of the model's Match blocks in fewer round trips than one per block,
	// which the Batch subtest checks.
	Batches bool
	// SinglePuts: the store writes PutMany of versioned blocks with the
	// single calls although it batches the rest (MongoDB: a bulkWrite does
	// not say which replacement its version condition refused).
	SinglePuts bool
	// ExpiringCounts: the store counts an aggregate with an expires field
	// natively (runtime.CountStore), the expired blocks left out by the
	// repository's clock: Count, and CountBy of a lookup kept atomically
	// with its blocks or on a native index. The Expiry subtest checks it.
	ExpiringCounts bool
	Declaration    *access.Store
	Requests       func() int
	Mode           access.Mode
	Tables         func(access.Lookup) bool
	Facts          map[access.Term]int
}

// DB is an empty database of one store, as Harness.Open returns it. A
// suite makes its model's repositories over it with the model's generated
// store-independent constructors (Opener), which pick the store by Handle.
type DB struct {
	// Store names the store (its Caps.Name: "bolt", "redis").
	Store string
	// Handle is what the store's generated constructors take: *bbolt.DB,
	// redis.UniversalClient, *dynamodb.Client, *mongo.Database.
	Handle any
	// Options are the store options every repository over the database is
	// made with (the test's DynamoDB table-name prefix, the MongoDB lookup
	// mapping under test), before the suite's own.
	Options []runtime.Option
	// Pause, set when the database is the test's own (its own server or
	// bbolt file), stops it from answering (a stopped server, a held write
	// lock) until resume is called: what Deadlines needs.
	Pause func(t testing.TB) (resume func())
}

// Opener makes a suite's repositories (S) over a database of any store,
// with its model's generated store-independent constructors
// (model.NewMatchRepository), which pick the store by the handle's type.
// So a suite names no store, and a new store runs it with no entry here.
type Opener[S any] func(handle any, opts ...runtime.Option) (S, error)

// Make returns what constructor makes over handle with opts, and keeps the
// first error in *err: a suite's Opener of several repositories is one
// composite literal of Make calls.
func Make[R any](err *error, constructor func(any, ...runtime.Option) (R, error), handle any, opts []runtime.Option) R {
	r, e := constructor(handle, opts...)
	if e != nil && *err == nil {
		*err = e
	}
	return r
}

// On returns the repositories of db's store over db, made with the
// database's options and then opts.
func (c Opener[S]) On(t testing.TB, db DB, opts ...runtime.Option) S {
	t.Helper()
	s, err := c(db.Handle, append(slices.Clip(db.Options), opts...)...)
	if err != nil {
		t.Fatalf("storetest: the model's repositories over the %s database: %v", db.Store, err)
	}
	return s
}

// Open opens an empty database of h and returns the repositories the
// constructor of its store makes over it.
func (c Opener[S]) Open(t *testing.T, h Harness) (S, DB) {
	db := h.Open(t)
	return c.On(t, db), db
}

// Repos are the generated repositories of the model, over one database.
type Repos struct {
	Matches  model.MatchRepository
	Journals model.JournalRepository
	Cards    model.CardRepository
	Replies  model.ReplyRepository
}

// env is what each subtest gets.
type env struct {
	h  Harness
	db DB
	Repos
}

// open opens the model's repositories on the store of h, and runs their
// EnsureIndexes when ensure is set. Repositories whose EnsureIndexes the
// subtest runs get a short layout lease (shortLease).
func open(t *testing.T, h Harness, ensure bool) *env {
	db := h.Open(t)
	if !ensure {
		db.Options = append(slices.Clip(db.Options), runtime.WithLayoutLease(shortLease))
	}
	e := &env{h: h, db: db, Repos: repos.On(t, db)}
	if ensure {
		e.ensure(t)
	}
	return e
}

// shortLease is the layout lease of the repositories of the start-up and
// evolution subtests, which run EnsureIndexes themselves. On stores
// without fenced writes an EnsureIndexes that records another layout, or
// builds lookups over blocks written before it (StartUpBeforeEnsureIndexes
// writes a Journal first), waits out two leases, 2 s each by default. In
// most of these subtests nothing writes while EnsureIndexes records its
// layout, so the lease bounds no write in flight; the rolling deploys and
// the lookup builds under writers, where writes are in flight, give their
// repositories rollingLease. The other subtests keep the default lease
// but DeclaredRequests, which counts the requests a call sends: its
// repositories hold an hour's lease, as a write past its lease reads the
// schema record again.
const shortLease = 50 * time.Millisecond

type subtest struct {
	name string
	fn   func(t *testing.T, e *env)
	// concurrent subtests run only when Harness.Concurrent is set.
	concurrent bool
	// startUp subtests get repositories whose EnsureIndexes has not run.
	startUp bool
}

// Run runs the whole suite against the store of h.
func Run(t *testing.T, h Harness) {
	var all []subtest
	all = append(all, crudTests...)
	all = append(all, entryTests...)
	all = append(all, listTests...)
	all = append(all, descTests...)
	all = append(all, lookupTests...)
	all = append(all, counterTests...)
	all = append(all, miscTests...)
	all = append(all, accessTests...)
	all = append(all, uuidTests...)
	all = append(all, depthTests...)
	all = append(all, concurrentTests...)
	all = append(all, regressionTests...)
	all = append(all, sizeTests...)
	all = append(all, startUpTests...)
	all = append(all, hookTests...)
	all = append(all, stampTests...)
	all = append(all, expiryTests...)
	all = append(all, countTests...)
	all = append(all, batchTests...)
	all = append(all, addTests...)
	runTests(t, h, all)
}

// runTests runs the subtests all against the store of h.
func runTests(t *testing.T, h Harness, all []subtest) {
	if h.Open == nil {
		t.Fatal("storetest: Harness.Open is nil")
	}
	only, err := onlySubtests()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range all {
		if only != nil && !only.MatchString(st.name) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			if st.concurrent && !h.Concurrent {
				why := h.NotConcurrent
				if why == "" {
					why = "the harness does not declare concurrent writes atomic"
				}
				t.Skipf("%s: %s", h.Name, why)
			}
			st.fn(t, open(t, h, !st.startUp))
		})
	}
}

// onlySubtests returns the NOAM_STORETEST_RUN expression, nil when it is
// not set.
func onlySubtests() (*regexp.Regexp, error) {
	expr := os.Getenv("NOAM_STORETEST_RUN")
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("storetest: NOAM_STORETEST_RUN: %v", err)
	}
	return re, nil
}

// Subtests lists the names of the suite's subtests, in order.
func Subtests() []string {
	var out []string
	for _, g := range [][]subtest{crudTests, entryTests, listTests, descTests, lookupTests, counterTests, miscTests, concurrentTests, regressionTests, sizeTests, depthTests, startUpTests, hookTests, stampTests, expiryTests, countTests, batchTests, addTests} {
		for _, st := range g {
			out = append(out, st.name)
		}
	}
	return out
}

var bg = context.Background()

func (e *env) ensure(t *testing.T) {
	t.Helper()
	must(t, e.Matches.EnsureIndexes(bg))
	must(t, e.Journals.EnsureIndexes(bg))
	must(t, e.Cards.EnsureIndexes(bg))
	must(t, e.Replies.EnsureIndexes(bg))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails t unless err is of the given kind.
func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

// checkErr is wantErr that goes on.
func checkErr(t *testing.T, err, kind error, what string) bool {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: got error %v, want %v", what, err, kind)
		return false
	}
	return true
}

// noPanic runs fn and fails t if it panics.
func noPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
		}
	}()
	fn()
}

// ---- comparing aggregates

var timeType = reflect.TypeFor[time.Time]()

// norm returns a deep copy of v in the form every store must return it:
// times in UTC at the store's precision, empty slices and maps as nil
// (a nil slice is stored as an empty one, and either reads back).
func (e *env) norm(v any) any {
	p := e.h.TimePrecision
	if p == 0 {
		p = time.Millisecond
	}
	return normValue(reflect.ValueOf(v), p).Interface()
}

func normValue(v reflect.Value, p time.Duration) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(normValue(v.Elem(), p))
		return n
	case reflect.Struct:
		if v.Type() == timeType {
			tm := v.Interface().(time.Time)
			return reflect.ValueOf(tm.UTC().Truncate(p))
		}
		n := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if n.Field(i).CanSet() {
				n.Field(i).Set(normValue(v.Field(i), p))
			}
		}
		return n
	case reflect.Slice:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(normValue(v.Index(i), p))
		}
		return n
	case reflect.Map:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			n.SetMapIndex(it.Key(), normValue(it.Value(), p))
		}
		return n
	}
	return v
}

// same reports whether a and b are equal once normalised.
func (e *env) same(a, b any) bool { return reflect.DeepEqual(e.norm(a), e.norm(b)) }

// wantSame fails t unless got equals want once normalised.
func (e *env) wantSame(t *testing.T, what string, got, want any) {
	t.Helper()
	if !e.same(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, show(e.norm(got)), show(e.norm(want)))
	}
}

// show formats a value for failure messages, following pointers (in JSON
// where it can).
func show(v any) string {
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return fmt.Sprintf("&%+v", rv.Elem().Interface())
	}
	return fmt.Sprintf("%+v", v)
}

// ---- the state of the whole database

// state is every block of every collection, normalised, by block key.
type state map[string]any

// snapshot reads every block of the database through All.
func (e *env) snapshot(t *testing.T) state {
	t.Helper()
	s := state{}
	for m, err := range e.Matches.All(bg) {
		must(t, err)
		s["Match "+m.ID] = e.norm(m)
	}
	for j, err := range e.Journals.All(bg) {
		must(t, err)
		s[fmt.Sprint("Journal ", j.ID)] = e.norm(j)
	}
	for c, err := range e.Cards.All(bg) {
		must(t, err)
		s[fmt.Sprint("Card ", c.ID)] = e.norm(c)
	}
	for r, err := range e.Replies.All(bg) {
		must(t, err)
		s[fmt.Sprintf("Reply %q/%d", r.Key.Thread, r.Key.Seq)] = e.norm(r)
	}
	return s
}

// unchanged fails t if the database differs from before, or if its lookups
// no longer match its blocks (Repair would have to fix something).
func (e *env) unchanged(t *testing.T, what string, before state) {
	t.Helper()
	after := e.snapshot(t)
	var diffs []string
	for k, v := range before {
		w, ok := after[k]
		switch {
		case !ok:
			diffs = append(diffs, k+" was removed")
		case !reflect.DeepEqual(v, w):
			diffs = append(diffs, fmt.Sprintf("%s changed:\n  before %s\n  after  %s", k, show(v), show(w)))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s was added: %s", k, show(v)))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%s changed the database:\n%s", what, strings.Join(diffs, "\n"))
	}
	e.lookupsClean(t, what)
}

// lookupsClean fails t if Repair finds anything to fix.
func (e *env) lookupsClean(t *testing.T, what string) {
	t.Helper()
	for name, repair := range map[string]func(context.Context) (runtime.RepairReport, error){
		"Match": e.Matches.Repair, "Journal": e.Journals.Repair, "Card": e.Cards.Repair, "Reply": e.Replies.Repair,
	} {
		rep, err := repair(bg)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
			t.Fatalf("after %s, Repair of %s found lookup entries to fix: %v %v", what, name, rep, rep.Conflicts)
		}
	}
}

// ---- listings

// collect follows the cursors of a listing with pages of limit items and
// returns every item; it checks that no page exceeds the limit.
func collect[T any](t *testing.T, limit int, list func(runtime.PageRequest) (runtime.Page[T], error)) []T {
	t.Helper()
	var out []T
	req := runtime.PageRequest{Limit: limit}
	for range 10000 {
		page, err := list(req)
		must(t, err)
		if len(page.Items) > req.Size() {
			t.Fatalf("page of %d items with limit %d", len(page.Items), limit)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		if len(page.Items) == 0 {
			t.Fatalf("an empty page with a Next cursor")
		}
		req.Cursor = page.Next
	}
	t.Fatal("the listing does not end")
	return nil
}

func matchIDs(ms []*model.Match) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func eqStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

// ---- sample aggregates

// t0 is a time with nanoseconds and a zone, so that round trips show what
// a store keeps.
var t0 = time.Date(2024, 2, 29, 13, 14, 15, 123456789, time.FixedZone("CET", 3600))

// newMatch returns a match whose unique values (code, round serials) are
// derived from id, so that matches never collide by accident.
func newMatch(id string, rounds int) *model.Match {
	m := &model.Match{
		ID: id, Code: "code-" + id, Region: "north", Level: 1,
		Tags:  []string{"t1"},
		Venue: model.Venue{City: "Rome", Seats: 100},
		Start: t0,
		Meta:  map[string]int{"n": 0},
	}
	for i := range rounds {
		m.Rounds = append(m.Rounds, newRound(id, i))
	}
	return m
}

func newRound(id string, i int) model.Round {
	return model.Round{Serial: fmt.Sprintf("%s/r%d", id, i), Moves: []string{fmt.Sprint("m", i)}, Score: map[string]int{"a": i}, At: t0.Add(time.Duration(i) * time.Minute)}
}

// richMatch uses every kind of value the model has.
func richMatch(id string) *model.Match {
	return &model.Match{
		ID: id, Code: "rich-" + id, Region: "südwest ☀", Level: -7,
		Tags: []string{"b", "a", "b", ""},
		Venue: model.Venue{City: "Zürich", Seats: 1 << 40, Geo: &model.Geo{Lat: 47.37, Lon: -8.5e-3},
			Doors: []string{"north", "south"}},
		Start: t0,
		Meta:  map[string]int{"x": 1, "ü": -2, "long key with spaces": 3},
		Rounds: []model.Round{
			{Serial: id + "/s0", Moves: []string{"e4", "e5"}, Score: map[string]int{"w": 1}, At: t0.Add(time.Hour), Notes: map[string]string{"k": "v"}},
			{Serial: id + "/s1"},
			{Serial: id + "/s2", Moves: []string{""}, At: time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC)},
		},
	}
}

func (e *env) getMatch(t *testing.T, id string) *model.Match {
	t.Helper()
	m, err := e.Matches.Get(bg, id)
	must(t, err)
	return m
}

func (e *env) createMatch(t *testing.T, id string, rounds int) *model.Match {
	t.Helper()
	m := newMatch(id, rounds)
	must(t, e.Matches.Create(bg, m))
	return m
}

// clone deep-copies an aggregate (without normalising it).
func clone[T any](v *T) *T {
	return normValue(reflect.ValueOf(v), 1).Interface().(*T)
}
