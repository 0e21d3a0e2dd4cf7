package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
	"github.com/noamgen/noamgen/runtime/storetest/model"
	"github.com/noamgen/noamgen/runtime/storetest/tally"
)

// The declaration check: a store's declaration (runtime/access, in
// runtime/<store>store/layout) says how many requests each operation
// sends; Harness.Requests counts what the adapter really sends, and the
// two must agree on every scenario below. A declaration that says one
// request where the adapter sends two fails here.

var accessTests = []subtest{
	{name: "DeclaredRequests", fn: testDeclaredRequests},
}

// shapeOf is aggregate class d as declarations see it; tables, when set,
// says which lookups are kept in an index table (a store option, such as
// MongoDB's IndexTables).
func shapeOf[T any, K comparable](d *runtime.Desc[T, K], tables func(access.Lookup) bool) *access.Shape {
	s := &access.Shape{Collection: d.Collection, EAO: d.EAO, Key: []access.KeyValue{{Value: "2345"}}}
	for _, f := range d.Fields {
		s.Fields = append(s.Fields, access.Field{Key: f.Key, Partition: f.Kind == runtime.KindPartition, Created: f == d.Created, Updated: f == d.Updated, Expires: f == d.Expires})
	}
	if d.Version != nil {
		s.Fields = append(s.Fields, access.Field{Key: d.Version.Key, Version: true})
	}
	for _, l := range d.Lookups {
		al := access.Lookup{Name: l.Name, Unique: l.Unique, Table: l.Table, Zeros: l.IndexZero}
		for _, p := range l.Paths {
			al.Multi = al.Multi || p.Multi
		}
		al.Table = al.Table || (tables != nil && tables(al))
		s.Lookups = append(s.Lookups, al)
	}
	if d.Counter != nil {
		s.Counter = true
		var zero K
		if scope, _ := d.Counter.Split(zero); scope != nil {
			s.Scope = []string{"scope"}
		}
	}
	return s
}

// accessCase is one operation of a scenario: run does it; before and
// after are the aggregate before and after it (nil: no block), from which
// the index entries gained and lost are counted.
type accessCase[T any] struct {
	name   string
	op     access.Op
	before func() *T
	run    func() error
	after  func() *T
	// facts gives the terms that do not follow from before and after.
	facts map[access.Term]int
	// changed lists the entries an Update sets: it touches an indexed
	// field (access.IfIndexedChange) when a lookup in an index table
	// reads one of them.
	changed []string
	// beforeAll and afterAll, for a batch (CreateMany, PutMany,
	// DeleteMany), are the items' blocks before and after it, in the
	// batch's order (nil: no block); the entries gained and lost are
	// their sums, and each item's single call (access.PerItemCall) is
	// evaluated on its own pair.
	beforeAll, afterAll func() []*T
}

// single is the method whose single calls make up batch method m, ""
// for a method that is no batch.
func single(m access.Method) access.Method {
	switch m {
	case access.CreateMany:
		return access.Create
	case access.PutMany:
		return access.Put
	case access.DeleteMany:
		return access.Delete
	}
	return ""
}

// checkRequests runs the cases on repository repo and compares the
// requests each sends with what the harness's declaration says.
//
// once holds the terms that count the first time per client only
// (access.Term.Once) and have counted already: the subtest's operations
// share one client.
func checkRequests[T any, K comparable](t *testing.T, e *env, once map[access.Term]bool, repo any, cases []accessCase[T]) {
	t.Helper()
	r, ok := repoOf[T, K](repo)
	if !ok {
		t.Skipf("the %T repository does not reveal its runtime.Repo", repo)
	}
	d := r.D
	shape := shapeOf(d, e.h.Tables)
	table := map[string]bool{} // the lookups kept in index tables
	for _, l := range shape.Lookups {
		table[l.Name] = e.h.Declaration.IsTable(l)
	}
	must(t, r.Ensure(bg))
	keys := func(l *runtime.Lookup[T], v *T) [][]byte {
		if v == nil {
			return nil
		}
		return l.Keys(v)
	}
	for _, c := range cases {
		op := c.op
		op.Writes = nil
		for _, l := range d.Lookups {
			switch op.Method {
			case access.Create, access.Put, access.Delete, access.Update, access.CreateMany, access.PutMany, access.DeleteMany:
				// Update: every lookup of a field it may set, as explain says.
				op.Writes = append(op.Writes, l.Name)
				continue
			}
			if slices.Contains(l.Fields, op.Field) {
				op.Writes = append(op.Writes, l.Name)
			}
		}
		befores := []*T{nil}
		switch {
		case c.beforeAll != nil:
			befores = c.beforeAll()
		case c.before != nil:
			befores = []*T{c.before()}
		}
		n0 := e.h.Requests()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sent := e.h.Requests() - n0
		afters := []*T{nil}
		switch {
		case c.afterAll != nil:
			afters = c.afterAll()
		case c.after != nil:
			afters = []*T{c.after()}
		}
		if len(afters) != len(befores) {
			t.Fatalf("%s: %d blocks before, %d after", c.name, len(befores), len(afters))
		}
		// factsOf is the facts of the case for the blocks before and
		// after it (one pair, or a batch's).
		factsOf := func(befores, afters []*T) access.Facts {
			gained, lost := map[string]int{}, map[string]int{}
			entries := 0
			for i, before := range befores {
				after := afters[i]
				for _, l := range d.Lookups {
					if !table[l.Name] {
						continue // a native index: the block's own write keeps it
					}
					b, a := keys(l, before), keys(l, after)
					entries += len(b)
					for _, k := range a {
						if !slices.ContainsFunc(b, func(x []byte) bool { return string(x) == string(k) }) {
							gained[l.Name]++
						}
					}
					for _, k := range b {
						if !slices.ContainsFunc(a, func(x []byte) bool { return string(x) == string(k) }) {
							lost[l.Name]++
						}
					}
				}
				if e.h.Declaration.ScopeItems && len(shape.Scope) > 0 {
					// The scope item of the block (ListBy<scope>) is an index
					// entry too.
					switch {
					case before == nil && after != nil:
						gained[""]++
					case before != nil && after == nil:
						lost[""]++
					}
					if before != nil {
						entries++
					}
				}
			}
			sum := func(m map[string]int) (n int) {
				for _, v := range m {
					n += v
				}
				return n
			}
			one := func(n int) int { return min(n, 1) }
			facts := func(term access.Term, lookup string) (int, bool) {
				if n, ok := c.facts[term]; ok {
					return n, true
				}
				if n, ok := e.h.Facts[term]; ok {
					if term.Once() {
						if once[term] {
							return 0, true
						}
						once[term] = n > 0
					}
					return n, true
				}
				switch term {
				case access.PerGained:
					return sum(gained), true
				case access.PerLost:
					return sum(lost), true
				case access.PerEntry:
					return entries, true
				case access.PerValueGained:
					return gained[lookup], true
				case access.IfGains:
					return one(gained[lookup]), true
				case access.IfLoses:
					return one(lost[lookup]), true
				case access.IfAllocates, access.PerScope, access.PerScopeGiven, access.IfKeyGiven, access.IfRecreated, access.IfAppendFallback, access.PerStale, access.PerRetry, access.IfProjectionRefused, access.IfNoProjection, access.IfSliceRefused:
					return 0, true // none of the scenarios meets them
				case access.IfIndexedChange:
					for _, l := range d.Lookups {
						if table[l.Name] && slices.ContainsFunc(c.changed, func(k string) bool { return slices.Contains(l.Fields, k) }) {
							return 1, true
						}
					}
					return 0, true
				case access.IfNativePartial:
					changed := c.changed
					if op.Field != "" {
						changed = []string{op.Field}
					}
					for _, l := range d.Lookups {
						if table[l.Name] && slices.ContainsFunc(changed, func(k string) bool { return slices.Contains(l.Fields, k) }) {
							return 0, true // read by the lookup protocol
						}
					}
					for _, l := range d.Lookups {
						touched := slices.ContainsFunc(changed, func(k string) bool { return slices.Contains(l.Fields, k) })
						if !table[l.Name] && touched && slices.ContainsFunc(l.Fields, func(k string) bool { return !slices.Contains(changed, k) }) {
							return 1, true
						}
					}
					return 0, true
				case access.PerPage, access.Per100Keys, access.PerBatch, access.Per100Elements, access.PerPipeline:
					return 1, true // the scenarios' reads and batches fit one page, batch or pipeline
				}
				return 0, false
			}
			return facts
		}
		facts := factsOf(befores, afters)
		if m := single(op.Method); m != "" {
			// A batch: each item's single call on its own pair.
			items := func(counted bool) (int, error) {
				one := op
				one.Method = m
				n := 0
				for i := range befores {
					k, err := e.h.Declaration.Requests(shape, one, e.h.Mode, factsOf(befores[i:i+1], afters[i:i+1]))
					if err != nil {
						return 0, err
					}
					if !counted && shape.Counter {
						k-- // the single Create's counter request
					}
					n += k
				}
				return n, nil
			}
			batch := facts
			facts = func(term access.Term, lookup string) (int, bool) {
				switch term {
				case access.PerItemCall, access.PerItemWrite:
					n, err := items(term == access.PerItemCall)
					if err != nil {
						t.Errorf("%s: %v", c.name, err)
					}
					return n, err == nil
				case access.Per25Items:
					return (len(befores) + 24) / 25, true
				case access.Per100Actions:
					return 1, true // the scenarios' batches fit one transaction
				}
				return batch(term, lookup)
			}
		}
		want, err := e.h.Declaration.Requests(shape, op, e.h.Mode, facts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if sent != want {
			t.Errorf("%s: the %s adapter sent %d requests, its declaration says %d (%s; %d items)", c.name, e.h.Name, sent, want,
				e.h.Declaration.Render(shape, op).RoundTrips, len(befores))
		}
	}
}

func testDeclaredRequests(t *testing.T, e *env) {
	if e.h.Declaration == nil || e.h.Requests == nil {
		t.Skipf("the %s harness has no Declaration and Requests", e.h.Name)
	}
	if e.h.Declaration.Embedded {
		t.Skipf("%s is embedded: it sends no requests", e.h.Name)
	}
	// Requests are counted: past its layout lease (2 s by default, which
	// a loaded machine passes) a write reads the schema record again.
	e.db.Options = append(slices.Clip(e.db.Options), runtime.WithLayoutLease(time.Hour))
	e.Repos = repos.On(t, e.db)
	e.ensure(t)
	once := map[access.Term]bool{}
	get := func(id string) func() *model.Match {
		return func() *model.Match {
			m, err := e.Matches.Get(bg, id)
			must(t, err)
			return m
		}
	}
	m := &model.Match{ID: "m", Code: "c1", Region: "r", Level: 1, Tags: []string{"a", "b"}, Rounds: []model.Round{newRound("m", 0)}}
	var old *model.Match
	checkRequests[model.Match, string](t, e, once, e.Matches, []accessCase[model.Match]{
		{name: "Create", op: access.Op{Method: access.Create}, run: func() error { return e.Matches.Create(bg, m) }, after: get("m")},
		{name: "Get", op: access.Op{Method: access.Get}, before: get("m"), run: func() error { _, err := e.Matches.Get(bg, "m"); return err }, after: get("m")},
		{name: "SetCode (an indexed field)", op: access.Op{Method: access.Set, Field: "code"}, before: get("m"),
			run: func() error { return e.Matches.SetCode(bg, "m", "c2") }, after: get("m")},
		{name: "SetStart (no indexed field)", op: access.Op{Method: access.Set, Field: "start"}, before: get("m"),
			run: func() error { return e.Matches.SetStart(bg, "m", t0) }, after: get("m")},
		{name: "AppendRounds (an indexed partition)", op: access.Op{Method: access.Append, Field: "rounds"}, before: get("m"),
			run: func() error { _, err := e.Matches.AppendRounds(bg, "m", newRound("m", 1)); return err }, after: get("m")},
		{name: "GetByCode", op: access.Op{Method: access.GetBy, Lookup: "code"}, before: get("m"),
			run: func() error { _, err := e.Matches.GetByCode(bg, "c2"); return err }, after: get("m")},
		{name: "GetMany", op: access.Op{Method: access.GetMany}, before: get("m"),
			run: func() error { _, err := e.Matches.GetMany(bg, []string{"m", "none"}); return err }, after: get("m")},
		{name: "Put (tags a, b to b, c)", op: access.Op{Method: access.Put},
			before: func() *model.Match { old = get("m")(); return old },
			run: func() error {
				n := *old
				n.Tags = []string{"b", "c"}
				return e.Matches.Put(bg, &n)
			}, after: get("m")},
		{name: "Update (region, an indexed field)", op: access.Op{Method: access.Update}, before: get("m"), changed: []string{"region"},
			run: func() error { return e.Matches.Update(bg, "m", model.MatchUpdate{Region: runtime.Ptr("s")}) }, after: get("m")},
		{name: "SetRoundsAt (an indexed partition)", op: access.Op{Method: access.SetAt, Field: "rounds"}, before: get("m"),
			run: func() error { return e.Matches.SetRoundsAt(bg, "m", 0, newRound("m", 7)) }, after: get("m")},
		{name: "ListRounds", op: access.Op{Method: access.ListElems, Field: "rounds"}, before: get("m"),
			run: func() error { _, err := e.Matches.ListRounds(bg, "m", runtime.PageRequest{Limit: 5}); return err }, after: get("m")},
		{name: "List", op: access.Op{Method: access.List}, before: get("m"),
			run: func() error { _, err := e.Matches.List(bg, runtime.PageRequest{Limit: 5}); return err }, after: get("m")},
		{name: "ListByTags", op: access.Op{Method: access.ListBy, Lookup: "tags"}, before: get("m"),
			run: func() error { _, err := e.Matches.ListByTags(bg, "c", runtime.PageRequest{Limit: 5}); return err }, after: get("m")},
		{name: "Count", op: access.Op{Method: access.Count}, before: get("m"),
			run: func() error { _, err := e.Matches.Count(bg); return err }, after: get("m")},
		{name: "CountByTags", op: access.Op{Method: access.CountBy, Lookup: "tags"}, before: get("m"),
			run: func() error { _, err := e.Matches.CountByTags(bg, "c"); return err }, after: get("m")},
		{name: "CountByRegionLevel", op: access.Op{Method: access.CountBy, Lookup: "regionLevel"}, before: get("m"),
			run: func() error {
				_, err := e.Matches.CountByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq("s")})
				return err
			}, after: get("m")},
		{name: "Delete", op: access.Op{Method: access.Delete}, before: get("m"), run: func() error { return e.Matches.Delete(bg, "m") }},
	})
	// Batches: each declared as one cost for the whole batch, checked
	// against the requests of the batch (and, where a declaration says
	// each item's single call, those its method declares per item).
	ids := []string{"b1", "b2"}
	getAll := func() []*model.Match { return []*model.Match{get(ids[0])(), get(ids[1])()} }
	var olds []*model.Match
	checkRequests[model.Match, string](t, e, once, e.Matches, []accessCase[model.Match]{
		{name: "CreateMany (2 matches)", op: access.Op{Method: access.CreateMany}, beforeAll: func() []*model.Match { return make([]*model.Match, 2) },
			run: func() error {
				var ms []*model.Match
				for i, id := range ids {
					ms = append(ms, &model.Match{ID: id, Code: "bc" + id, Region: "r", Level: i, Tags: []string{"a", id}, Rounds: []model.Round{newRound(id, 0)}})
				}
				return e.Matches.CreateMany(bg, ms)
			}, afterAll: getAll},
		{name: "PutMany (2 matches, a tag each changed)", op: access.Op{Method: access.PutMany},
			beforeAll: func() []*model.Match { olds = getAll(); return olds },
			run: func() error {
				var ms []*model.Match
				for _, o := range olds {
					n := *o
					n.Tags = []string{"a", "c" + o.ID}
					ms = append(ms, &n)
				}
				return e.Matches.PutMany(bg, ms)
			}, afterAll: getAll},
		{name: "DeleteMany (2 matches)", op: access.Op{Method: access.DeleteMany}, beforeAll: getAll,
			run: func() error { return e.Matches.DeleteMany(bg, ids) }, afterAll: func() []*model.Match { return make([]*model.Match, 2) }},
	})
	// A key from a counter per thread: the thread's listing.
	rk := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Author: "a", Edits: []string{"e"}}
	getReply := func() *model.Reply {
		got, err := e.Replies.Get(bg, rk.Key)
		must(t, err)
		return got
	}
	checkRequests[model.Reply, model.ReplyKey](t, e, once, e.Replies, []accessCase[model.Reply]{
		{name: "Reply Create (the scoped counter allocates the key)", op: access.Op{Method: access.Create}, facts: map[access.Term]int{access.IfAllocates: 1},
			run: func() error { return e.Replies.Create(bg, rk) }, after: getReply},
		{name: "ListByThread", op: access.Op{Method: access.ListScope}, before: getReply,
			run: func() error { _, err := e.Replies.ListByThread(bg, "t", runtime.PageRequest{Limit: 5}); return err }, after: getReply},
		{name: "CountByThread", op: access.Op{Method: access.CountScope}, before: getReply,
			run: func() error { _, err := e.Replies.CountByThread(bg, "t"); return err }, after: getReply},
		{name: "Reply SetBody (no indexed field)", op: access.Op{Method: access.Set, Field: "body"}, before: getReply,
			run: func() error { return e.Replies.SetBody(bg, rk.Key, "b") }, after: getReply},
		{name: "Reply Delete", op: access.Op{Method: access.Delete}, before: getReply, run: func() error { return e.Replies.Delete(bg, rk.Key) }},
	})
	// A batch over two threads: two scoped counters, each moved once.
	var rs []*model.Reply
	checkRequests[model.Reply, model.ReplyKey](t, e, once, e.Replies, []accessCase[model.Reply]{
		{name: "Reply CreateMany (3 replies in 2 threads)", op: access.Op{Method: access.CreateMany}, facts: map[access.Term]int{access.IfAllocates: 1, access.PerScope: 2},
			beforeAll: func() []*model.Reply { return make([]*model.Reply, 3) },
			run: func() error {
				rs = []*model.Reply{{Key: model.ReplyKey{Thread: "bt1"}, Author: "a"}, {Key: model.ReplyKey{Thread: "bt2"}, Author: "a"}, {Key: model.ReplyKey{Thread: "bt1"}, Author: "b"}}
				return e.Replies.CreateMany(bg, rs)
			},
			afterAll: func() []*model.Reply {
				var got []*model.Reply
				for _, r := range rs {
					g, err := e.Replies.Get(bg, r.Key)
					must(t, err)
					got = append(got, g)
				}
				return got
			}},
	})
	// Aggregates with an expires field: counts leave the expired blocks
	// out, by a filter or by reading through the listing (Redis).
	c := &testClock{now: at(0)}
	sessions, leases, _ := expiryRepos(t, e.db, c)
	getSession := func() *expiring.Session {
		got, err := sessions.Get(bg, "s")
		must(t, err)
		return got
	}
	checkRequests[expiring.Session, string](t, e, once, sessions, []accessCase[expiring.Session]{
		{name: "Session Create", op: access.Op{Method: access.Create},
			run: func() error {
				return sessions.Create(bg, &expiring.Session{ID: "s", Token: "t", User: "u", Expires: at(10)})
			}, after: getSession},
		{name: "Session Count", op: access.Op{Method: access.Count}, before: getSession,
			run: func() error { _, err := sessions.Count(bg); return err }, after: getSession},
		{name: "Session CountByUser", op: access.Op{Method: access.CountBy, Lookup: "user"}, before: getSession,
			run: func() error { _, err := sessions.CountByUser(bg, "u"); return err }, after: getSession},
		// The writes of a block by key first remove it had it expired
		// (access.Store.ClearExpired).
		{name: "Session Put", op: access.Op{Method: access.Put}, before: getSession,
			run: func() error {
				return sessions.Put(bg, &expiring.Session{ID: "s", Token: "t", User: "u2", Expires: at(10), Version: 1})
			}, after: getSession},
		{name: "Session SetUser", op: access.Op{Method: access.Set, Field: "user"}, before: getSession,
			run: func() error { return sessions.SetUser(bg, "s", "u3") }, after: getSession},
		{name: "Session AppendEvents", op: access.Op{Method: access.Append, Field: "events"}, before: getSession,
			run: func() error { _, err := sessions.AppendEvents(bg, "s", "e"); return err }, after: getSession},
	})
	getLease := func() *expiring.Lease {
		got, err := leases.Get(bg, "l")
		must(t, err)
		return got
	}
	checkRequests[expiring.Lease, string](t, e, once, leases, []accessCase[expiring.Lease]{
		{name: "Lease Create", op: access.Op{Method: access.Create},
			run: func() error { return leases.Create(bg, &expiring.Lease{ID: "l", Holder: "h", Until: at(10)}) }, after: getLease},
		{name: "Lease Count", op: access.Op{Method: access.Count}, before: getLease,
			run: func() error { _, err := leases.Count(bg); return err }, after: getLease},
	})
	// A key from the counter.
	j := &model.Journal{Owner: "o"}
	var js []*model.Journal
	checkRequests[model.Journal, model.JournalID](t, e, once, e.Journals, []accessCase[model.Journal]{
		{name: "Journal Create (the counter allocates the key)", op: access.Op{Method: access.Create}, facts: map[access.Term]int{access.IfAllocates: 1},
			run: func() error { return e.Journals.Create(bg, j) },
			after: func() *model.Journal {
				got, err := e.Journals.Get(bg, j.ID)
				must(t, err)
				return got
			}},
		{name: "Journal CreateMany (2 journals: the counter moves once)", op: access.Op{Method: access.CreateMany}, facts: map[access.Term]int{access.IfAllocates: 1, access.PerScope: 1},
			beforeAll: func() []*model.Journal { return make([]*model.Journal, 2) },
			run: func() error {
				js = []*model.Journal{{Owner: "o"}, {Owner: "p"}}
				return e.Journals.CreateMany(bg, js)
			},
			afterAll: func() []*model.Journal {
				var got []*model.Journal
				for _, j := range js {
					g, err := e.Journals.Get(bg, j.ID)
					must(t, err)
					got = append(got, g)
				}
				return got
			}},
	})
	// Additions: one request each where the store adds natively.
	tr := tallies(t, e, nil)
	getTally := func() *tally.Tally {
		got, err := tr.tallies.Get(bg, "d")
		must(t, err)
		return got
	}
	checkRequests[tally.Tally, string](t, e, once, tr.tallies, []accessCase[tally.Tally]{
		{name: "Tally Create", op: access.Op{Method: access.Create},
			run: func() error { return tr.tallies.Create(bg, &tally.Tally{ID: "d", Name: "n", Hits: 1}) }, after: getTally},
		{name: "AddHits", op: access.Op{Method: access.Add, Field: "hits"}, before: getTally,
			run: func() error { _, err := tr.tallies.AddHits(bg, "d", 2); return err }, after: getTally},
		{name: "AddHits (a negative delta)", op: access.Op{Method: access.Add, Field: "hits"}, before: getTally,
			run: func() error { _, err := tr.tallies.AddHits(bg, "d", -5); return err }, after: getTally},
	})
}
