// Package gametest is the store-independent test suite of the example's
// generated repositories. It is written once against the generated
// interfaces; every store runs all of it through the store's harness
// (runtime/storetest.Harness, the one the conformance suite takes), so a
// new store gets it for free.
package gametest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Stores are the repositories under test, over an empty database.
type Stores struct {
	Games       game.GameRepository
	Players     game.PlayerRepository
	Tournaments game.TournamentRepository
	// UnorderedScan says that List and All return blocks in no defined
	// order (DynamoDB scans): the suite then checks that every block comes
	// once, not their order.
	UnorderedScan bool
}

// listed returns keys as the suite compares them: sorted when the store
// promises no scan order.
func listed[K cmp.Ordered](s Stores, keys []K) []K {
	if s.UnorderedScan {
		keys = slices.Clone(keys)
		slices.Sort(keys)
	}
	return keys
}

// stores makes the example's repositories over a database of any store.
var stores = storetest.Opener[Stores](func(h any, o ...runtime.Option) (Stores, error) {
	var err error
	s := Stores{Games: storetest.Make(&err, game.NewGameRepository, h, o), Players: storetest.Make(&err, game.NewPlayerRepository, h, o), Tournaments: storetest.Make(&err, game.NewTournamentRepository, h, o)}
	return s, err
})

// Run runs the whole suite against the store of h: an empty database per
// subtest.
func Run(t *testing.T, h storetest.Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Stores)
	}{
		{"GetMissing", testGetMissing},
		{"CreateGet", testCreateGet},
		{"CreateDuplicate", testCreateDuplicate},
		{"PutUpsert", testPutUpsert},
		{"PutVersion", testPutVersion},
		{"Delete", testDelete},
		{"Setters", testSetters},
		{"SettersBumpVersion", testSettersBumpVersion},
		{"AppendRounds", testAppendRounds},
		{"SetRoundsAt", testSetRoundsAt},
		{"ListRounds", testListRounds},
		{"Update", testUpdate},
		{"UpdateIsAtomic", testUpdateIsAtomic},
		{"UpdateEmpty", testUpdateEmpty},
		{"List", testList},
		{"ListIntegerKeys", testListIntegerKeys},
		{"ListChangesBetweenPages", testListChangesBetweenPages},
		{"BadCursors", testBadCursors},
		{"All", testAll},
		{"EAO", testEAO},
		{"PlayersByGame", testPlayersByGame},
		{"RefsAndGetMany", testRefsAndGetMany},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := stores.Open(t, h)
			s.UnorderedScan = !h.Caps.OrderedScan
			must(t, s.Games.EnsureIndexes(ctx))
			must(t, s.Players.EnsureIndexes(ctx))
			must(t, s.Tournaments.EnsureIndexes(ctx))
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func round(moves ...string) game.Round { return game.Round{Moves: moves} }

func newGame(id string, rounds ...game.Round) *game.Game {
	return &game.Game{ID: id, FirstPlayer: "mary", SecondPlayer: "rick", Rounds: rounds}
}

func getGame(t *testing.T, s Stores, id string) *game.Game {
	t.Helper()
	g, err := s.Games.Get(ctx, id)
	must(t, err)
	return g
}

// equalGames compares games treating nil and empty slices alike.
func equalGames(a, b *game.Game) bool {
	na, nb := *a, *b
	if len(na.Rounds) == 0 && len(nb.Rounds) == 0 {
		na.Rounds, nb.Rounds = nil, nil
	}
	if len(na.Rounds) != len(nb.Rounds) || na.ID != nb.ID || na.FirstPlayer != nb.FirstPlayer || na.SecondPlayer != nb.SecondPlayer || na.Version != nb.Version {
		return false
	}
	for i := range na.Rounds {
		if !reflect.DeepEqual(normRound(na.Rounds[i]), normRound(nb.Rounds[i])) {
			return false
		}
	}
	return true
}

func normRound(r game.Round) game.Round {
	if len(r.Moves) == 0 {
		r.Moves = nil
	}
	if len(r.Comments) == 0 {
		r.Comments = nil
	}
	if len(r.Actions) == 0 {
		r.Actions = nil
	}
	return r
}

func testGetMissing(t *testing.T, s Stores) {
	_, err := s.Games.Get(ctx, "nope")
	wantErr(t, err, runtime.ErrNotFound, "Get of a missing game")
	var re *runtime.Error
	if !errors.As(err, &re) || re.Aggregate != "Game" || re.ID != "nope" || re.Op != "Get" {
		t.Fatalf("error %v does not say which aggregate and id: %+v", err, re)
	}
	if !strings.Contains(err.Error(), "Game nope") {
		t.Fatalf("error text %q does not name the block", err)
	}
	_, err = s.Players.Get(ctx, "nobody")
	wantErr(t, err, runtime.ErrNotFound, "Get of a missing player")
	_, err = s.Tournaments.Get(ctx, 7)
	wantErr(t, err, runtime.ErrNotFound, "Get of a missing tournament")
}

func testCreateGet(t *testing.T, s Stores) {
	g := newGame("2345", game.Round{Moves: []string{"e4", "e5"}, Comments: []string{"gg"}}, game.Round{Moves: []string{"d4"}, Actions: []string{"cast"}, Spell: "fireball"})
	must(t, s.Games.Create(ctx, g))
	if g.Version != 1 {
		t.Fatalf("Create set Version to %d, want 1", g.Version)
	}
	got := getGame(t, s, "2345")
	if !equalGames(got, g) {
		t.Fatalf("Get = %+v, want %+v", got, g)
	}
	p := &game.Player{Username: "mary", FirstName: "Mary", LastName: "Wilson", Games: []game.GameRef{{Game: "2345", Opponent: "rick"}, {Game: "2611", Opponent: "ann"}}}
	must(t, s.Players.Create(ctx, p))
	gp, err := s.Players.Get(ctx, "mary")
	must(t, err)
	if !reflect.DeepEqual(gp, p) {
		t.Fatalf("Get = %+v, want %+v", gp, p)
	}
	// A game with no rounds at all (nil slice) reads back with no rounds
	// and can be appended to.
	must(t, s.Games.Create(ctx, newGame("empty")))
	if g := getGame(t, s, "empty"); len(g.Rounds) != 0 {
		t.Fatalf("rounds of an empty game: %v", g.Rounds)
	}
	i, err := s.Games.AppendRounds(ctx, "empty", round("a"))
	must(t, err)
	if i != 0 {
		t.Fatalf("first append index %d, want 0", i)
	}
}

func testCreateDuplicate(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("g1", round("a"))))
	dup := newGame("g1")
	dup.FirstPlayer = "intruder"
	err := s.Games.Create(ctx, dup)
	wantErr(t, err, runtime.ErrDuplicate, "Create of an existing game")
	g := getGame(t, s, "g1")
	if g.FirstPlayer != "mary" || len(g.Rounds) != 1 || g.Version != 1 {
		t.Fatalf("failed Create changed the stored game: %+v", g)
	}
}

func testPutUpsert(t *testing.T, s Stores) {
	p := &game.Player{Username: "rick", FirstName: "Ricky", LastName: "Doe", Score: 42}
	must(t, s.Players.Put(ctx, p)) // creates
	p2 := &game.Player{Username: "rick", FirstName: "Rick", Games: []game.GameRef{{Game: "1", Opponent: "mary"}}}
	must(t, s.Players.Put(ctx, p2)) // replaces whole: LastName and Score become zero
	got, err := s.Players.Get(ctx, "rick")
	must(t, err)
	if !reflect.DeepEqual(got, p2) {
		t.Fatalf("after Put: %+v, want %+v", got, p2)
	}
}

func testPutVersion(t *testing.T, s Stores) {
	g := newGame("v", round("a"))
	must(t, s.Games.Put(ctx, g)) // version 0: create
	if g.Version != 1 {
		t.Fatalf("Put of a new game set version %d, want 1", g.Version)
	}
	stale := *getGame(t, s, "v")
	g.SecondPlayer = "ann"
	must(t, s.Games.Put(ctx, g))
	if g.Version != 2 {
		t.Fatalf("version after second Put: %d, want 2", g.Version)
	}
	stale.SecondPlayer = "johnny"
	stale.Rounds = nil
	err := s.Games.Put(ctx, &stale)
	wantErr(t, err, runtime.ErrConflict, "Put with a stale version")
	if stale.Version != 1 {
		t.Fatalf("failed Put changed the caller's version to %d", stale.Version)
	}
	got := getGame(t, s, "v")
	if got.SecondPlayer != "ann" || len(got.Rounds) != 1 || got.Version != 2 {
		t.Fatalf("failed Put changed the stored game: %+v", got)
	}
	fresh := newGame("v")
	wantErr(t, s.Games.Put(ctx, fresh), runtime.ErrConflict, "Put with version 0 over an existing game")
	ghost := newGame("ghost")
	ghost.Version = 3
	wantErr(t, s.Games.Put(ctx, ghost), runtime.ErrConflict, "Put with a version of a game that does not exist")
	if _, err := s.Games.Get(ctx, "ghost"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("failed Put created the game: %v", err)
	}
}

func testDelete(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("d", round("a"), round("b"))))
	must(t, s.Games.Create(ctx, newGame("keep", round("x"))))
	must(t, s.Games.Delete(ctx, "d"))
	_, err := s.Games.Get(ctx, "d")
	wantErr(t, err, runtime.ErrNotFound, "Get after Delete")
	wantErr(t, s.Games.Delete(ctx, "d"), runtime.ErrNotFound, "second Delete")
	if g := getGame(t, s, "keep"); len(g.Rounds) != 1 {
		t.Fatalf("Delete touched another game: %+v", g)
	}
	// A deleted block can be created again, from scratch.
	must(t, s.Games.Create(ctx, newGame("d")))
	if g := getGame(t, s, "d"); len(g.Rounds) != 0 || g.Version != 1 {
		t.Fatalf("re-created game kept old entries: %+v", g)
	}
	i, err := s.Games.AppendRounds(ctx, "d", round("new"))
	must(t, err)
	if i != 0 {
		t.Fatalf("append to re-created game got index %d, want 0", i)
	}
	wantErr(t, s.Tournaments.Delete(ctx, 99), runtime.ErrNotFound, "Delete of a missing tournament")
}

func testSetters(t *testing.T, s Stores) {
	p := &game.Player{Username: "ann", FirstName: "Ann", LastName: "Smith", Score: 10, Games: []game.GameRef{{Game: "g", Opponent: "rick"}}}
	must(t, s.Players.Create(ctx, p))
	must(t, s.Players.SetFirstName(ctx, "ann", "Annie"))
	must(t, s.Players.SetScore(ctx, "ann", 0)) // the zero value is written
	must(t, s.Players.SetGames(ctx, "ann", nil))
	got, err := s.Players.Get(ctx, "ann")
	must(t, err)
	if got.FirstName != "Annie" || got.LastName != "Smith" || got.Score != 0 || len(got.Games) != 0 {
		t.Fatalf("after setters: %+v", got)
	}
	wantErr(t, s.Players.SetFirstName(ctx, "nobody", "X"), runtime.ErrNotFound, "setter on a missing player")
	if _, err := s.Players.Get(ctx, "nobody"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("setter on a missing player created it: %v", err)
	}
}

func testSettersBumpVersion(t *testing.T, s Stores) {
	g := newGame("sv", round("a"))
	must(t, s.Games.Create(ctx, g))
	must(t, s.Games.SetFirstPlayer(ctx, "sv", "johnny"))
	if v := getGame(t, s, "sv").Version; v != 2 {
		t.Fatalf("version after setter: %d, want 2", v)
	}
	// A Put based on the game as read before the setter must now conflict.
	g.FirstPlayer = "stale"
	wantErr(t, s.Games.Put(ctx, g), runtime.ErrConflict, "Put after a concurrent setter")
	_, err := s.Games.AppendRounds(ctx, "sv", round("b"))
	must(t, err)
	must(t, s.Games.SetRoundsAt(ctx, "sv", 0, round("a2")))
	got := getGame(t, s, "sv")
	if got.Version != 4 || got.FirstPlayer != "johnny" {
		t.Fatalf("after append and set-at: %+v, want version 4", got)
	}
}

func testAppendRounds(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("a", round("r0"))))
	for want := 1; want <= 3; want++ {
		i, err := s.Games.AppendRounds(ctx, "a", round(fmt.Sprintf("r%d", want)))
		must(t, err)
		if i != want {
			t.Fatalf("AppendRounds returned %d, want %d", i, want)
		}
	}
	g := getGame(t, s, "a")
	var moves []string
	for _, r := range g.Rounds {
		moves = append(moves, r.Moves...)
	}
	if !slices.Equal(moves, []string{"r0", "r1", "r2", "r3"}) {
		t.Fatalf("rounds after appends: %v", moves)
	}
	_, err := s.Games.AppendRounds(ctx, "missing", round("x"))
	wantErr(t, err, runtime.ErrNotFound, "AppendRounds to a missing game")
	if _, err := s.Games.Get(ctx, "missing"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("append to a missing game created it: %v", err)
	}
	// Put then append continues after the Put's rounds.
	g.Rounds = g.Rounds[:2]
	must(t, s.Games.Put(ctx, g))
	i, err := s.Games.AppendRounds(ctx, "a", round("after-put"))
	must(t, err)
	if i != 2 {
		t.Fatalf("append after Put of 2 rounds returned %d, want 2", i)
	}
}

func testSetRoundsAt(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("s", round("r0"), round("r1"), round("r2"))))
	must(t, s.Games.SetRoundsAt(ctx, "s", 1, game.Round{Moves: []string{"x"}, Spell: "ice"}))
	g := getGame(t, s, "s")
	if len(g.Rounds) != 3 || g.Rounds[1].Spell != "ice" || g.Rounds[0].Moves[0] != "r0" || g.Rounds[2].Moves[0] != "r2" {
		t.Fatalf("after SetRoundsAt: %+v", g.Rounds)
	}
	for _, i := range []int{3, 10, -1} {
		err := s.Games.SetRoundsAt(ctx, "s", i, round("bad"))
		wantErr(t, err, runtime.ErrNotFound, fmt.Sprintf("SetRoundsAt(%d) out of range", i))
	}
	after := getGame(t, s, "s")
	if len(after.Rounds) != 3 || after.Version != g.Version {
		t.Fatalf("out-of-range SetRoundsAt changed the game: %d rounds, version %d", len(after.Rounds), after.Version)
	}
	err := s.Games.SetRoundsAt(ctx, "missing", 0, round("x"))
	wantErr(t, err, runtime.ErrNotFound, "SetRoundsAt on a missing game")
}

func testListRounds(t *testing.T, s Stores) {
	var rounds []game.Round
	for i := range 7 {
		rounds = append(rounds, round(fmt.Sprint(i)))
	}
	must(t, s.Games.Create(ctx, newGame("lr", rounds...)))
	must(t, s.Games.Create(ctx, newGame("other", rounds...)))
	var got []string
	var sizes []int
	req := runtime.PageRequest{Limit: 3}
	for {
		page, err := s.Games.ListRounds(ctx, "lr", req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		for _, r := range page.Items {
			got = append(got, r.Moves[0])
		}
		if page.Next == "" {
			break
		}
		if len(sizes) > 10 {
			t.Fatal("ListRounds does not end")
		}
		req.Cursor = page.Next
	}
	if !slices.Equal(got, []string{"0", "1", "2", "3", "4", "5", "6"}) || !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Fatalf("ListRounds pages %v: %v", sizes, got)
	}
	// Exactly one full page: no Next.
	page, err := s.Games.ListRounds(ctx, "lr", runtime.PageRequest{Limit: 7})
	must(t, err)
	if len(page.Items) != 7 || page.Next != "" {
		t.Fatalf("ListRounds with limit 7 of 7: %d items, next %q", len(page.Items), page.Next)
	}
	// A cursor of one game does not work on another.
	first, err := s.Games.ListRounds(ctx, "lr", runtime.PageRequest{Limit: 2})
	must(t, err)
	_, err = s.Games.ListRounds(ctx, "other", runtime.PageRequest{Limit: 2, Cursor: first.Next})
	wantErr(t, err, runtime.ErrBadCursor, "a ListRounds cursor used on another game")
	_, err = s.Games.ListRounds(ctx, "missing", runtime.PageRequest{})
	wantErr(t, err, runtime.ErrNotFound, "ListRounds of a missing game")
	must(t, s.Games.Create(ctx, newGame("norounds")))
	page, err = s.Games.ListRounds(ctx, "norounds", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 || page.Next != "" {
		t.Fatalf("ListRounds of a game without rounds: %+v", page)
	}
}

func testUpdate(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("u", round("r0"), round("r1"))))
	err := s.Games.Update(ctx, "u", game.GameUpdate{
		SecondPlayer: runtime.Ptr("ann"),
		RoundsAt:     map[int]game.Round{1: round("R1"), 0: round("R0")},
	})
	must(t, err)
	g := getGame(t, s, "u")
	if g.FirstPlayer != "mary" || g.SecondPlayer != "ann" || g.Rounds[0].Moves[0] != "R0" || g.Rounds[1].Moves[0] != "R1" || g.Version != 2 {
		t.Fatalf("after Update: %+v", g)
	}
	// Zero values are written.
	must(t, s.Games.Update(ctx, "u", game.GameUpdate{FirstPlayer: runtime.Ptr("")}))
	if g := getGame(t, s, "u"); g.FirstPlayer != "" || g.SecondPlayer != "ann" {
		t.Fatalf("Update to the zero value: %+v", g)
	}
	// IfVersion.
	must(t, s.Games.Update(ctx, "u", game.GameUpdate{FirstPlayer: runtime.Ptr("mary"), IfVersion: 3}))
	err = s.Games.Update(ctx, "u", game.GameUpdate{FirstPlayer: runtime.Ptr("late"), IfVersion: 3})
	wantErr(t, err, runtime.ErrConflict, "Update with a stale IfVersion")
	if g := getGame(t, s, "u"); g.FirstPlayer != "mary" || g.Version != 4 {
		t.Fatalf("stale Update changed the game: %+v", g)
	}
	err = s.Games.Update(ctx, "missing", game.GameUpdate{FirstPlayer: runtime.Ptr("x")})
	wantErr(t, err, runtime.ErrNotFound, "Update of a missing game")
	if _, err := s.Games.Get(ctx, "missing"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Update of a missing game created it: %v", err)
	}
	// Players: ETF update of several top-level entries.
	must(t, s.Players.Create(ctx, &game.Player{Username: "p", FirstName: "F", LastName: "L", Score: 3}))
	must(t, s.Players.Update(ctx, "p", game.PlayerUpdate{Score: runtime.Ptr(9), Games: &[]game.GameRef{{Game: "u", Opponent: "q"}}}))
	p, err := s.Players.Get(ctx, "p")
	must(t, err)
	if p.FirstName != "F" || p.LastName != "L" || p.Score != 9 || len(p.Games) != 1 {
		t.Fatalf("player after Update: %+v", p)
	}
}

func testUpdateIsAtomic(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("at", round("r0"))))
	// One of the changes is impossible (no round 5): nothing is written.
	err := s.Games.Update(ctx, "at", game.GameUpdate{
		FirstPlayer: runtime.Ptr("changed"),
		RoundsAt:    map[int]game.Round{0: round("changed"), 5: round("bad")},
	})
	wantErr(t, err, runtime.ErrNotFound, "Update of a missing element")
	if !strings.Contains(err.Error(), "rounds[5]") {
		t.Fatalf("error %q does not name the missing element", err)
	}
	g := getGame(t, s, "at")
	if g.FirstPlayer != "mary" || g.Rounds[0].Moves[0] != "r0" || len(g.Rounds) != 1 || g.Version != 1 {
		t.Fatalf("failed Update changed the game: %+v", g)
	}
}

func testUpdateEmpty(t *testing.T, s Stores) {
	must(t, s.Games.Create(ctx, newGame("e")))
	must(t, s.Games.Update(ctx, "e", game.GameUpdate{}))
	if v := getGame(t, s, "e").Version; v != 1 {
		t.Fatalf("empty Update bumped the version to %d", v)
	}
	wantErr(t, s.Games.Update(ctx, "missing", game.GameUpdate{}), runtime.ErrNotFound, "empty Update of a missing game")
	wantErr(t, s.Games.Update(ctx, "e", game.GameUpdate{IfVersion: 7}), runtime.ErrConflict, "empty Update with a stale IfVersion")
}

func listPlayers(t *testing.T, s Stores, limit int) ([]string, []int) {
	t.Helper()
	var keys []string
	var sizes []int
	req := runtime.PageRequest{Limit: limit}
	for range 1000 {
		page, err := s.Players.List(ctx, req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		for _, p := range page.Items {
			keys = append(keys, p.Username)
		}
		if page.Next == "" {
			return keys, sizes
		}
		req.Cursor = page.Next
	}
	t.Fatal("List does not end")
	return nil, nil
}

func testList(t *testing.T, s Stores) {
	keys, _ := listPlayers(t, s, 10)
	if len(keys) != 0 {
		t.Fatalf("List of an empty collection: %v", keys)
	}
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("player%02d", (i*7)%25) // inserted out of order
		must(t, s.Players.Create(ctx, &game.Player{Username: name, Score: i}))
	}
	for i := range 25 {
		want = append(want, fmt.Sprintf("player%02d", i))
	}
	keys, sizes := listPlayers(t, s, 10)
	if !slices.Equal(listed(s, keys), want) || !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Fatalf("List pages %v: %v", sizes, keys)
	}
	keys, sizes = listPlayers(t, s, 25)
	if len(keys) != 25 || !slices.Equal(sizes, []int{25}) {
		t.Fatalf("List with limit equal to the count: pages %v", sizes)
	}
	keys, sizes = listPlayers(t, s, 5)
	if !slices.Equal(listed(s, keys), want) || len(sizes) != 5 {
		t.Fatalf("List by 5: pages %v", sizes)
	}
	// The default limit returns everything here in one page.
	page, err := s.Players.List(ctx, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 25 || page.Next != "" {
		t.Fatalf("List with the default limit: %d items, next %q", len(page.Items), page.Next)
	}
}

func testListIntegerKeys(t *testing.T, s Stores) {
	ids := []int64{100, 2, -5, 10, 1 << 40, 0, -1 << 40}
	for _, id := range ids {
		must(t, s.Tournaments.Create(ctx, &game.Tournament{ID: id, Name: fmt.Sprint("t", id)}))
	}
	var got []int64
	req := runtime.PageRequest{Limit: 3}
	for range 100 {
		page, err := s.Tournaments.List(ctx, req)
		must(t, err)
		for _, tt := range page.Items {
			got = append(got, tt.ID)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(listed(s, got), want) {
		t.Fatalf("tournaments listed as %v, want numeric order %v", got, want)
	}
}

func testListChangesBetweenPages(t *testing.T, s Stores) {
	for i := range 10 {
		must(t, s.Players.Create(ctx, &game.Player{Username: fmt.Sprintf("p%d", i)}))
	}
	page, err := s.Players.List(ctx, runtime.PageRequest{Limit: 4})
	must(t, err) // p0..p3
	if s.UnorderedScan {
		testListChangesUnordered(t, s, page)
		return
	}
	// Between pages: delete an item already seen and one not yet seen, and
	// insert one before the cursor and one after it.
	must(t, s.Players.Delete(ctx, "p1"))
	must(t, s.Players.Delete(ctx, "p6"))
	must(t, s.Players.Create(ctx, &game.Player{Username: "p0a"}))
	must(t, s.Players.Create(ctx, &game.Player{Username: "p7a"}))
	var rest []string
	req := runtime.PageRequest{Limit: 4, Cursor: page.Next}
	for range 100 {
		page, err := s.Players.List(ctx, req)
		must(t, err)
		for _, p := range page.Items {
			rest = append(rest, p.Username)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if want := []string{"p4", "p5", "p7", "p7a", "p8", "p9"}; !slices.Equal(rest, want) {
		t.Fatalf("pages after the changes: %v, want %v (no item skipped or repeated)", rest, want)
	}
	// Deleting the very item a cursor points at does not break the cursor.
	page, err = s.Players.List(ctx, runtime.PageRequest{Limit: 2}) // p0, p0a
	must(t, err)
	must(t, s.Players.Delete(ctx, "p0a"))
	page, err = s.Players.List(ctx, runtime.PageRequest{Limit: 2, Cursor: page.Next})
	must(t, err)
	if len(page.Items) != 2 || page.Items[0].Username != "p2" {
		t.Fatalf("page after deleting the cursor's item: %+v", page.Items)
	}
}

// testListChangesUnordered is testListChangesBetweenPages for a store
// without a scan order: every block that exists throughout is listed once,
// a block deleted before it was reached is not listed, and deleting the
// block a cursor points at does not break the cursor.
func testListChangesUnordered(t *testing.T, s Stores, first runtime.Page[*game.Player]) {
	seen := map[string]int{}
	for _, p := range first.Items {
		seen[p.Username]++
	}
	var gone []string
	for _, name := range []string{"p1", "p6"} {
		if seen[name] == 0 {
			gone = append(gone, name)
		}
		must(t, s.Players.Delete(ctx, name))
	}
	must(t, s.Players.Create(ctx, &game.Player{Username: "p0a"}))
	must(t, s.Players.Create(ctx, &game.Player{Username: "p7a"}))
	req := runtime.PageRequest{Limit: 4, Cursor: first.Next}
	for range 100 {
		page, err := s.Players.List(ctx, req)
		must(t, err)
		for _, p := range page.Items {
			seen[p.Username]++
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	for _, name := range []string{"p0", "p2", "p3", "p4", "p5", "p7", "p8", "p9"} {
		if seen[name] != 1 {
			t.Fatalf("pages after the changes: %s listed %d times, want once (%v)", name, seen[name], seen)
		}
	}
	for _, name := range append(gone, "p0a", "p7a") {
		if seen[name] > 1 {
			t.Fatalf("pages after the changes: %s listed %d times (%v)", name, seen[name], seen)
		}
	}
	for _, name := range gone {
		if seen[name] != 0 {
			t.Fatalf("pages after the changes: %s listed after it was deleted (%v)", name, seen)
		}
	}
	page, err := s.Players.List(ctx, runtime.PageRequest{Limit: 2})
	must(t, err)
	must(t, s.Players.Delete(ctx, page.Items[1].Username))
	next, err := s.Players.List(ctx, runtime.PageRequest{Limit: 2, Cursor: page.Next})
	must(t, err)
	if len(next.Items) != 2 || next.Items[0].Username == page.Items[1].Username || next.Items[0].Username == page.Items[0].Username {
		t.Fatalf("page after deleting the cursor's item: %+v", next.Items)
	}
}

func testBadCursors(t *testing.T, s Stores) {
	for i := range 5 {
		must(t, s.Players.Create(ctx, &game.Player{Username: fmt.Sprintf("b%d", i)}))
		must(t, s.Tournaments.Create(ctx, &game.Tournament{ID: int64(i)}))
	}
	must(t, s.Games.Create(ctx, newGame("g", round("1"), round("2"), round("3"))))
	page, err := s.Players.List(ctx, runtime.PageRequest{Limit: 2})
	must(t, err)
	good := page.Next
	tpage, err := s.Tournaments.List(ctx, runtime.PageRequest{Limit: 2})
	must(t, err)
	rpage, err := s.Games.ListRounds(ctx, "g", runtime.PageRequest{Limit: 1})
	must(t, err)
	flip := []byte(good)
	flip[len(flip)/2] ^= 1
	bad := map[string]string{
		"garbage":              "!!not a cursor!!",
		"truncated":            good[:len(good)-3],
		"one byte changed":     string(flip),
		"extended":             good + "AA",
		"empty payload":        "AQ",
		"other aggregate":      tpage.Next,
		"other query (rounds)": rpage.Next,
	}
	for name, c := range bad {
		if c == good {
			t.Fatalf("%s: cursor unchanged", name)
		}
		_, err := s.Players.List(ctx, runtime.PageRequest{Limit: 2, Cursor: c})
		wantErr(t, err, runtime.ErrBadCursor, "List with a "+name+" cursor")
	}
	_, err = s.Tournaments.List(ctx, runtime.PageRequest{Cursor: good})
	wantErr(t, err, runtime.ErrBadCursor, "a Player cursor used on Tournaments")
	_, err = s.Games.ListRounds(ctx, "g", runtime.PageRequest{Cursor: good})
	wantErr(t, err, runtime.ErrBadCursor, "a List cursor used on ListRounds")
	// The good cursor still works after all that.
	if _, err := s.Players.List(ctx, runtime.PageRequest{Limit: 2, Cursor: good}); err != nil {
		t.Fatal(err)
	}
}

func testAll(t *testing.T, s Stores) {
	names := []string{"c", "a", "b", "e", "d"}
	for _, n := range names {
		must(t, s.Players.Create(ctx, &game.Player{Username: n}))
	}
	var got []string
	for p, err := range s.Players.All(ctx) {
		must(t, err)
		got = append(got, p.Username)
	}
	if !slices.Equal(listed(s, got), []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("All: %v", got)
	}
	n := 0
	for _, err := range s.Players.All(ctx) {
		must(t, err)
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("breaking out of All after 2 items: %d", n)
	}
}

func testEAO(t *testing.T, s Stores) {
	tt := &game.Tournament{ID: 42, Name: "Spring Cup", Games: []string{"2345", "2611"}}
	must(t, s.Tournaments.Create(ctx, tt))
	got, err := s.Tournaments.Get(ctx, 42)
	must(t, err)
	if !reflect.DeepEqual(got, tt) {
		t.Fatalf("Get = %+v, want %+v", got, tt)
	}
	wantErr(t, s.Tournaments.Create(ctx, tt), runtime.ErrDuplicate, "Create of an existing tournament")
	tt2 := &game.Tournament{ID: 42, Name: "Spring Cup (final)"}
	must(t, s.Tournaments.Put(ctx, tt2))
	got, err = s.Tournaments.Get(ctx, 42)
	must(t, err)
	if got.Name != "Spring Cup (final)" || len(got.Games) != 0 {
		t.Fatalf("after Put: %+v", got)
	}
	must(t, s.Tournaments.Delete(ctx, 42))
	_, err = s.Tournaments.Get(ctx, 42)
	wantErr(t, err, runtime.ErrNotFound, "Get after Delete")
}

func playersOf(t *testing.T, s Stores, gameID string) []string {
	t.Helper()
	var out []string
	req := runtime.PageRequest{Limit: 2}
	for range 100 {
		page, err := s.Players.ListByGame(ctx, gameID, req)
		must(t, err)
		for _, p := range page.Items {
			out = append(out, p.Username)
		}
		if page.Next == "" {
			return out
		}
		req.Cursor = page.Next
	}
	t.Fatal("ListByGame does not end")
	return nil
}

// testPlayersByGame: a lookup on the elements of a slice field (every
// player in a game), kept right by Create, AppendGames-like setters, Update,
// Put and Delete.
func testPlayersByGame(t *testing.T, s Stores) {
	must(t, s.Players.Create(ctx, &game.Player{Username: "mary", Games: []game.GameRef{{Game: "2345", Opponent: "rick"}, {Game: "2611", Opponent: "ann"}}}))
	must(t, s.Players.Create(ctx, &game.Player{Username: "rick", Games: []game.GameRef{{Game: "2345", Opponent: "mary"}, {Game: "7425", Opponent: "ann"}, {Game: "1241", Opponent: "johnny"}}}))
	must(t, s.Players.Create(ctx, &game.Player{Username: "ann", Games: []game.GameRef{{Game: "2611", Opponent: "mary"}, {Game: "7425", Opponent: "rick"}}}))
	if got := playersOf(t, s, "2345"); !slices.Equal(got, []string{"mary", "rick"}) {
		t.Fatalf("players of 2345: %v", got)
	}
	if got := playersOf(t, s, "7425"); !slices.Equal(got, []string{"ann", "rick"}) {
		t.Fatalf("players of 7425: %v", got)
	}
	must(t, s.Players.SetGames(ctx, "rick", []game.GameRef{{Game: "9999", Opponent: "ann"}}))
	if got := playersOf(t, s, "2345"); !slices.Equal(got, []string{"mary"}) {
		t.Fatalf("players of 2345 after SetGames: %v", got)
	}
	must(t, s.Players.Update(ctx, "ann", game.PlayerUpdate{Games: &[]game.GameRef{{Game: "9999", Opponent: "rick"}}}))
	if got := playersOf(t, s, "9999"); !slices.Equal(got, []string{"ann", "rick"}) {
		t.Fatalf("players of 9999 after Update: %v", got)
	}
	must(t, s.Players.Put(ctx, &game.Player{Username: "mary"}))
	must(t, s.Players.Delete(ctx, "rick"))
	for _, g := range []string{"2345", "2611", "7425", "1241"} {
		if got := playersOf(t, s, g); len(got) != 0 {
			t.Fatalf("players of %s after Put and Delete: %v", g, got)
		}
	}
	if got := playersOf(t, s, "9999"); !slices.Equal(got, []string{"ann"}) {
		t.Fatalf("players of 9999 at the end: %v", got)
	}
}

// testRefsAndGetMany: references resolved with one batch read per store.
func testRefsAndGetMany(t *testing.T, s Stores) {
	for _, p := range []string{"mary", "rick", "ann"} {
		must(t, s.Players.Create(ctx, &game.Player{Username: p, FirstName: strings.ToUpper(p)}))
	}
	games := []*game.Game{
		{ID: "g1", FirstPlayer: "mary", SecondPlayer: "rick"},
		{ID: "g2", FirstPlayer: "rick", SecondPlayer: "ann"},
		{ID: "g3", FirstPlayer: "mary", SecondPlayer: "ghost"},
	}
	for _, g := range games {
		must(t, s.Games.Create(ctx, g))
	}
	refs := game.GamePlayerRefs(games...)
	if !slices.Equal(refs, []string{"mary", "rick", "ann", "ghost"}) {
		t.Fatalf("GamePlayerRefs: %v", refs)
	}
	players, err := s.Players.GetMany(ctx, refs)
	must(t, err)
	if len(players) != 3 || players["ann"].FirstName != "ANN" || players["ghost"] != nil {
		t.Fatalf("GetMany(%v): %v", refs, players)
	}
	tt := &game.Tournament{ID: 1, Games: []string{"g3", "g1", "g3", "", "g9"}}
	got, err := s.Games.GetMany(ctx, game.TournamentGameRefs(tt))
	must(t, err)
	if len(got) != 2 || got["g1"] == nil || got["g3"].SecondPlayer != "ghost" {
		t.Fatalf("games of the tournament: %v", got)
	}
}
