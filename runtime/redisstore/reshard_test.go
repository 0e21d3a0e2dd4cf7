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

	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
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
	matches := model.NewMatchRedisRepository(cc)
	cards := model.NewCardRedisRepository(cc)
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
	if want := []string{"_inc", "_seq", "_w", "code", "level", "meta", "region", "rounds", "rounds[0]", "rounds[1]", "start", "tags", "venue", "version"}; !slices.Equal(layout, want) {
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
