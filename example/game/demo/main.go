// Command demo runs the NoAM paper's running example (players, games,
// rounds) on noamgen's generated repositories and prints what it does.
//
// By default it uses the embedded bbolt store (a file in a temporary
// directory, or -db PATH); with -mongo URI it uses MongoDB instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
)

type repos struct {
	games       game.GameRepository
	players     game.PlayerRepository
	tournaments game.TournamentRepository
}

func main() {
	dbPath := flag.String("db", "", "bbolt file to use (default: a new file in a temporary directory)")
	mongoURI := flag.String("mongo", "", "MongoDB URI; when set, the demo runs on MongoDB instead of bbolt")
	mongoDB := flag.String("mongo-db", "noamgen_demo", "MongoDB database name (dropped first)")
	flag.Parse()
	ctx := context.Background()

	var r repos
	if *mongoURI != "" {
		client, err := mongo.Connect(options.Client().ApplyURI(*mongoURI).SetTimeout(10 * time.Second))
		check(err)
		defer client.Disconnect(ctx)
		db := client.Database(*mongoDB)
		check(db.Drop(ctx))
		fmt.Printf("store: MongoDB %s, database %s\n", *mongoURI, *mongoDB)
		r = repos{game.NewGameMongoRepository(db), game.NewPlayerMongoRepository(db), game.NewTournamentMongoRepository(db)}
	} else {
		path := *dbPath
		if path == "" {
			dir, err := os.MkdirTemp("", "noamgen-demo-")
			check(err)
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, "game.db")
		}
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
		check(err)
		defer db.Close()
		fmt.Printf("store: bbolt (embedded), file %s\n", path)
		r = repos{game.NewGameBoltRepository(db), game.NewPlayerBoltRepository(db), game.NewTournamentBoltRepository(db)}
	}
	check(run(ctx, r))
}

func run(ctx context.Context, r repos) error {
	step := func(format string, args ...any) { fmt.Printf("  "+format+"\n", args...) }

	// At start-up: create what the store needs and record the layout each
	// repository serves (its lookups answer runtime.ErrNotReady until then).
	for _, ensure := range []func(context.Context) error{r.games.EnsureIndexes, r.players.EnsureIndexes, r.tournaments.EnsureIndexes} {
		if err := ensure(ctx); err != nil {
			return err
		}
	}

	fmt.Println("players (ETF: one entry per top-level field)")
	for _, p := range []*game.Player{
		{Username: "mary", FirstName: "Mary", LastName: "Wilson"},
		{Username: "rick", FirstName: "Ricky", LastName: "Doe", Score: 42},
		{Username: "ann", FirstName: "Ann", LastName: "Smith"},
	} {
		if err := r.players.Put(ctx, p); err != nil {
			return err
		}
		step("Put %s (%s %s)", p.Username, p.FirstName, p.LastName)
	}
	if err := r.players.SetScore(ctx, "mary", 7); err != nil {
		return err
	}
	step("SetScore(mary, 7): writes the score entry only")

	fmt.Println("game 2345 (rounds partitioned: one entry per round)")
	g := &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick"}
	if err := r.games.Create(ctx, g); err != nil {
		return err
	}
	step("Create 2345: mary vs rick, version %d", g.Version)
	for _, moves := range [][]string{{"e4", "e5"}, {"Nf3", "Nc6"}, {"Bb5", "a6"}} {
		i, err := r.games.AppendRounds(ctx, "2345", game.Round{Moves: moves})
		if err != nil {
			return err
		}
		step("AppendRounds -> rounds[%d] = %v (only the new round is written)", i, moves)
	}
	if err := r.games.SetRoundsAt(ctx, "2345", 1, game.Round{Moves: []string{"Nf3", "Nc6"}, Comments: []string{"book move"}}); err != nil {
		return err
	}
	step("SetRoundsAt(1): rewrites rounds[1] only")
	if err := r.games.Update(ctx, "2345", game.GameUpdate{SecondPlayer: runtime.Ptr("ann"), RoundsAt: map[int]game.Round{0: {Moves: []string{"d4", "d5"}}}}); err != nil {
		return err
	}
	step("Update: secondPlayer and rounds[0] in one atomic write")
	got, err := r.games.Get(ctx, "2345")
	if err != nil {
		return err
	}
	step("Get 2345: %s vs %s, %d rounds, version %d", got.FirstPlayer, got.SecondPlayer, len(got.Rounds), got.Version)
	for i, rd := range got.Rounds {
		step("  rounds[%d] = %v %v", i, rd.Moves, rd.Comments)
	}
	page, err := r.games.ListRounds(ctx, "2345", runtime.PageRequest{Limit: 2})
	if err != nil {
		return err
	}
	step("ListRounds(limit 2): %d rounds, more: %v", len(page.Items), page.Next != "")

	fmt.Println("optimistic concurrency (version entry)")
	stale := *got
	got.FirstPlayer = "mary"
	if err := r.games.Put(ctx, got); err != nil {
		return err
	}
	step("Put with version %d: ok, now version %d", stale.Version, got.Version)
	err = r.games.Put(ctx, &stale)
	step("Put with stale version %d: %v (conflict: %v)", stale.Version, err, errors.Is(err, runtime.ErrConflict))
	if !errors.Is(err, runtime.ErrConflict) {
		return fmt.Errorf("stale Put was not refused: %v", err)
	}

	fmt.Println("tournaments (EAO: one entry per aggregate, integer keys)")
	for _, id := range []int64{10, 2, 33} {
		if err := r.tournaments.Create(ctx, &game.Tournament{ID: id, Name: fmt.Sprintf("Cup %d", id), Games: []string{"2345"}}); err != nil {
			return err
		}
	}
	var ids []int64
	for t, err := range r.tournaments.All(ctx) {
		if err != nil {
			return err
		}
		ids = append(ids, t.ID)
	}
	step("All tournaments in key order: %v", ids)

	fmt.Println("keyset pagination")
	req := runtime.PageRequest{Limit: 2}
	for n := 1; ; n++ {
		page, err := r.players.List(ctx, req)
		if err != nil {
			return err
		}
		var names []string
		for _, p := range page.Items {
			names = append(names, p.Username)
		}
		step("page %d: %v", n, names)
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	_, err = r.players.List(ctx, runtime.PageRequest{Cursor: "tampered"})
	step("List with a tampered cursor: %v (bad cursor: %v)", err, errors.Is(err, runtime.ErrBadCursor))

	fmt.Println("errors")
	_, err = r.games.Get(ctx, "9999")
	step("Get 9999: %v (not found: %v)", err, errors.Is(err, runtime.ErrNotFound))
	err = r.games.Create(ctx, &game.Game{ID: "2345"})
	step("Create 2345 again: %v (duplicate: %v)", err, errors.Is(err, runtime.ErrDuplicate))
	err = r.games.SetRoundsAt(ctx, "2345", 99, game.Round{})
	step("SetRoundsAt(99): %v (not found: %v)", err, errors.Is(err, runtime.ErrNotFound))
	fmt.Println("done")
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
