package redis_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/templates"
	rexplain "github.com/noamgen/noamgen/templates/redis"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var bg = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// schema loads an example package with the parser, as noamgen explain does.
func schema(t *testing.T, example string) *model.Schema {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "example", example))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func explainer(t *testing.T) templates.Explainer {
	t.Helper()
	ex, ok := templates.ExplainerOf("redis")
	if !ok {
		t.Fatal("redis registered no explainer")
	}
	return ex
}

// writeExamples stores the example blocks explain shows (block key 2345,
// or 2345/3; two elements per partition; every lookup holding a value)
// with the generated Redis repositories.
func writeExamples(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	must(t, game.NewGameRedisRepository(c).Create(bg, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick",
		Rounds: []game.Round{{Moves: []string{"a"}}, {Moves: []string{"b"}}}}))
	must(t, game.NewPlayerRedisRepository(c).Create(bg, &game.Player{Username: "2345", FirstName: "Mary", Games: []game.GameRef{{Game: "g1", Opponent: "rick"}}}))
	must(t, game.NewTournamentRedisRepository(c).Create(bg, &game.Tournament{ID: 2345, Name: "cup"}))
	must(t, hotel.NewHotelRedisRepository(c).Create(bg, &hotel.Hotel{ID: "2345", Name: "Ritz", City: "Rome", Stars: 4, Tags: []string{"spa"}, Address: hotel.Address{Zip: "00100"}}))
	must(t, hotel.NewPostRedisRepository(c).Create(bg, &hotel.Post{ID: 2345, Title: "hello", Author: "ann"}))
	must(t, hotel.NewCommentRedisRepository(c).Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 2345, Seq: 3}, Author: "bob"}))
}

// components renders an encoded key as its components joined by slashes
// (the paper's "2345/3").
func components(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		if s, err := r.String(); err == nil {
			out = append(out, s)
		} else if i, err := r.Int(); err == nil {
			out = append(out, fmt.Sprint(i))
		} else if u, err := r.Uint(); err == nil {
			out = append(out, fmt.Sprint(u))
		} else {
			t.Fatalf("%x is no encoded key", b)
		}
	}
	return out
}

// TestLayoutIsWhatTheStoreWrites writes the example block of every
// aggregate of example/game and example/hotel with the generated Redis
// repositories and compares it with the layout explain shows: the Redis
// keys (every key in the database is one explain names, and every key it
// names exists), the fields of the block's hash in the order HGETALL
// returns them, the listing member and the index-table members.
func TestLayoutIsWhatTheStoreWrites(t *testing.T) {
	c := redistest.Server(t)
	writeExamples(t, c)
	ex := explainer(t)
	var named []string
	for _, pkg := range []string{"game", "hotel"} {
		for _, a := range schema(t, pkg).Aggregates {
			named = append(named, rexplain.Keys(a)...)
			p := ex.Layout(a)
			if p.Containers[0].Example != rexplain.BlockName(a) {
				t.Errorf("%s: first container %+v", a.Name, p.Containers[0])
			}
			var want []string
			for _, st := range p.Example {
				want = append(want, st.Key)
			}
			// A small hash is a listpack: HKEYS returns the fields in
			// the order the script wrote them.
			fields, err := c.HKeys(bg, rexplain.BlockName(a)).Result()
			must(t, err)
			var got []string
			for _, f := range fields {
				got = append(got, rexplain.Field(f))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: explain shows the fields\n%s\nthe store wrote\n%s", a.Name, strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
			// The listing holds the example block key.
			members, err := c.ZRange(bg, rexplain.ListName(a), 0, -1).Result()
			must(t, err)
			if len(members) != 1 || strings.Join(components(t, []byte(members[0])), "/") != templates.ExampleKeyText(a) ||
				rexplain.KeyText([]byte(members[0])) != strings.TrimSuffix(strings.TrimPrefix(rexplain.BlockName(a), a.Collection+":{"), "}") {
				t.Errorf("%s: listing %q, explain shows %s", a.Name, members, p.Containers[1].Example)
			}
			// Index members are the value and the block key; the meta
			// hash has one field per member, the claims hash one per value.
			for _, l := range a.Lookups {
				z := rexplain.LookupName(a, l)
				members, err := c.ZRange(bg, z, 0, -1).Result()
				must(t, err)
				if len(members) != 1 {
					t.Errorf("%s: %d members", z, len(members))
					continue
				}
				comps := components(t, []byte(members[0]))
				keyParts := max(1, len(a.IDParts))
				if len(comps) != len(l.Parts)+keyParts || strings.Join(comps[len(l.Parts):], "/") != templates.ExampleKeyText(a) {
					t.Errorf("%s: member %q, want %d value parts and the block key %s", z, comps, len(l.Parts), templates.ExampleKeyText(a))
				}
				meta, err := c.HKeys(bg, z+":meta").Result()
				must(t, err)
				if !slices.Equal(meta, members) {
					t.Errorf("%s:meta has fields %q, the index %q", z, meta, members)
				}
				if l.Unique {
					claims, err := c.HGetAll(bg, z+":claims").Result()
					must(t, err)
					var bk []byte
					for v, owner := range claims {
						bk = []byte(owner)
						if v+owner != members[0] {
							t.Errorf("%s:claims %q -> %q, member %q", z, v, owner, members[0])
						}
					}
					if len(claims) != 1 || strings.Join(components(t, bk), "/") != templates.ExampleKeyText(a) {
						t.Errorf("%s:claims %q", z, claims)
					}
				}
			}
		}
	}
	keys, err := c.Keys(bg, "*").Result()
	must(t, err)
	sort.Strings(keys)
	sort.Strings(named)
	if !slices.Equal(keys, named) {
		t.Errorf("explain names the keys\n%s\nthe store wrote\n%s", strings.Join(named, "\n"), strings.Join(keys, "\n"))
	}
	for _, want := range []string{"Game:{2345}", "Comment:{2345,3}", "Comment:counter:{2345}", "Post:counter", "{Hotel.name}:claims", "Tournament:blocks"} {
		if !slices.Contains(named, want) {
			t.Errorf("explain does not name %s: %q", want, named)
		}
	}
}

// counter counts round trips: one per command, one per pipeline.
type counter struct {
	mu   sync.Mutex
	n    int
	cmds []string
}

func (h *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.n++
		h.cmds = append(h.cmds, cmd.Name())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.n++
		h.cmds = append(h.cmds, fmt.Sprintf("pipeline(%d)", len(cmds)))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *counter) reset() {
	h.mu.Lock()
	h.n, h.cmds = 0, nil
	h.mu.Unlock()
}

var termRE = regexp.MustCompile(`^(\d+)(?: (per|if) (.+))?$`)

// roundTrips evaluates explain's round-trip formula for mode ("node" or
// "cluster") with the given values of its terms; a term the scenario does
// not know is an error.
func roundTrips(t *testing.T, formula, mode string, terms map[string]int) int {
	t.Helper()
	f := formula
	if strings.HasPrefix(formula, "node: ") {
		node, cluster, ok := strings.Cut(strings.TrimPrefix(formula, "node: "), "; cluster: ")
		if !ok {
			t.Fatalf("round trips %q", formula)
		}
		f = map[string]string{"node": node, "cluster": cluster}[mode]
	}
	total := 0
	for _, term := range strings.Split(f, " + ") {
		m := termRE.FindStringSubmatch(term)
		if m == nil {
			t.Fatalf("round trips %q: term %q", formula, term)
		}
		n, _ := strconv.Atoi(m[1])
		if m[2] == "" {
			total += n
			continue
		}
		v, ok := terms[m[3]]
		if !ok {
			t.Fatalf("round trips %q: the scenario does not say %q", formula, m[3])
		}
		total += n * v
	}
	return total
}

// TestRoundTrips runs methods of the example repositories on a single
// node and on a 3-master cluster and compares the requests a go-redis hook
// counts (one per command, one per pipeline) with explain's formula for
// that mode, evaluated for what the call does.
func TestRoundTrips(t *testing.T) {
	g, h := schema(t, "game"), schema(t, "hotel")
	ex := explainer(t)
	for _, mode := range []string{"node", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			var c redis.UniversalClient
			if mode == "node" {
				c = redis.NewClient(redistest.Server(t).Options())
			} else {
				c = redis.NewClusterClient(redistest.Cluster(t).Options())
			}
			defer c.Close()
			writeExamples(t, c)
			hook := &counter{}
			c.AddHook(hook)
			games, players := game.NewGameRedisRepository(c), game.NewPlayerRedisRepository(c)
			hotels, posts := hotel.NewHotelRedisRepository(c), hotel.NewPostRedisRepository(c)
			// The script is loaded, so that no write pays for EVAL.
			must(t, games.EnsureIndexes(bg))
			for _, sc := range []struct {
				a     *model.Aggregate
				name  string
				call  func() error
				terms map[string]int
			}{
				{g.Aggregate("Game"), "Get", func() error { _, err := games.Get(bg, "2345"); return err }, nil},
				{g.Aggregate("Game"), "GetMany", func() error { _, err := games.GetMany(bg, []string{"2345", "x"}); return err }, nil},
				{g.Aggregate("Game"), "List", func() error { _, err := games.List(bg, runtime.PageRequest{}); return err }, map[string]int{"page": 1}},
				{g.Aggregate("Game"), "SetSecondPlayer", func() error { return games.SetSecondPlayer(bg, "2345", "ann") }, nil},
				{g.Aggregate("Game"), "AppendRounds", func() error { _, err := games.AppendRounds(bg, "2345", game.Round{}); return err }, nil},
				{g.Aggregate("Game"), "SetRoundsAt", func() error { return games.SetRoundsAt(bg, "2345", 1, game.Round{Spell: "x"}) }, nil},
				{g.Aggregate("Game"), "ListRounds", func() error { _, err := games.ListRounds(bg, "2345", runtime.PageRequest{}); return err }, map[string]int{"page": 1}},
				{g.Aggregate("Game"), "Put", func() error {
					x, err := games.Get(bg, "2345")
					if err != nil {
						return err
					}
					hook.reset()
					return games.Put(bg, x)
				}, nil},
				{g.Aggregate("Game"), "Create", func() error { return games.Create(bg, &game.Game{ID: "new"}) }, nil},
				{g.Aggregate("Game"), "Delete", func() error { return games.Delete(bg, "new") }, map[string]int{"the block was created again meanwhile": 0}},
				{g.Aggregate("Player"), "SetGames", func() error { return players.SetGames(bg, "2345", []game.GameRef{{Game: "g2"}}) },
					map[string]int{"new value of {Player.game}": 1, "{Player.game} loses values": 1}},
				{g.Aggregate("Player"), "ListByGame", func() error { _, err := players.ListByGame(bg, "g2", runtime.PageRequest{}); return err }, map[string]int{"page": 1}},
				{g.Aggregate("Player"), "Delete", func() error { return players.Delete(bg, "2345") },
					map[string]int{"the block was created again meanwhile": 0, "{Player.game} loses values": 1}},
				{h.Aggregate("Hotel"), "SetName", func() error { return hotels.SetName(bg, "2345", "Savoy") },
					map[string]int{"new value of {Hotel.name}": 1, "{Hotel.name} loses values": 1}},
				{h.Aggregate("Hotel"), "SetRooms", func() error { return hotels.SetRooms(bg, "2345", []hotel.Room{{Number: 1}}) }, nil},
				{h.Aggregate("Hotel"), "SetCity", func() error { return hotels.SetCity(bg, "2345", "Milan") },
					map[string]int{"new value of {Hotel.cityStars}": 1, "{Hotel.cityStars} loses values": 1}},
				{h.Aggregate("Hotel"), "GetByName", func() error { _, err := hotels.GetByName(bg, "Savoy"); return err }, nil},
				{h.Aggregate("Hotel"), "Create", func() error {
					return hotels.Create(bg, &hotel.Hotel{ID: "h2", Name: "Hilton", City: "Oslo", Stars: 3, Tags: []string{"a", "b"}, Address: hotel.Address{Zip: "1"}})
				}, map[string]int{"new value of {Hotel.name}": 1, "new value of {Hotel.cityStars}": 1, "new value of {Hotel.tags}": 2, "new value of {Hotel.addressZip}": 1}},
				{h.Aggregate("Post"), "Create", func() error { return posts.Create(bg, &hotel.Post{Title: "allocated", Author: "ann"}) },
					map[string]int{"the counter allocates the key": 1, "the key's number is given": 0, "new value of {Post.author}": 1}},
				{h.Aggregate("Post"), "Create", func() error { return posts.Create(bg, &hotel.Post{ID: 9000, Title: "given"}) },
					map[string]int{"the counter allocates the key": 0, "the key's number is given": 1, "new value of {Post.author}": 1}}, // the empty author is indexed too
				{h.Aggregate("Post"), "Put", func() error { return posts.Put(bg, &hotel.Post{ID: 2345, Title: "again", Author: "bob"}) },
					map[string]int{"new value of {Post.author}": 1, "{Post.author} loses values": 1}},
			} {
				var m templates.Method
				for _, mm := range templates.Methods(sc.a) {
					if mm.Name == sc.name {
						m = mm
					}
				}
				if m.Name == "" {
					t.Fatalf("%s has no method %s", sc.a.Name, sc.name)
				}
				cost := ex.Cost(sc.a, m, explain.AccessOf(sc.a, m))
				hook.reset()
				if err := sc.call(); err != nil {
					t.Fatalf("%s.%s: %v", sc.a.Name, sc.name, err)
				}
				want := roundTrips(t, cost.RoundTrips, mode, sc.terms)
				if hook.n != want {
					t.Errorf("%s.%s on a %s: %d round trips %v; explain says %q (%d)", sc.a.Name, sc.name, mode, hook.n, hook.cmds, cost.RoundTrips, want)
				}
			}
		})
	}
}

// TestSample samples a real single node and a real cluster: entry sizes
// straight from the hashes, the largest blocks and partitions, and that
// sampling writes nothing.
func TestSample(t *testing.T) {
	a := schema(t, "game").Aggregate("Game")
	ex := explainer(t)
	for _, mode := range []string{"node", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			var c redis.UniversalClient
			var url string
			if mode == "node" {
				s := redistest.Server(t)
				c, url = s, fmt.Sprintf("redis://%s/%d", s.Options().Addr, s.Options().DB)
			} else {
				cc := redistest.Cluster(t)
				c, url = cc, "redis://"+cc.Options().Addrs[0]
			}
			games := game.NewGameRedisRepository(c)
			writeExamples(t, c)
			big := &game.Game{ID: "big", FirstPlayer: "ann"}
			for range 5 {
				big.Rounds = append(big.Rounds, game.Round{Moves: []string{strings.Repeat("m", 200)}})
			}
			must(t, games.Create(bg, big))
			must(t, games.Create(bg, &game.Game{ID: "empty"}))
			// Expected sizes, straight from the hashes.
			perBlock := map[string]int{}
			elems, elemBytes, elemMax := 0, int64(0), 0
			for _, id := range []string{"2345", "big", "empty"} {
				h, err := c.HGetAll(bg, "Game:{"+id+"}").Result()
				must(t, err)
				for f, v := range h {
					perBlock[id] += len(f) + len(v)
					if strings.HasPrefix(f, "rounds[") {
						elems++
						elemBytes += int64(len(f) + len(v))
						elemMax = max(elemMax, len(f)+len(v))
					}
				}
			}
			before := c.DBSize(bg).Val()
			smp, err := ex.Sample(bg, a, map[string]string{"redis": url}, 10)
			must(t, err)
			if smp.Blocks != 3 {
				t.Fatalf("sampled %d blocks, want 3", smp.Blocks)
			}
			var rounds *templates.EntrySize
			for i, e := range smp.Entries {
				if e.Entry == "rounds[]" {
					rounds = &smp.Entries[i]
				}
			}
			if rounds == nil || rounds.Count != elems || rounds.Bytes != elemBytes || rounds.Max != elemMax || elems != 7 {
				t.Errorf("rounds[] sizes %+v, want %d elements, %d bytes, max %d", rounds, elems, elemBytes, elemMax)
			}
			if len(smp.Largest) != 3 || smp.Largest[0].Key != "big" || smp.Largest[0].Bytes != perBlock["big"] {
				t.Errorf("largest blocks %+v, want big first with %d bytes (%v)", smp.Largest, perBlock["big"], perBlock)
			}
			if len(smp.Partitions) == 0 || smp.Partitions[0].Key != "big" || smp.Partitions[0].Elements != 5 || smp.Partitions[0].Field != "rounds" {
				t.Errorf("largest partitions %+v, want rounds of big, 5 elements", smp.Partitions)
			}
			if smp.MaxValueBytes != 512<<20 || smp.LimitOf != "value" || len(smp.Warnings) != 0 {
				t.Errorf("limit %d per %s, warnings %q", smp.MaxValueBytes, smp.LimitOf, smp.Warnings)
			}
			// At most n blocks, in block-key order.
			smp, err = ex.Sample(bg, a, map[string]string{"redis": url}, 2)
			must(t, err)
			if smp.Blocks != 2 || len(smp.Largest) != 2 || smp.Largest[0].Key != "big" || smp.Largest[1].Key != "2345" {
				t.Fatalf("sample of 2: %+v", smp)
			}
			if after := c.DBSize(bg).Val(); after != before {
				t.Errorf("sampling changed the number of keys: %d, then %d", before, after)
			}
		})
	}
	if smp, err := ex.Sample(bg, a, map[string]string{}, 2); smp != nil || err != nil {
		t.Errorf("sample without a server: %+v, %v", smp, err)
	}
	if _, err := ex.Sample(bg, a, map[string]string{"redis": "http://nowhere"}, 2); err == nil {
		t.Error("sampling a bad URL succeeded")
	}
}
