package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// master is one master of the test cluster, with a client of its own (not
// routed) for the CLUSTER commands of a slot migration.
type master struct {
	id, addr string
	c        *redis.Client
}

// slots administers slot migrations on the 3-master test cluster.
type slots struct {
	cc      *redis.ClusterClient
	masters []master
}

func newSlots(t *testing.T, cc *redis.ClusterClient) *slots {
	t.Helper()
	var s slots
	s.cc = cc
	nodes, err := cc.ClusterSlots(bg).Result()
	must(t, err)
	seen := map[string]bool{}
	for _, r := range nodes {
		n := r.Nodes[0]
		if seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		s.masters = append(s.masters, master{id: n.ID, addr: n.Addr, c: redis.NewClient(&redis.Options{Addr: n.Addr})})
	}
	if len(s.masters) != 3 {
		t.Fatalf("the test cluster has %d masters, want 3", len(s.masters))
	}
	t.Cleanup(func() {
		for _, m := range s.masters {
			m.c.Close()
		}
	})
	return &s
}

// keySlot is the hash slot of key.
func (s *slots) keySlot(t testing.TB, key string) int {
	n, err := s.masters[0].c.ClusterKeySlot(bg, key).Result()
	must(t, err)
	return int(n)
}

// owner returns the index of the master owning slot (as that master's
// own table says: a master owns the slots it lists as its own).
func (s *slots) owner(ctx context.Context, slot int) (int, error) {
	for i, m := range s.masters {
		rs, err := m.c.ClusterSlots(ctx).Result()
		if err != nil {
			return 0, err
		}
		for _, r := range rs {
			if int(r.Start) <= slot && slot <= int(r.End) && r.Nodes[0].ID == m.id {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("no master owns slot %d", slot)
}

// begin puts slot in migration from master from to master to, without
// moving a key.
func (s *slots) begin(ctx context.Context, slot, from, to int) error {
	if err := s.masters[to].c.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", s.masters[from].id).Err(); err != nil {
		return err
	}
	return s.masters[from].c.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", s.masters[to].id).Err()
}

// moveKeys migrates every key of slot from master from to master to
// (MIGRATE ... KEYS), a few at a time, pausing between batches.
func (s *slots) moveKeys(ctx context.Context, slot, from, to int, pause time.Duration) error {
	host, port, _ := strings.Cut(s.masters[to].addr, ":")
	for {
		keys, err := s.masters[from].c.ClusterGetKeysInSlot(ctx, slot, 4).Result()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := s.masters[from].c.Do(ctx, args...).Err(); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			return fmt.Errorf("MIGRATE %q: %w", keys, err)
		}
		time.Sleep(pause)
	}
}

// finish gives slot to master to on every master (the target first, then
// the source, as redis-cli --cluster does).
func (s *slots) finish(ctx context.Context, slot, from, to int) error {
	order := []int{to, from}
	for i := range s.masters {
		if i != to && i != from {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := s.masters[i].c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", s.masters[to].id).Err(); err != nil {
			return err
		}
	}
	return nil
}

// stable cancels a migration of slot that moved no key.
func (s *slots) stable(t testing.TB, slot int) {
	t.Helper()
	for _, m := range s.masters {
		must(t, m.c.Do(bg, "CLUSTER", "SETSLOT", slot, "STABLE").Err())
	}
}

// other returns a master other than i.
func (s *slots) other(i int) int { return (i + 1) % len(s.masters) }

// TestWritesInAMigratingSlot: writes of a block whose slot is MIGRATING
// (no key moved yet: the block is still on its owner, which runs the
// scripts) apply whole. Before the fix a Put emptied the hash (DEL) and
// then failed at the HSET that followed ("Script attempted to access a non
// local key": Redis refuses a missing key of a migrating slot, also inside
// a script), and the DEL stayed: the block was gone.
func TestWritesInAMigratingSlot(t *testing.T) {
	cc := redistest.Cluster(t)
	sl := newSlots(t, cc)
	matches := ensured(t, model.NewMatchRedisRepository(cc))
	cards := ensured(t, model.NewCardRedisRepository(cc))
	m := &model.Match{ID: "mig", Code: "c0", Tags: []string{"a", "b"}, Rounds: []model.Round{{Serial: "s0"}, {Serial: "s1"}}}
	must(t, matches.Create(bg, m))
	must(t, cards.Create(bg, &model.Card{ID: 7, Title: "t0", Labels: []string{"x"}}))
	migrate := func(key string) func() {
		slot := sl.keySlot(t, key)
		from, err := sl.owner(bg, slot)
		must(t, err)
		must(t, sl.begin(bg, slot, from, sl.other(from)))
		return func() { sl.stable(t, slot) }
	}
	restore := migrate("matches:{mig}")
	defer restore()
	restoreCard := migrate("Card:{7}")
	defer restoreCard()

	// Put with lookups (checked replace), Put without (a card: plain replace).
	m.Code, m.Tags, m.Rounds = "c1", []string{"b", "c"}, []model.Round{{Serial: "s2"}}
	if err := matches.Put(bg, m); err != nil {
		_, gerr := matches.Get(bg, "mig")
		t.Fatalf("Put of a block of a migrating slot: %v (Get of the block after it: %v)", err, gerr)
	}
	if err := cards.Put(bg, &model.Card{ID: 7, Title: "t1"}); err != nil {
		t.Fatalf("Put of a card of a migrating slot: %v", err)
	}
	// Update of an element and a field, a setter, an append.
	level := 4
	if err := matches.Update(bg, "mig", model.MatchUpdate{RoundsAt: map[int]model.Round{0: {Serial: "s3"}}, Level: &level}); err != nil {
		t.Fatalf("Update of a block of a migrating slot: %v", err)
	}
	must(t, matches.SetRegion(bg, "mig", "eu"))
	if _, err := matches.AppendRounds(bg, "mig", model.Round{Serial: "s4"}); err != nil {
		t.Fatalf("AppendRounds of a block of a migrating slot: %v", err)
	}
	got, err := matches.Get(bg, "mig")
	if err != nil {
		t.Fatalf("Get after the writes: %v", err)
	}
	serials := func(rs []model.Round) (out []string) {
		for _, r := range rs {
			out = append(out, r.Serial)
		}
		return out
	}
	if got.Code != "c1" || got.Level != 4 || got.Region != "eu" || !slices.Equal(got.Tags, []string{"b", "c"}) || !slices.Equal(serials(got.Rounds), []string{"s3", "s4"}) || got.Version != 5 {
		t.Fatalf("after the writes: %+v", got)
	}
	card, err := cards.Get(bg, 7)
	if err != nil || card.Title != "t1" || len(card.Labels) != 0 {
		t.Fatalf("the card after its Put: %+v, %v", card, err)
	}
	layout, err := matches.Client().HKeys(bg, "matches:{mig}").Result()
	must(t, err)
	slices.Sort(layout)
	if want := []string{"_inc", "_seq", "_w", "code", "level", "meta", "region", "rounds", "rounds[0]", "rounds[1]", "start", "tags", "tree", "venue", "version"}; !slices.Equal(layout, want) {
		t.Fatalf("the block's fields: %q, want %q (the Put's stale fields removed)", layout, want)
	}
	// Delete of a block of a migrating slot.
	if err := cards.Delete(bg, 7); err != nil {
		t.Fatalf("Delete of a card of a migrating slot: %v", err)
	}
	if _, err := cards.Get(bg, 7); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of the deleted card: %v", err)
	}
	restore()
	restoreCard()
	clean(t, "writes in a migrating slot", matches.Repair)
}

// TestRefusedWriteIsUnavailable: a write the cluster keeps refusing before
// running it (here TRYAGAIN: the slot of the code index table is migrating
// and one of its three keys is missing, so Redis refuses every run naming
// them) fails, after go-redis's retries and the adapter's own, with
// runtime.ErrUnavailable within a bounded time, and has changed nothing:
// the block is not written, no claim is left.
func TestRefusedWriteIsUnavailable(t *testing.T) {
	cc := redistest.Cluster(t)
	sl := newSlots(t, cc)
	matches := ensured(t, model.NewMatchRedisRepository(cc))
	must(t, matches.Create(bg, &model.Match{ID: "m1", Code: "a"}))
	// The claims hash is gone; the entries and metas stay.
	must(t, cc.Del(bg, "{matches.code}:claims").Err())
	slot := sl.keySlot(t, "{matches.code}")
	from, err := sl.owner(bg, slot)
	must(t, err)
	must(t, sl.begin(bg, slot, from, sl.other(from)))
	defer sl.stable(t, slot)
	start := time.Now()
	err = matches.Create(bg, &model.Match{ID: "m2", Code: "b"})
	took := time.Since(start)
	if !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "TRYAGAIN") {
		t.Fatalf("Create refused by the cluster: %v, want ErrUnavailable (TRYAGAIN)", err)
	}
	if took > 10*time.Second {
		t.Fatalf("the refused Create took %v", took)
	}
	err = matches.SetCode(bg, "m1", "c")
	if !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("SetCode refused by the cluster: %v, want ErrUnavailable", err)
	}
	sl.stable(t, slot)
	if _, err := matches.Get(bg, "m2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of the refused Create's block: %v", err)
	}
	m, err := matches.Get(bg, "m1")
	must(t, err)
	if m.Code != "a" || m.Version != 1 {
		t.Fatalf("the refused SetCode changed the block: %+v", m)
	}
	if n := cc.Exists(bg, "{matches.code}:claims").Val(); n != 0 {
		t.Fatalf("the refused writes left a claim")
	}
	// Repair gives the claim of a back; nothing else is left to fix.
	rep, err := matches.Repair(bg)
	must(t, err)
	if rep.Added != 1 || rep.Removed != 0 {
		t.Fatalf("Repair after the refused writes: %+v", rep)
	}
	clean(t, "the refused writes", matches.Repair)
}

// mover migrates slots back and forth between the masters until stop is
// closed: IMPORTING on the target, MIGRATING on the source, a pause while
// the keys are still on the source (the scripts run there), the keys moved
// one MIGRATE at a time (multi-key runs get TRYAGAIN meanwhile), then the
// slot given to the target on every master. It returns the moves made; a
// migration it starts is always finished, so the slots end stable.
func (s *slots) mover(stop <-chan struct{}, slotsToMove []int, seed int64) (int, error) {
	rnd := rand.New(rand.NewSource(seed))
	moves := 0
	for {
		select {
		case <-stop:
			return moves, nil
		default:
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		slot := slotsToMove[rnd.Intn(len(slotsToMove))]
		from, err := s.owner(ctx, slot)
		if err != nil {
			cancel()
			return moves, err
		}
		to := (from + 1 + rnd.Intn(len(s.masters)-1)) % len(s.masters)
		if err := s.begin(ctx, slot, from, to); err != nil {
			cancel()
			return moves, err
		}
		time.Sleep(time.Duration(10+rnd.Intn(30)) * time.Millisecond)
		err = s.moveKeys(ctx, slot, from, to, time.Duration(rnd.Intn(10))*time.Millisecond)
		if err == nil {
			err = s.finish(ctx, slot, from, to)
		}
		cancel()
		if err != nil {
			return moves, fmt.Errorf("moving slot %d from %s to %s: %w", slot, s.masters[from].addr, s.masters[to].addr, err)
		}
		moves++
		time.Sleep(time.Duration(rnd.Intn(20)) * time.Millisecond)
	}
}

// matchState is what a writer knows of one of its blocks: absent, or
// these lookup values, rounds and version.
type matchState struct {
	present bool
	code    string
	region  string
	level   int
	tags    []string
	serials []string
	version int64
}

func stateOf(m *model.Match) matchState {
	if m == nil {
		return matchState{}
	}
	var serials []string
	for _, r := range m.Rounds {
		serials = append(serials, r.Serial)
	}
	return matchState{present: true, code: m.Code, region: m.Region, level: m.Level, tags: slices.Clone(m.Tags), serials: serials, version: m.Version}
}

func (a matchState) equal(b matchState) bool {
	return a.present == b.present && (!a.present || a.code == b.code && a.region == b.region && a.level == b.level &&
		slices.Equal(a.tags, b.tags) && slices.Equal(a.serials, b.serials) && a.version == b.version)
}

func (a matchState) String() string {
	if !a.present {
		return "absent"
	}
	return fmt.Sprintf("{code %s, region %s, level %d, tags %v, rounds %v, version %d}", a.code, a.region, a.level, a.tags, a.serials, a.version)
}

// reshardWriter owns a few blocks and writes them with every kind of
// write, keeping each block's last acknowledged state.
type reshardWriter struct {
	id      int
	matches model.MatchRepository
	rnd     *rand.Rand
	seq     int
	blocks  map[string]matchState
	used    map[string]bool // every value of a lookup it wrote
	kinds   map[string]int  // outcomes by kind
	errs    []string        // broken promises
	slowest time.Duration
}

// opDeadline is the deadline of every write of the test.
const opDeadline = 3 * time.Second

func (w *reshardWriter) fresh(what string) string {
	w.seq++
	v := fmt.Sprintf("%s-w%d-%d", what, w.id, w.seq)
	w.used[v] = true
	return v
}

// code is a fresh code, or one of a few codes every writer competes for.
func (w *reshardWriter) code() string {
	if w.rnd.Intn(4) == 0 {
		v := fmt.Sprintf("shared-%d", w.rnd.Intn(3))
		w.used[v] = true
		return v
	}
	return w.fresh("code")
}

func (w *reshardWriter) tags() []string {
	tags := []string{fmt.Sprintf("t%d", w.rnd.Intn(5)), w.fresh("tag")}
	for _, t := range tags {
		w.used[t] = true
	}
	return tags
}

// step makes one write of one of its blocks and records its outcome.
func (w *reshardWriter) step(ids []string) {
	id := ids[w.rnd.Intn(len(ids))]
	before := w.blocks[id]
	after := before
	after.version++
	ctx, cancel := context.WithTimeout(bg, opDeadline)
	defer cancel()
	start := time.Now()
	var err error
	var what string
	switch op := w.rnd.Intn(10); {
	case !before.present:
		what = "Create"
		m := &model.Match{ID: id, Code: w.code(), Region: fmt.Sprint("r", w.rnd.Intn(3)), Level: w.rnd.Intn(3), Tags: w.tags(), Rounds: []model.Round{{Serial: w.fresh("serial")}}}
		err = w.matches.Create(ctx, m)
		after = stateOf(m)
		after.version = 1
	case op == 0:
		what = "Put"
		m := &model.Match{ID: id, Code: w.code(), Region: before.region, Level: w.rnd.Intn(3), Tags: w.tags(), Rounds: []model.Round{{Serial: w.fresh("serial")}, {Serial: w.fresh("serial")}}, Version: before.version}
		err = w.matches.Put(ctx, m)
		after = stateOf(m)
		after.version = before.version + 1
	case op == 1:
		what = "Update"
		region, level, tags := fmt.Sprint("r", w.rnd.Intn(3)), w.rnd.Intn(3), w.tags()
		err = w.matches.Update(ctx, id, model.MatchUpdate{Region: &region, Level: &level, Tags: &tags, IfVersion: before.version})
		after.region, after.level, after.tags = region, level, tags
	case op <= 3:
		what = "SetCode"
		after.code = w.code()
		err = w.matches.SetCode(ctx, id, after.code)
	case op <= 5:
		what = "AppendRounds"
		s := w.fresh("serial")
		after.serials = append(slices.Clone(before.serials), s)
		var i int
		i, err = w.matches.AppendRounds(ctx, id, model.Round{Serial: s})
		if err == nil && i != len(before.serials) {
			w.errs = append(w.errs, fmt.Sprintf("%s: AppendRounds returned index %d, want %d", id, i, len(before.serials)))
		}
	case op == 6 && len(before.serials) > 0:
		what = "SetRoundsAt"
		after.serials = slices.Clone(before.serials)
		after.serials[0] = w.fresh("serial")
		err = w.matches.SetRoundsAt(ctx, id, 0, model.Round{Serial: after.serials[0]})
	case op == 7:
		what = "SetRegion"
		after.region = fmt.Sprint("r", w.rnd.Intn(3))
		err = w.matches.SetRegion(ctx, id, after.region)
	case op == 8:
		what = "Delete"
		after = matchState{}
		err = w.matches.Delete(ctx, id)
	default:
		what = "SetTags"
		after.tags = w.tags()
		err = w.matches.SetTags(ctx, id, after.tags)
	}
	if took := time.Since(start); took > w.slowest {
		w.slowest = took
	}
	switch {
	case err == nil:
		w.kinds["ok"]++
		w.blocks[id] = after
	case errors.Is(err, runtime.ErrUnknownOutcome):
		w.kinds["unknown outcome"]++
		// Either state is right: read which one the block is in (once
		// the script, if it was sent, has surely run).
		time.Sleep(100 * time.Millisecond)
		got, gerr := w.get(id)
		switch {
		case gerr != nil:
			w.errs = append(w.errs, fmt.Sprintf("%s %s: cannot read the block after an unknown outcome: %v", what, id, gerr))
		case got.equal(after):
			w.blocks[id] = after
		case !got.equal(before):
			w.errs = append(w.errs, fmt.Sprintf("%s %s (%v): the block is %v, neither the state before %v nor after %v", what, id, err, got, before, after))
			w.blocks[id] = got
		}
	case errors.Is(err, runtime.ErrDuplicate) && strings.Contains(err.Error(), "is taken"), errors.Is(err, runtime.ErrUnavailable):
		// A shared code taken, or refused before any change.
		w.kinds[kindName(err)]++
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline before the script ran: nothing written.
		w.kinds["deadline"]++
	default:
		w.kinds["other"]++
		w.errs = append(w.errs, fmt.Sprintf("%s %s: %v", what, id, err))
	}
}

func kindName(err error) string {
	var e *runtime.Error
	if errors.As(err, &e) && e.Kind != nil {
		return e.Kind.Error()
	}
	return "store error"
}

// get reads a block, retrying while the cluster refuses.
func (w *reshardWriter) get(id string) (matchState, error) {
	var err error
	for range 20 {
		ctx, cancel := context.WithTimeout(bg, opDeadline)
		var m *model.Match
		m, err = w.matches.Get(ctx, id)
		cancel()
		if errors.Is(err, runtime.ErrNotFound) {
			return matchState{}, nil
		}
		if err == nil {
			return stateOf(m), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return matchState{}, err
}

// TestReshardUnderLoad: on the 3-master cluster, writers make every kind
// of write (Create, Put, Update, setters, unique lookup changes, appends,
// Delete) while a mover migrates the slots of their blocks, of the index
// tables (entries, metas, claims) and of the listing back and forth
// between the masters. Afterwards (slots stable): every block is in the
// state of its last acknowledged write (a write that failed with
// ErrUnknownOutcome was read back: either state), no unique value is held
// by two blocks, and after Repair every block is found by each of its
// values and by nothing else, and the listing holds exactly the blocks.
// No write returns later than its deadline plus slack. Before the fix
// Put lost whole blocks here.
func TestReshardUnderLoad(t *testing.T) {
	dur := 8 * time.Second
	if testing.Short() {
		dur = 3 * time.Second
	}
	cc := redistest.Cluster(t)
	sl := newSlots(t, cc)
	const writers, perWriter = 6, 4
	var moving []int
	seen := map[int]bool{}
	addSlot := func(key string) {
		if s := sl.keySlot(t, key); !seen[s] {
			seen[s] = true
			moving = append(moving, s)
		}
	}
	for _, k := range []string{"{matches.code}", "{matches.regionLevel}", "{matches.tags}", "{matches.venueCity}", "{matches.roundsSerial}", "matches:blocks"} {
		addSlot(k)
	}
	tables := len(moving)
	must(t, model.NewMatchRedisRepository(cc).EnsureIndexes(bg))
	ws := make([]*reshardWriter, writers)
	ids := make([][]string, writers)
	for i := range ws {
		ws[i] = &reshardWriter{id: i, matches: model.NewMatchRedisRepository(cc), rnd: rand.New(rand.NewSource(int64(i))),
			blocks: map[string]matchState{}, used: map[string]bool{}, kinds: map[string]int{}}
		for k := range perWriter {
			id := fmt.Sprintf("w%db%d", i, k)
			ids[i] = append(ids[i], id)
			if k < 2 {
				addSlot("matches:{" + id + "}")
			}
		}
	}
	// Half the moves are of the index tables and the listing.
	for range len(moving) - 2*tables {
		moving = append(moving, moving[:tables]...)
	}

	stop := make(chan struct{})
	var moverWG sync.WaitGroup
	var moves int
	var moveErr error
	moverWG.Add(1)
	go func() {
		defer moverWG.Done()
		moves, moveErr = sl.mover(stop, moving, 1)
	}()
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				w.step(ids[i])
			}
		}()
	}
	// The watchdog: every writer ends within its last deadline plus slack.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(dur + opDeadline + 20*time.Second):
		close(stop)
		buf := make([]byte, 1<<20)
		buf = buf[:goruntime.Stack(buf, true)]
		moverWG.Wait() // the slots end stable for the other tests
		t.Fatalf("a writer is hung:\n%s", buf)
	}
	close(stop)
	moverWG.Wait()
	must(t, moveErr)

	// Every block as its last acknowledged write left it.
	matches := model.NewMatchRedisRepository(cc)
	total := map[string]int{}
	want := map[string]matchState{}
	used := map[string]bool{}
	for _, w := range ws {
		for _, e := range w.errs {
			t.Error(e)
		}
		if w.slowest > opDeadline+5*time.Second {
			t.Errorf("writer %d: a write took %v (deadline %v)", w.id, w.slowest, opDeadline)
		}
		for k, n := range w.kinds {
			total[k] += n
		}
		for id, st := range w.blocks {
			want[id] = st
		}
		for v := range w.used {
			used[v] = true
		}
	}
	t.Logf("%d slot moves (%d slots), writes: %v", moves, len(seen), total)
	if total["ok"] == 0 || moves == 0 {
		t.Fatalf("no write acknowledged (%v) or no slot moved (%d)", total, moves)
	}
	lost := 0
	for _, id := range slices.Sorted(maps.Keys(want)) {
		m, err := matches.Get(bg, id)
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Get %s: %v", id, err)
		}
		if got := stateOf(m); !got.equal(want[id]) {
			lost++
			t.Errorf("%s: %v, the last acknowledged write left %v", id, got, want[id])
		}
	}
	if lost > 0 {
		t.Fatalf("%d blocks not as their last acknowledged write left them", lost)
	}
	// No unique value held twice.
	holders := map[string][]string{} // lookup value -> blocks
	for id, st := range want {
		if !st.present {
			continue
		}
		for _, v := range append([]string{"code " + st.code}, prefixed("serial ", st.serials)...) {
			holders[v] = append(holders[v], id)
		}
	}
	for v, hs := range holders {
		if len(hs) > 1 {
			t.Errorf("unique %s is held by %v", v, hs)
		}
	}
	rep, err := matches.Repair(bg)
	must(t, err)
	t.Logf("Repair: %+v", rep)
	if len(rep.Conflicts) > 0 {
		t.Errorf("Repair found unique values held twice: %q", rep.Conflicts)
	}
	clean(t, "Repair", matches.Repair)
	// Lookups exact: every value used finds exactly its holders.
	holding := func(pred func(matchState) bool) []string {
		var out []string
		for id, st := range want {
			if st.present && pred(st) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	ids1 := func(ms []*model.Match) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		slices.Sort(out)
		return out
	}
	// unique checks that get(v) finds exactly the holder of unique v.
	unique := func(name, v string, exp []string, get func(context.Context, string) (*model.Match, error)) {
		m, err := get(bg, v)
		var got []string
		if err == nil {
			got = []string{m.ID}
		} else if !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s(%s): %v", name, v, err)
		}
		if !slices.Equal(got, exp) {
			t.Errorf("%s(%s) = %v, held by %v", name, v, got, exp)
		}
	}
	for v := range used {
		switch {
		case strings.HasPrefix(v, "code-") || strings.HasPrefix(v, "shared-"):
			unique("GetByCode", v, holding(func(s matchState) bool { return s.code == v }), matches.GetByCode)
		case strings.HasPrefix(v, "serial-"):
			unique("GetByRoundsSerial", v, holding(func(s matchState) bool { return slices.Contains(s.serials, v) }), matches.GetByRoundsSerial)
		default: // a tag
			exp := holding(func(s matchState) bool { return slices.Contains(s.tags, v) })
			page, err := matches.ListByTags(bg, v, runtime.PageRequest{Limit: 1000})
			must(t, err)
			if got := ids1(page.Items); !slices.Equal(got, exp) {
				t.Errorf("ListByTags(%s) = %v, held by %v", v, got, exp)
			}
		}
	}
	for r := range 3 {
		for l := range 3 {
			region := fmt.Sprint("r", r)
			exp := holding(func(s matchState) bool { return s.region == region && s.level == l })
			page, err := matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq(region), Level: runtime.Eq(l)}, runtime.PageRequest{Limit: 1000})
			must(t, err)
			if got := ids1(page.Items); !slices.Equal(got, exp) {
				t.Errorf("ListByRegionLevel(%s, %d) = %v, held by %v", region, l, got, exp)
			}
		}
	}
	page, err := matches.List(bg, runtime.PageRequest{Limit: 1000})
	must(t, err)
	if got, exp := ids1(page.Items), holding(func(matchState) bool { return true }); !slices.Equal(got, exp) {
		t.Errorf("List = %v, want %v", got, exp)
	}
}

func prefixed(p string, vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = p + v
	}
	return out
}

// tryAgain is a cluster's TRYAGAIN reply, as a hook injects it.
type tryAgain struct{}

func (tryAgain) Error() string {
	return "TRYAGAIN Multiple keys request during rehashing of slot (injected)"
}
func (tryAgain) RedisError() {}

// refuse is a hook that answers every script run naming key with
// TRYAGAIN, without sending it.
type refuse struct {
	key  string
	hits atomic.Int32
}

func (f *refuse) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *refuse) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() == "evalsha" && len(args) > 3 {
			n, _ := args[2].(int)
			for _, k := range args[3:min(len(args), 3+n)] {
				if k == f.key {
					f.hits.Add(1)
					cmd.SetErr(tryAgain{})
					return tryAgain{}
				}
			}
		}
		return next(ctx, cmd)
	}
}
func (f *refuse) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRefusedBlockRunUndoes: a write whose block run the cluster keeps
// refusing (TRYAGAIN, injected) is run again a few times, then fails with
// runtime.ErrUnavailable; on a cluster the claim and entries its earlier
// runs added are undone, so nothing is left for Repair.
func TestRefusedBlockRunUndoes(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		plain := ensured(t, model.NewMatchRedisRepository(shared))
		must(t, plain.Create(bg, &model.Match{ID: "m", Code: "a", Tags: []string{"x"}}))
		f := &refuse{key: "matches:{m}"}
		c.AddHook(f)
		matches := model.NewMatchRedisRepository(c)
		tags := []string{"y"}
		code := "b"
		err := matches.Update(bg, "m", model.MatchUpdate{Code: &code, Tags: &tags})
		if !errors.Is(err, runtime.ErrUnavailable) {
			t.Fatalf("Update whose block run is refused: %v, want ErrUnavailable", err)
		}
		if n := f.hits.Load(); n < 2 {
			t.Fatalf("the refused run was sent %d times, want it run again", n)
		}
		m, err := plain.Get(bg, "m")
		must(t, err)
		if m.Code != "a" || !slices.Equal(m.Tags, []string{"x"}) || m.Version != 1 {
			t.Fatalf("the refused Update changed the block: %+v", m)
		}
		if _, err := plain.GetByCode(bg, "b"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(b) after the refused Update: %v", err)
		}
		clean(t, "a refused Update", plain.Repair)
	})
}
