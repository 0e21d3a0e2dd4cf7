// Package cmpbench measures noamgen's generated repositories against the
// hand-written baseline (package handwritten) on the same store, in the
// same run, with benchmark names that benchstat compares side by side:
//
//	BenchmarkGet/store=bolt/impl=gen
//	BenchmarkGet/store=bolt/impl=hand
//
// (benchstat -col /impl). The operations are those of the performance
// issue: on 1,000 games of 12 rounds (about 8 KB each) Get, Put,
// SetSecondPlayer, AppendRounds, Update of 2 entries and List of a page of
// 50; on 1,000 hotels GetByName (a unique lookup), ListByCityStars (a
// composite lookup, a page of 20) and SetCity (a setter of an indexed
// field); and Get and Put of the versioned EAO game. Each store's test
// file builds the repositories and calls the Suite's methods from its
// Benchmark functions: the bbolt ones are in package bench, the Redis ones
// in example/bench/cmpredis, the DynamoDB ones in example/bench/cmpdynamo,
// the MongoDB ones in the integration module (integration/bench).
//
// The data is loaded once per process and per implementation; benchmarks
// that change it put it back (untimed) when they end.
//
// Besides time and allocations, every benchmark reports cpu-ns/op: the CPU
// time (user and system, all threads) the benchmark process spent per
// operation while the timer ran. With the MongoDB server in a process of
// its own this is the client's cost, which the wall clock of a slow server
// hides.
package cmpbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// Sizes of the data sets.
const (
	NumGames   = 1000
	GameRounds = 12
	NumHotels  = 1000
	NumCities  = 10
	ListLimit  = 50 // List page size
	CityLimit  = 20 // ListByCityStars page size
	MinStars   = 3  // ListByCityStars condition: stars >= MinStars
)

// Games is what the game benchmarks call: game.GameRepository's methods
// that the hand-written baseline also has.
type Games interface {
	Get(ctx context.Context, id string) (*game.Game, error)
	Create(ctx context.Context, g *game.Game) error
	Put(ctx context.Context, g *game.Game) error
	SetSecondPlayer(ctx context.Context, id string, v string) error
	AppendRounds(ctx context.Context, id string, e game.Round) (int, error)
	Update(ctx context.Context, id string, u game.GameUpdate) error
	List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*game.Game], error)
}

// Hotels is what the lookup benchmarks call. A generated repository is
// adapted by GenHotels (its query type has unexported conditions).
type Hotels interface {
	Create(ctx context.Context, h *hotel.Hotel) error
	GetByName(ctx context.Context, name string) (*hotel.Hotel, error)
	ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error)
	SetCity(ctx context.Context, id string, city string) error
}

// Blobs is what the EAO benchmarks call.
type Blobs[T any] interface {
	Get(ctx context.Context, id string) (*T, error)
	Create(ctx context.Context, v *T) error
	Put(ctx context.Context, v *T) error
}

// GenHotels adapts a generated hotel repository to Hotels.
type GenHotels struct {
	hotel.HotelRepository
}

// ListByCityStars calls the generated ListByCityStars with City Eq city and
// Stars Gte minStars.
func (g GenHotels) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	return g.HotelRepository.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq(city), Stars: runtime.Gte(minStars)}, req)
}

// Impl is one implementation under test over its own empty database.
// EAO may be nil (the store has no EAO benchmark); so may Games, in a
// suite whose benchmarks are the hotel ones only (GetByName,
// ListByCityStars, SetCity).
type Impl struct {
	Name   string // "gen" or "hand"
	Games  Games
	Hotels Hotels
	EAO    Blobs[bench.VersionedEAOGame]
	// UnorderedList is set when List pages in the store's own order
	// (DynamoDB's Scan) rather than by id: Check then only checks that
	// every game comes once.
	UnorderedList bool
}

// Suite runs the benchmarks of one store.
type Suite struct {
	store string
	open  func() ([]Impl, error)

	once  sync.Once
	impls []Impl
	err   error
}

// NewSuite returns the suite of store (the name in "store=NAME"); open
// returns the implementations over empty databases, and is called once,
// by the first benchmark that runs.
func NewSuite(store string, open func() ([]Impl, error)) *Suite {
	return &Suite{store: store, open: open}
}

var ctx = context.Background()

// load opens the implementations and loads the data sets, once.
func (s *Suite) load(b *testing.B) []Impl {
	s.once.Do(func() {
		s.impls, s.err = s.open()
		for _, im := range s.impls {
			if s.err != nil {
				break
			}
			s.err = Load(im, NumGames, NumHotels)
		}
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	return s.impls
}

// Load stores the data sets into im: games games (and as many EAO games)
// and hotels hotels; the benchmarks use NumGames and NumHotels, the tests
// smaller sets (hotels a multiple of 5*NumCities).
func Load(im Impl, games, hotels int) error {
	for i := range games {
		if im.Games == nil {
			break
		}
		if err := im.Games.Create(ctx, NewGame(i)); err != nil {
			return fmt.Errorf("%s: %w", im.Name, err)
		}
	}
	for i := range hotels {
		if err := im.Hotels.Create(ctx, NewHotel(i)); err != nil {
			return fmt.Errorf("%s: %w", im.Name, err)
		}
	}
	if im.EAO != nil {
		for i := range games {
			g := NewGame(i)
			if err := im.EAO.Create(ctx, &bench.VersionedEAOGame{ID: g.ID, FirstPlayer: g.FirstPlayer, SecondPlayer: g.SecondPlayer, Rounds: bench.NewRounds(GameRounds)}); err != nil {
				return fmt.Errorf("%s: %w", im.Name, err)
			}
		}
	}
	return nil
}

// GameID is the id of game i.
func GameID(i int) string { return fmt.Sprintf("game-%04d", i) }

// NewGame makes game i: two players and 12 rounds of about 700 bytes.
func NewGame(i int) *game.Game {
	rounds := make([]game.Round, GameRounds)
	for r := range rounds {
		rounds[r] = game.Round(bench.NewRound(r))
	}
	return &game.Game{ID: GameID(i), FirstPlayer: "mary", SecondPlayer: "rick", Rounds: rounds}
}

// City is the city of hotel i.
func City(i int) string { return fmt.Sprintf("city-%d", i%NumCities) }

// HotelName is the (unique) name of hotel i.
func HotelName(i int) string { return fmt.Sprintf("Hotel %04d", i) }

// NewHotel makes hotel i: NumHotels/NumCities hotels per city, stars 1 to
// 5 evenly.
func NewHotel(i int) *hotel.Hotel {
	return &hotel.Hotel{
		ID:      fmt.Sprintf("hotel-%04d", i),
		Name:    HotelName(i),
		City:    City(i),
		Stars:   1 + (i/NumCities)%5,
		Tags:    []string{"wifi", []string{"spa", "pool", "gym"}[i%3]},
		Address: hotel.Address{Street: fmt.Sprintf("%d Main Street", i), Zip: fmt.Sprintf("%05d", 10000+i%97), Country: "DE"},
		Rooms:   []hotel.Room{{Number: 101, Kind: "single"}, {Number: 102, Kind: "double"}, {Number: 201, Kind: "suite"}},
	}
}

// run runs body as store=S/impl=I for every implementation.
func (s *Suite) run(b *testing.B, body func(b *timer, im Impl)) {
	impls := s.load(b)
	b.Run("store="+s.store, func(b *testing.B) {
		for _, im := range impls {
			b.Run("impl="+im.Name, func(b *testing.B) {
				b.ReportAllocs()
				t := newTimer(b)
				body(t, im)
				t.report()
			})
		}
	})
}

func check(b testing.TB, err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}

// touched is how many games (or hotels) of n an N-operation loop over them
// in turn touches.
func touched(N, n int) int { return min(N, n) }

// Get reads whole games.
func (s *Suite) Get(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			g, err := im.Games.Get(ctx, GameID(i%NumGames))
			check(b, err)
			if len(g.Rounds) != GameRounds {
				b.Fatalf("%s has %d rounds", g.ID, len(g.Rounds))
			}
		}
	})
}

// Put replaces whole games (the same game, at its current version).
func (s *Suite) Put(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		games := make([]*game.Game, touched(b.N, NumGames))
		for i := range games {
			g, err := im.Games.Get(ctx, GameID(i))
			check(b, err)
			games[i] = g
		}
		b.ResetTimer()
		for i := range b.N {
			check(b, im.Games.Put(ctx, games[i%len(games)]))
		}
	})
}

// SetSecondPlayer writes one entry.
func (s *Suite) SetSecondPlayer(b *testing.B) {
	players := []string{"ann", "rick"}
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			check(b, im.Games.SetSecondPlayer(ctx, GameID(i%NumGames), players[(i/NumGames)%2]))
		}
	})
}

// resetRounds puts games 0 to n-1 back to their GameRounds rounds.
func resetRounds(b testing.TB, im Impl, n int) {
	for i := range n {
		g, err := im.Games.Get(ctx, GameID(i))
		check(b, err)
		if len(g.Rounds) != GameRounds {
			g.Rounds = g.Rounds[:GameRounds]
			check(b, im.Games.Put(ctx, g))
		}
	}
}

// AppendRounds adds a round to games in turn; every game gets at most two
// rounds before the games are put back to 12 rounds (untimed).
func (s *Suite) AppendRounds(b *testing.B) {
	round := game.Round(bench.NewRound(GameRounds))
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			if i > 0 && i%(2*NumGames) == 0 {
				b.StopTimer()
				resetRounds(b, im, NumGames)
				b.StartTimer()
			}
			n, err := im.Games.AppendRounds(ctx, GameID(i%NumGames), round)
			check(b, err)
			if n < GameRounds {
				b.Fatalf("AppendRounds returned index %d", n)
			}
		}
		b.StopTimer()
		resetRounds(b, im, touched(b.N, NumGames))
	})
}

// Update2 writes two entries in one Update: the second player and round 5.
func (s *Suite) Update2(b *testing.B) {
	players := []string{"ann", "rick"}
	updates := make([]game.GameUpdate, 2)
	for k := range updates {
		updates[k] = game.GameUpdate{SecondPlayer: &players[k], RoundsAt: map[int]game.Round{5: game.Round(bench.NewRound(5 + k))}}
	}
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			check(b, im.Games.Update(ctx, GameID(i%NumGames), updates[(i/NumGames)%2]))
		}
	})
}

// List50 reads pages of 50 games, following the cursors and starting
// over after the last page.
func (s *Suite) List50(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		cursor := ""
		for range b.N {
			page, err := im.Games.List(ctx, runtime.PageRequest{Limit: ListLimit, Cursor: cursor})
			check(b, err)
			if len(page.Items) != ListLimit {
				b.Fatalf("page of %d games", len(page.Items))
			}
			cursor = page.Next
		}
	})
}

// GetByName reads a hotel by its unique name.
func (s *Suite) GetByName(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			h, err := im.Hotels.GetByName(ctx, HotelName(i%NumHotels))
			check(b, err)
			if h.Name != HotelName(i%NumHotels) {
				b.Fatalf("GetByName(%q) = %q", HotelName(i%NumHotels), h.Name)
			}
		}
	})
}

// ListByCityStars reads the first page of 20 hotels of a city with at
// least 3 stars (60 of its 100 hotels match).
func (s *Suite) ListByCityStars(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			page, err := im.Hotels.ListByCityStars(ctx, City(i), MinStars, runtime.PageRequest{Limit: CityLimit})
			check(b, err)
			if len(page.Items) != CityLimit || page.Items[0].Stars != MinStars {
				b.Fatalf("page of %d hotels", len(page.Items))
			}
		}
	})
}

// SetCity moves hotels to another city and back (an indexed field); the
// hotels it leaves moved are put back (untimed).
func (s *Suite) SetCity(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		for i := range b.N {
			city := "elsewhere"
			if (i/NumHotels)%2 == 1 {
				city = City(i % NumHotels)
			}
			check(b, im.Hotels.SetCity(ctx, NewHotel(i%NumHotels).ID, city))
		}
		b.StopTimer()
		for j := range touched(b.N, NumHotels) {
			if times := (b.N - j + NumHotels - 1) / NumHotels; times%2 == 1 {
				check(b, im.Hotels.SetCity(ctx, NewHotel(j).ID, City(j)))
			}
		}
	})
}

// GetEAO reads whole games of the versioned EAO layout.
func (s *Suite) GetEAO(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		if im.EAO == nil {
			b.Skip("no EAO repository")
		}
		for i := range b.N {
			g, err := im.EAO.Get(ctx, GameID(i%NumGames))
			check(b, err)
			if len(g.Rounds) != GameRounds {
				b.Fatalf("%s has %d rounds", g.ID, len(g.Rounds))
			}
		}
	})
}

// PutEAO replaces whole games of the versioned EAO layout.
func (s *Suite) PutEAO(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		if im.EAO == nil {
			b.Skip("no EAO repository")
		}
		games := make([]*bench.VersionedEAOGame, touched(b.N, NumGames))
		for i := range games {
			g, err := im.EAO.Get(ctx, GameID(i))
			check(b, err)
			games[i] = g
		}
		b.ResetTimer()
		for i := range b.N {
			check(b, im.EAO.Put(ctx, games[i%len(games)]))
		}
	})
}

// changedSpells are the spells PutChanged and PutChangedEAO give every
// round in turn, so that every round differs from the stored one.
var changedSpells = [2]string{"changed-a", "changed-b"}

// PutChanged replaces whole games in which every round differs from the
// stored game (its spell changes): the worst case for a Put that writes
// only the entries whose bytes change, where Put writes the same game
// again. The games are put back (untimed) at the end.
func (s *Suite) PutChanged(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		games := make([]*game.Game, touched(b.N, NumGames))
		spells := make([][]string, len(games))
		for i := range games {
			g, err := im.Games.Get(ctx, GameID(i))
			check(b, err)
			games[i] = g
			for _, r := range g.Rounds {
				spells[i] = append(spells[i], r.Spell)
			}
		}
		b.ResetTimer()
		for i := range b.N {
			g := games[i%len(games)]
			spell := changedSpells[(i/len(games))%2]
			for r := range g.Rounds {
				g.Rounds[r].Spell = spell
			}
			check(b, im.Games.Put(ctx, g))
		}
		b.StopTimer()
		for i, g := range games {
			for r := range g.Rounds {
				g.Rounds[r].Spell = spells[i][r]
			}
			check(b, im.Games.Put(ctx, g))
		}
	})
}

// PutChangedEAO is PutChanged on the versioned EAO layout.
func (s *Suite) PutChangedEAO(b *testing.B) {
	s.run(b, func(b *timer, im Impl) {
		if im.EAO == nil {
			b.Skip("no EAO repository")
		}
		games := make([]*bench.VersionedEAOGame, touched(b.N, NumGames))
		spells := make([][]string, len(games))
		for i := range games {
			g, err := im.EAO.Get(ctx, GameID(i))
			check(b, err)
			games[i] = g
			for _, r := range g.Rounds {
				spells[i] = append(spells[i], r.Spell)
			}
		}
		b.ResetTimer()
		for i := range b.N {
			g := games[i%len(games)]
			spell := changedSpells[(i/len(games))%2]
			for r := range g.Rounds {
				g.Rounds[r].Spell = spell
			}
			check(b, im.EAO.Put(ctx, g))
		}
		b.StopTimer()
		for i, g := range games {
			for r := range g.Rounds {
				g.Rounds[r].Spell = spells[i][r]
			}
			check(b, im.EAO.Put(ctx, g))
		}
	})
}

// BaselineGames and BaselineHotels size the data of CheckBaseline.
const BaselineGames, BaselineHotels = 120, 100

// CheckBaseline loads each implementation with the baseline data, then
// checks its results (Check) and, with errs, its error values
// (CheckErrors): the hand-written baseline must do what the generated code
// does. Tests, not timings.
func CheckBaseline(t *testing.T, impls []Impl, errs bool) {
	t.Helper()
	for _, im := range impls {
		if err := Load(im, BaselineGames, BaselineHotels); err != nil {
			t.Fatalf("%s: loading: %v", im.Name, err)
		}
		Check(t, im, BaselineGames, BaselineHotels)
		if errs {
			CheckErrors(t, im)
		}
	}
}

// Check runs every operation of im once and checks the results: the
// baseline must do what the generated code does (tests, not timings).
// im must be loaded with Load(im, games, hotels), games > 7 and hotels >
// 42.
func Check(t *testing.T, im Impl, games, hotels int) {
	t.Helper()
	if im.Games != nil {
		checkGames(t, im, games)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", im.Name, err)
		}
	}
	checkHotels(t, im, hotels, must)
	if im.EAO != nil {
		checkEAO(t, im, must)
	}
}

// checkGames is Check of the games.
func checkGames(t *testing.T, im Impl, games int) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", im.Name, err)
		}
	}
	g, err := im.Games.Get(ctx, GameID(7))
	must(err)
	if g.ID != GameID(7) || len(g.Rounds) != GameRounds || g.Version != 1 || g.Rounds[3].Moves[0] != NewGame(7).Rounds[3].Moves[0] {
		t.Fatalf("%s: Get = %+v", im.Name, g)
	}
	must(im.Games.Put(ctx, g))
	if g.Version != 2 {
		t.Fatalf("%s: version after Put = %d", im.Name, g.Version)
	}
	stale := *g
	stale.Version = 1
	if err := im.Games.Put(ctx, &stale); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("%s: stale Put: %v, want a conflict", im.Name, err)
	}
	must(im.Games.SetSecondPlayer(ctx, g.ID, "ann"))
	i, err := im.Games.AppendRounds(ctx, g.ID, game.Round{Moves: []string{"m"}})
	must(err)
	if i != GameRounds {
		t.Fatalf("%s: AppendRounds = %d", im.Name, i)
	}
	first := "eve"
	must(im.Games.Update(ctx, g.ID, game.GameUpdate{FirstPlayer: &first, RoundsAt: map[int]game.Round{5: {Spell: "x"}}}))
	g, err = im.Games.Get(ctx, g.ID)
	must(err)
	if g.Version != 5 || g.FirstPlayer != "eve" || g.SecondPlayer != "ann" || len(g.Rounds) != GameRounds+1 || g.Rounds[5].Spell != "x" || g.Rounds[GameRounds].Moves[0] != "m" {
		t.Fatalf("%s: after the writes: %+v", im.Name, g)
	}
	g.Rounds = g.Rounds[:GameRounds]
	g.FirstPlayer, g.SecondPlayer, g.Rounds[5] = "mary", "rick", NewGame(7).Rounds[5]
	must(im.Games.Put(ctx, g))
	var seen int
	listed := map[string]bool{}
	cursor := ""
	for {
		page, err := im.Games.List(ctx, runtime.PageRequest{Limit: ListLimit, Cursor: cursor})
		must(err)
		for _, g := range page.Items {
			if im.UnorderedList {
				if listed[g.ID] || len(g.Rounds) != GameRounds {
					t.Fatalf("%s: List item %d is %s again, or has %d rounds", im.Name, seen, g.ID, len(g.Rounds))
				}
				listed[g.ID] = true
			} else if g.ID != GameID(seen) {
				t.Fatalf("%s: List item %d is %s", im.Name, seen, g.ID)
			}
			seen++
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if seen != games {
		t.Fatalf("%s: List read %d games", im.Name, seen)
	}
}

// checkHotels is Check of the hotels.
func checkHotels(t *testing.T, im Impl, hotels int, must func(error)) {
	t.Helper()
	h, err := im.Hotels.GetByName(ctx, HotelName(42))
	must(err)
	if h.ID != NewHotel(42).ID || h.City != City(42) || len(h.Rooms) != 3 {
		t.Fatalf("%s: GetByName = %+v", im.Name, h)
	}
	list := func() []string {
		var ids []string
		cursor := ""
		for {
			page, err := im.Hotels.ListByCityStars(ctx, City(2), MinStars, runtime.PageRequest{Limit: CityLimit, Cursor: cursor})
			must(err)
			for _, h := range page.Items {
				if h.City != City(2) || h.Stars < MinStars {
					t.Fatalf("%s: ListByCityStars returned %+v", im.Name, h)
				}
				ids = append(ids, h.ID)
			}
			if cursor = page.Next; cursor == "" {
				return ids
			}
		}
	}
	before := list()
	if len(before) != hotels/NumCities*3/5 {
		t.Fatalf("%s: ListByCityStars found %d hotels", im.Name, len(before))
	}
	moved := before[0]
	must(im.Hotels.SetCity(ctx, moved, "elsewhere"))
	if after := list(); len(after) != len(before)-1 || after[0] == moved {
		t.Fatalf("%s: after SetCity: %v", im.Name, after)
	}
	must(im.Hotels.SetCity(ctx, moved, City(2)))
	if after := list(); len(after) != len(before) {
		t.Fatalf("%s: after SetCity back: %v", im.Name, after)
	}
}

// checkEAO is Check of the EAO games.
func checkEAO(t *testing.T, im Impl, must func(error)) {
	t.Helper()
	e, err := im.EAO.Get(ctx, GameID(3))
	must(err)
	if e.Version != 1 || len(e.Rounds) != GameRounds {
		t.Fatalf("%s: EAO Get = %+v", im.Name, e)
	}
	must(im.EAO.Put(ctx, e))
	e.Version = 1
	if err := im.EAO.Put(ctx, e); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("%s: stale EAO Put succeeded", im.Name)
	}
	e.Version = 2
	must(im.EAO.Put(ctx, e))
}

// CheckErrors checks that the failing calls of im fail with the error
// values of package runtime (and change nothing): a missing game or
// hotel is runtime.ErrNotFound, an existing id or a name in use
// runtime.ErrDuplicate, a stale version runtime.ErrConflict, a round past
// the end runtime.ErrNotFound. im must be loaded as for Check.
func CheckErrors(t *testing.T, im Impl) {
	t.Helper()
	want := func(what string, err, kind error) {
		t.Helper()
		if !errors.Is(err, kind) {
			t.Errorf("%s: %s: %v, want %v", im.Name, what, err, kind)
		}
	}
	const missing = "no-such-game"
	if im.Games != nil {
		checkGameErrors(t, im, missing, want)
	}
	_, err := im.Hotels.GetByName(ctx, "no such hotel")
	want("GetByName of a missing name", err, runtime.ErrNotFound)
	dup := NewHotel(0)
	dup.ID = "hotel-dup"
	want("Create of a hotel with a name in use", im.Hotels.Create(ctx, dup), runtime.ErrDuplicate)
	want("Create of an existing hotel", im.Hotels.Create(ctx, NewHotel(1)), runtime.ErrDuplicate)
	want("SetCity of a missing hotel", im.Hotels.SetCity(ctx, "no-such-hotel", "x"), runtime.ErrNotFound)
	if h, err := im.Hotels.GetByName(ctx, HotelName(0)); err != nil || h.ID != NewHotel(0).ID {
		t.Errorf("%s: GetByName after the refused duplicate: %v, %v", im.Name, h, err)
	}
	if page, err := im.Hotels.ListByCityStars(ctx, City(1), 0, runtime.PageRequest{Limit: MaxListCheck}); err != nil {
		t.Errorf("%s: %v", im.Name, err)
	} else {
		for _, h := range page.Items {
			if h.ID == dup.ID {
				t.Errorf("%s: the refused duplicate is listed", im.Name)
			}
		}
	}
	if im.EAO != nil {
		_, err := im.EAO.Get(ctx, missing)
		want("EAO Get of a missing game", err, runtime.ErrNotFound)
	}
}

// MaxListCheck is the page size CheckErrors lists a city with.
const MaxListCheck = 100

// checkGameErrors is CheckErrors of the games.
func checkGameErrors(t *testing.T, im Impl, missing string, want func(what string, err, kind error)) {
	t.Helper()
	_, err := im.Games.Get(ctx, missing)
	want("Get of a missing game", err, runtime.ErrNotFound)
	want("Create of an existing game", im.Games.Create(ctx, NewGame(1)), runtime.ErrDuplicate)
	want("SetSecondPlayer of a missing game", im.Games.SetSecondPlayer(ctx, missing, "x"), runtime.ErrNotFound)
	_, err = im.Games.AppendRounds(ctx, missing, game.Round{})
	want("AppendRounds of a missing game", err, runtime.ErrNotFound)
	p := "x"
	want("Update of a missing game", im.Games.Update(ctx, missing, game.GameUpdate{SecondPlayer: &p}), runtime.ErrNotFound)
	want("Update of a missing round", im.Games.Update(ctx, GameID(1), game.GameUpdate{SecondPlayer: &p, RoundsAt: map[int]game.Round{GameRounds: {}}}), runtime.ErrNotFound)
	want("Update at a stale version", im.Games.Update(ctx, GameID(1), game.GameUpdate{SecondPlayer: &p, IfVersion: 99}), runtime.ErrConflict)
	g, err := im.Games.Get(ctx, GameID(1))
	if err != nil {
		t.Fatalf("%s: %v", im.Name, err)
	}
	if g.Version != 1 || g.SecondPlayer != "rick" {
		t.Errorf("%s: the failed updates changed game 1: version %d, second player %q", im.Name, g.Version, g.SecondPlayer)
	}
	g.Version = 0
	want("Put of an existing game at version 0", im.Games.Put(ctx, g), runtime.ErrConflict)
}
