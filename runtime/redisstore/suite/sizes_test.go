package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/internal/limit"
	"github.com/noamgen/noamgen/runtime/redisstore/redisharness"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// bulk is the argument limit the size tests lower both sides to: the
// adapter's (redisstore.MaxValueBytes, 512 MB) and the server's
// proto-max-bulk-len (whose smallest setting is 1 MB), so that they pass
// it with a few megabytes instead of gigabytes.
const bulk = 1 << 20

// lowerBulk sets proto-max-bulk-len of every server behind c to bulk and
// the adapter's limit with it, until the test ends.
func lowerBulk(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	set := func(ctx context.Context, c *redis.Client, v string) error {
		return c.ConfigSet(ctx, "proto-max-bulk-len", v).Err()
	}
	each := func(v string) error {
		if cc, ok := c.(*redis.ClusterClient); ok {
			return cc.ForEachShard(bg, func(ctx context.Context, c *redis.Client) error { return set(ctx, c, v) })
		}
		return set(bg, c.(*redis.Client), v)
	}
	must(t, each("1048576"))
	restore := limit.Set("redisstore.bulk", bulk)
	t.Cleanup(func() {
		restore()
		if err := each("536870912"); err != nil {
			t.Errorf("restoring proto-max-bulk-len: %v", err)
		}
	})
}

// TestConformanceSizes runs the conformance suite's size tests with
// Redis's argument limit lowered to 1 MB on the servers and in the
// adapter (TestConformance skips them at 512 MB): keys, index members
// and values just over the limit fail with runtime.ErrTooLarge before
// anything is sent, and just under it are stored, on a node and a cluster.
func TestConformanceSizes(t *testing.T) {
	for _, h := range []storetest.Harness{redisharness.Node(), redisharness.Cluster()} {
		t.Run(h.Name, func(t *testing.T) {
			h.Name += " (1 MB arguments)"
			h.Caps.MaxValueBytes, h.Caps.MaxKeyBytes, h.Caps.MaxIndexKeyBytes = bulk, bulk, bulk-1
			open := h.Open
			h.Open = func(t *testing.T) storetest.DB {
				db := open(t)
				lowerBulk(t, db.Handle.(redis.UniversalClient))
				return db
			}
			storetest.RunSizes(t, h)
		})
	}
}

// TestSplitArguments: a write whose values are each under Redis's
// argument limit but together over it gets through (a script run's
// arguments go in several ARGVs): the Create with two 300 MB
// fields, scaled to two 700 KB rounds under a 1 MB proto-max-bulk-len
// (before, the packed argument was refused and the client saw
// "connection reset by peer", outcome unknown); also many small values
// together over the limit, and a whole-block Put and an Update of the
// same. A value over the limit alone is refused before sending.
func TestSplitArguments(t *testing.T) {
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		lowerBulk(t, c)
		matches := ensured(t, model.NewMatchRedisRepository(c))
		big := func(tag string) model.Round {
			return model.Round{Serial: tag, Moves: []string{strings.Repeat(tag, 700<<10/len(tag))}}
		}
		two := &model.Match{ID: "two", Code: "two", Rounds: []model.Round{big("a"), big("b")}}
		must(t, matches.Create(bg, two))
		got, err := matches.Get(bg, "two")
		must(t, err)
		if len(got.Rounds) != 2 || got.Rounds[0].Moves[0] != two.Rounds[0].Moves[0] || got.Rounds[1].Moves[0] != two.Rounds[1].Moves[0] {
			t.Fatalf("the match with two 700 KB rounds came back with %d rounds", len(got.Rounds))
		}
		// Many small values, together 1.5 MB: packed pieces.
		many := &model.Match{ID: "many", Code: "many"}
		for i := range 3000 {
			many.Rounds = append(many.Rounds, model.Round{Serial: "many/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26), Moves: []string{strings.Repeat("m", 400)}})
		}
		must(t, matches.Create(bg, many))
		gotMany, err := matches.Get(bg, "many")
		must(t, err)
		if len(gotMany.Rounds) != 3000 || gotMany.Rounds[2999].Serial != many.Rounds[2999].Serial {
			t.Fatalf("the match with 3000 rounds came back with %d", len(gotMany.Rounds))
		}
		// A whole-block Put and an Update with two large values.
		got.Rounds = []model.Round{big("c"), big("d"), big("e")}
		must(t, matches.Put(bg, got))
		must(t, matches.Update(bg, "two", model.MatchUpdate{RoundsAt: map[int]model.Round{0: big("f"), 2: big("g")}}))
		got, err = matches.Get(bg, "two")
		must(t, err)
		if serials := []string{got.Rounds[0].Serial, got.Rounds[1].Serial, got.Rounds[2].Serial}; strings.Join(serials, "") != "fdg" || got.Version != 3 {
			t.Fatalf("after Put and Update: rounds %v, version %d", serials, got.Version)
		}
		for _, serial := range []string{"f", "d", "g", "many/a", many.Rounds[2999].Serial} {
			if _, err := matches.GetByRoundsSerial(bg, serial); err != nil {
				t.Fatalf("GetByRoundsSerial(%.20q): %v", serial, err)
			}
		}
		// One value over the limit: refused before sending, nothing written.
		over := &model.Match{ID: "over", Rounds: []model.Round{{Serial: "o", Moves: []string{strings.Repeat("o", bulk)}}}}
		if err := matches.Create(bg, over); !errors.Is(err, runtime.ErrTooLarge) || !strings.Contains(err.Error(), "1048576") {
			t.Fatalf("Create with a value over the 1 MB limit: %v", err)
		}
		if _, err := matches.Get(bg, "over"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Get after the refused Create: %v", err)
		}
		clean(t, "large writes", matches.Repair)
	})
}
