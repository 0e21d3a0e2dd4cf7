package game_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
)

// TestMain stops the Redis servers the tests shared.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.Stop()
	os.Exit(code)
}

// TestRedisHashLayout checks the hash of a game (NoAM Fig. 4 on Redis):
// one hash named Game:{2345}, one field per entry, BSON values, the count
// and the version in decimal, the hidden write sequence and write token.
func TestRedisHashLayout(t *testing.T) {
	c := redistest.Server(t)
	games := game.NewGameRedisRepository(c)
	ctx := context.Background()
	must(t, games.Create(ctx, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick", Rounds: []game.Round{{Moves: []string{"0"}}, {Moves: []string{"1"}}, {Moves: []string{"2"}}}}))
	keys, err := c.Keys(ctx, "*").Result()
	must(t, err)
	slices.Sort(keys)
	if want := []string{"Game:blocks", "Game:{2345}"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	h, err := c.HGetAll(ctx, "Game:{2345}").Result()
	must(t, err)
	var fields []string
	for f := range h {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	if want := []string{"_seq", "_w", "firstPlayer", "rounds", "rounds[0]", "rounds[1]", "rounds[2]", "secondPlayer", "version"}; !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q", fields, want)
	}
	var first string
	must(t, bsonval.Decode([]byte(h["firstPlayer"]), &first))
	var r game.Round
	must(t, bsonval.Decode([]byte(h["rounds[1]"]), &r))
	if first != "mary" || r.Moves[0] != "1" || h["rounds"] != "3" || h["version"] != "1" {
		t.Fatalf("values: firstPlayer %q, rounds[1] %+v, rounds %q, version %q", first, r, h["rounds"], h["version"])
	}
	members, err := c.ZRange(ctx, "Game:blocks", 0, -1).Result()
	must(t, err)
	if len(members) != 1 || members[0] != "\x022345\x00" {
		t.Fatalf("listing members %q, want the encoded block key", members)
	}
}

// commands records the commands a client sends.
type commands struct {
	mu  sync.Mutex
	got []redis.Cmder
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.got = append(c.got, cmd)
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.got = append(c.got, cmds...)
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *commands) take() []redis.Cmder {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	return out
}

// sent is the size of the arguments of cmds.
func sent(cmds []redis.Cmder) int {
	n := 0
	for _, c := range cmds {
		n += len(argText(c))
	}
	return n
}

// argText is what command c sends, its arguments as the server gets them
// (a []byte argument as its bytes).
func argText(c redis.Cmder) string {
	var b strings.Builder
	for _, a := range c.Args() {
		switch v := a.(type) {
		case []byte:
			b.Write(v)
		case string:
			b.WriteString(v)
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// TestRedisRoundTrips checks, with a go-redis hook, what the entry-level
// methods send: Get is one HGETALL; AppendRounds one script run carrying
// the new round only, whatever the number of rounds; SetRoundsAt one run
// carrying one round.
func TestRedisRoundTrips(t *testing.T) {
	for _, mode := range []string{"single", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			// A client of its own, so that the hook stays out of the
			// other tests.
			var c redis.UniversalClient
			if mode == "single" {
				c = redis.NewClient(redistest.Server(t).Options())
			} else {
				c = redis.NewClusterClient(redistest.Cluster(t).Options())
			}
			defer c.Close()
			games := game.NewGameRedisRepository(c)
			ctx := context.Background()
			g := &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick"}
			for i := range 200 {
				g.Rounds = append(g.Rounds, game.Round{Moves: []string{fmt.Sprint("move", i)}, Spell: strings.Repeat("s", 100)})
			}
			must(t, games.Create(ctx, g))
			must(t, games.EnsureIndexes(ctx)) // loads the script
			hook := &commands{}
			c.AddHook(hook)

			got, err := games.Get(ctx, "2345")
			must(t, err)
			cmds := hook.take()
			if len(cmds) != 1 || cmds[0].Name() != "hgetall" || len(got.Rounds) != 200 {
				t.Fatalf("Get sent %v, want one HGETALL", cmds)
			}

			i, err := games.AppendRounds(ctx, "2345", game.Round{Moves: []string{"new"}})
			must(t, err)
			cmds = hook.take()
			if i != 200 || len(cmds) != 1 || cmds[0].Name() != "evalsha" {
				t.Fatalf("AppendRounds (index %d) sent %v, want one EVALSHA", i, cmds)
			}
			if n := sent(cmds); n > 2000 || !strings.Contains(argText(cmds[0]), "new") {
				t.Fatalf("AppendRounds sent %d bytes of arguments: %v; want the new round only", n, cmds[0].Args())
			}
			must(t, games.SetRoundsAt(ctx, "2345", 7, game.Round{Spell: "haste"}))
			cmds = hook.take()
			if len(cmds) != 1 || sent(cmds) > 2000 {
				t.Fatalf("SetRoundsAt sent %d commands, %d bytes", len(cmds), sent(cmds))
			}
			got, err = games.Get(ctx, "2345")
			must(t, err)
			if len(got.Rounds) != 201 || got.Rounds[200].Moves[0] != "new" || got.Rounds[7].Spell != "haste" || got.Version != 3 {
				t.Fatalf("after the writes: %d rounds, version %d", len(got.Rounds), got.Version)
			}
		})
	}
}

// TestRedisBlockOnOneSlot checks that a block is one key, on one slot of
// the cluster, and that blocks spread over the masters.
func TestRedisBlockOnOneSlot(t *testing.T) {
	c := redistest.Cluster(t)
	games := game.NewGameRedisRepository(c)
	ctx := context.Background()
	for i := range 30 {
		must(t, games.Create(ctx, &game.Game{ID: fmt.Sprint(i), Rounds: []game.Round{{}, {}}}))
	}
	var mu sync.Mutex
	perNode := map[string]int{}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "Game:{*}").Result()
		mu.Lock()
		perNode[m.Options().Addr] += len(keys)
		mu.Unlock()
		return err
	})
	must(t, err)
	total, nodes := 0, 0
	for _, n := range perNode {
		total += n
		if n > 0 {
			nodes++
		}
	}
	if total != 30 || nodes < 2 {
		t.Fatalf("30 games are %d hashes on %d masters (%v), want one hash each, spread", total, nodes, perNode)
	}
	slot, err := c.ClusterKeySlot(ctx, "Game:{7}").Result()
	must(t, err)
	if other, err := c.ClusterKeySlot(ctx, "7").Result(); err != nil || other != slot {
		t.Fatalf("Game:{7} is on slot %d, its hash tag 7 on %d (%v)", slot, other, err)
	}
}

// BenchmarkRedisAppendRound adds a round to games of 10, 100 and 1000
// rounds on a single Redis node: one script run carrying the new round, so
// the cost does not grow with the game (compare BenchmarkRedisPutGame,
// which rewrites the whole hash).
func BenchmarkRedisAppendRound(b *testing.B) {
	benchGames(b, func(b *testing.B, games *game.GameRedisRepository, g *game.Game) {
		for b.Loop() {
			if _, err := games.AppendRounds(context.Background(), g.ID, game.Round{Moves: []string{"e4", "e5"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRedisPutGame writes the whole game with Put (EAO-like).
func BenchmarkRedisPutGame(b *testing.B) {
	benchGames(b, func(b *testing.B, games *game.GameRedisRepository, g *game.Game) {
		for b.Loop() {
			if err := games.Put(context.Background(), g); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchGames(b *testing.B, fn func(b *testing.B, games *game.GameRedisRepository, g *game.Game)) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n, "rounds"), func(b *testing.B) {
			games := game.NewGameRedisRepository(redistest.Server(b))
			g := &game.Game{ID: "g", FirstPlayer: "mary", SecondPlayer: "rick"}
			for i := range n {
				g.Rounds = append(g.Rounds, game.Round{Moves: []string{fmt.Sprint("m", i), "e5"}})
			}
			must(b, games.Create(context.Background(), g))
			must(b, games.EnsureIndexes(context.Background()))
			fn(b, games, g)
		})
	}
}

// TestRedisErrors checks the error details, that failed writes change no
// field, and that a cancelled context stops an operation before it sends
// anything.
func TestRedisErrors(t *testing.T) {
	for _, mode := range []string{"single", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			var c redis.UniversalClient = redistest.Server(t)
			if mode == "cluster" {
				c = redistest.Cluster(t)
			}
			games := game.NewGameRedisRepository(c)
			ctx := context.Background()
			must(t, games.Create(ctx, &game.Game{ID: "g", FirstPlayer: "mary", Rounds: []game.Round{{Spell: "a"}}}))
			before, err := c.HGetAll(ctx, "Game:{g}").Result()
			must(t, err)
			err = games.SetRoundsAt(ctx, "g", 3, game.Round{})
			var re *runtime.Error
			if !errors.As(err, &re) || re.Detail != "rounds[3]" || re.Op != "SetRoundsAt" || re.ID != "g" || !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("SetRoundsAt out of range: %v (%+v)", err, re)
			}
			err = games.Put(ctx, &game.Game{ID: "g", Version: 5})
			if !errors.Is(err, runtime.ErrConflict) || !errors.As(err, &re) || re.Detail != "(stored version 1, expected 5)" {
				t.Fatalf("Put with a stale version: %v", err)
			}
			err = games.Put(ctx, &game.Game{ID: "new", Version: 5})
			if !errors.Is(err, runtime.ErrConflict) || !errors.As(err, &re) || re.Detail != "(no block, expected version 5)" {
				t.Fatalf("Put of a missing game with a version: %v", err)
			}
			err = games.Update(ctx, "g", game.GameUpdate{FirstPlayer: runtime.Ptr("x"), RoundsAt: map[int]game.Round{0: {Spell: "b"}, 1: {}}})
			wantErr(t, err, runtime.ErrNotFound, "Update with a missing element")
			wantErr(t, games.Create(ctx, &game.Game{ID: "g"}), runtime.ErrDuplicate, "Create of an existing game")
			_, err = games.AppendRounds(ctx, "none", game.Round{})
			wantErr(t, err, runtime.ErrNotFound, "AppendRounds of a missing game")
			wantErr(t, games.Delete(ctx, "none"), runtime.ErrNotFound, "Delete of a missing game")
			after, err := c.HGetAll(ctx, "Game:{g}").Result()
			must(t, err)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("failed writes changed the hash:\n%q\n%q", before, after)
			}
			if n, _ := c.Exists(ctx, "Game:{none}", "Game:{new}").Result(); n != 0 {
				t.Fatalf("failed writes created %d hashes", n)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := games.Get(cancelled, "g"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Get with a cancelled context: %v", err)
			}
			if _, err := games.AppendRounds(cancelled, "g", game.Round{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("AppendRounds with a cancelled context: %v", err)
			}
			for _, err := range games.All(cancelled) {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("All with a cancelled context: %v", err)
				}
			}
			g, err := games.Get(ctx, "g")
			must(t, err)
			if len(g.Rounds) != 1 || g.Version != 1 {
				t.Fatalf("after the failed writes: %d rounds, version %d", len(g.Rounds), g.Version)
			}
		})
	}
}
