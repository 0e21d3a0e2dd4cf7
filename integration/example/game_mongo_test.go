// Integration tests of the example's generated MongoDB repositories against
// a real MongoDB wire-protocol server: FerretDB in-process by default, or
// the MongoDB at NOAM_MONGO_URI.
package example

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/game/gametest"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// TestMongoSuite runs the game suite through the MongoDB harness, with
// lookups on native indexes and with every lookup in an index table.
func TestMongoSuite(t *testing.T) {
	for _, m := range []mongotest.Harness{mongotest.Native(), mongotest.IndexTables()} {
		t.Run(m.Name, func(t *testing.T) { gametest.Run(t, m.Store()) })
	}
}

// recorder keeps the commands the driver sends.
type recorder struct {
	mu   sync.Mutex
	cmds []*event.CommandStartedEvent
}

func (r *recorder) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.cmds = append(r.cmds, e)
	}}
}

// take returns the data commands recorded since the last call (handshakes
// and server monitoring are left out).
func (r *recorder) take() []*event.CommandStartedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*event.CommandStartedEvent
	for _, c := range r.cmds {
		switch c.CommandName {
		case "hello", "isMaster", "ismaster", "buildInfo", "endSessions", "ping":
			continue
		}
		out = append(out, c)
	}
	r.cmds = nil
	return out
}

func bigRound(i int) game.Round {
	return game.Round{Moves: []string{strings.Repeat("m", 1000), string(rune('a' + i%26))}, Comments: []string{strings.Repeat("c", 500)}}
}

// TestMongoEntryLevelWrites shows with the driver's command monitor what
// the entry-level methods send: AppendRounds sends the new round and
// nothing of the others, SetRoundsAt one element, a setter one field, and
// Get is one round trip.
func TestMongoEntryLevelWrites(t *testing.T) {
	rec := &recorder{}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(rec.monitor()))
	games := game.NewGameMongoRepository(db)
	ctx := context.Background()
	g := &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick"}
	for i := range 50 {
		g.Rounds = append(g.Rounds, bigRound(i))
	}
	if err := games.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	// Warm up on another game: on a server without findAndModify
	// projections or $slice (FerretDB) the adapter's first try is refused
	// and it switches to the plainer form; count commands after that.
	if err := games.Create(ctx, &game.Game{ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := games.AppendRounds(ctx, "warm", game.Round{}); err != nil {
		t.Fatal(err)
	}
	if _, err := games.ListRounds(ctx, "warm", runtimePage(1)); err != nil {
		t.Fatal(err)
	}
	rec.take()

	newRound := game.Round{Moves: []string{"new-move"}, Spell: "haste"}
	i, err := games.AppendRounds(ctx, "2345", newRound)
	if err != nil {
		t.Fatal(err)
	}
	if i != 50 {
		t.Fatalf("AppendRounds index %d, want 50", i)
	}
	cmds := rec.take()
	// One findAndModify projecting the new length; on a server without
	// projections in findAndModify (FerretDB), a find of the length and an
	// update conditioned on it.
	var cmd, pushed bson.Raw
	switch {
	case len(cmds) == 1 && cmds[0].CommandName == "findAndModify":
		cmd = cmds[0].Command
		pushed = cmd.Lookup("update", "$push", "rounds").Value
	case len(cmds) == 2 && cmds[0].CommandName == "find" && cmds[1].CommandName == "update":
		cmd = cmds[1].Command
		pushed = cmd.Lookup("updates").Array().Index(0).Document().Lookup("u", "$push", "rounds").Value
		if p := cmds[0].Command.Lookup("projection").String(); !strings.Contains(p, "_len.rounds") || strings.Contains(p, `"rounds"`) {
			t.Fatalf("AppendRounds read %s, want the length alone", p)
		}
	default:
		t.Fatalf("AppendRounds sent %d commands (%v), want one findAndModify (or find and update)", len(cmds), names(cmds))
	}
	var sent game.Round
	if err := bson.Unmarshal(pushed, &sent); err != nil {
		t.Fatalf("no $push of rounds in %s: %v", cmd, err)
	}
	if sent.Spell != "haste" || len(sent.Moves) != 1 || sent.Moves[0] != "new-move" {
		t.Fatalf("pushed %+v, want the new round", sent)
	}
	// The whole game is over 75 KB; the command carries only the new round.
	if n := len(cmd); n > 1024 {
		t.Fatalf("AppendRounds command is %d bytes: it carries more than the new round: %s", n, cmd)
	}
	if strings.Contains(cmd.String(), strings.Repeat("m", 1000)) {
		t.Fatal("AppendRounds sent an existing round")
	}

	if err := games.SetRoundsAt(ctx, "2345", 3, newRound); err != nil {
		t.Fatal(err)
	}
	cmds = rec.take()
	if len(cmds) != 1 || cmds[0].CommandName != "update" {
		t.Fatalf("SetRoundsAt sent %v, want one update", names(cmds))
	}
	set, err := cmds[0].Command.Lookup("updates").Array().Index(0).Document().LookupErr("u", "$set")
	if err != nil {
		t.Fatalf("no $set in %s", cmds[0].Command)
	}
	elems, _ := set.Document().Elements()
	if len(elems) != 1 || elems[0].Key() != "rounds.3" {
		t.Fatalf("SetRoundsAt $set %s, want only rounds.3", set)
	}

	if err := games.SetSecondPlayer(ctx, "2345", "ann"); err != nil {
		t.Fatal(err)
	}
	cmds = rec.take()
	set = cmds[0].Command.Lookup("updates").Array().Index(0).Document().Lookup("u", "$set")
	if elems, _ := set.Document().Elements(); len(cmds) != 1 || len(elems) != 1 || elems[0].Key() != "secondPlayer" {
		t.Fatalf("SetSecondPlayer sent %v with $set %s, want one update of secondPlayer", names(cmds), set)
	}

	got, err := games.Get(ctx, "2345")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rounds) != 51 || got.Rounds[3].Spell != "haste" || got.SecondPlayer != "ann" {
		t.Fatalf("game after the writes: %d rounds, round 3 %+v", len(got.Rounds), got.Rounds[3])
	}
	if cmds := rec.take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		t.Fatalf("Get sent %v, want one find", names(cmds))
	}

	page, err := games.ListRounds(ctx, "2345", runtimePage(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 {
		t.Fatalf("ListRounds page of %d", len(page.Items))
	}
	if cmds := rec.take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		t.Fatalf("ListRounds sent %v, want one find", names(cmds))
	}
}

// TestMongoDocumentShape checks the stored document (NoAM Fig. 10): _id is
// the block key, one field per entry, the rounds array and its length.
func TestMongoDocumentShape(t *testing.T) {
	db := mongotest.Start(t)
	ctx := context.Background()
	games := game.NewGameMongoRepository(db)
	if err := games.Create(ctx, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick", Rounds: []game.Round{{Moves: []string{"a"}}}}); err != nil {
		t.Fatal(err)
	}
	var doc bson.M
	if err := db.Collection("Game").FindOne(ctx, bson.D{{Key: "_id", Value: "2345"}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"_id", "firstPlayer", "secondPlayer", "rounds", "version", "_len"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("document has no %q field: %v", k, doc)
		}
	}
	if doc["_id"] != "2345" || doc["firstPlayer"] != "mary" {
		t.Errorf("document %v", doc)
	}
	if _, ok := doc["id"]; ok {
		t.Errorf("the block key is stored twice: %v", doc)
	}
}

func names(cmds []*event.CommandStartedEvent) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.CommandName)
	}
	return out
}

func runtimePage(limit int) runtime.PageRequest { return runtime.PageRequest{Limit: limit} }

// TestMongoBatchReadsAreOneRoundTrip: GetMany of many keys and a large List
// page are answered in one command each (no getMore), so resolving
// references is one round trip however many there are.
func TestMongoBatchReadsAreOneRoundTrip(t *testing.T) {
	rec := &recorder{}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(rec.monitor()))
	players := game.NewPlayerMongoRepository(db)
	ctx := context.Background()
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("p%03d", i)
		ids = append(ids, id)
		if err := players.Create(ctx, &game.Player{Username: id}); err != nil {
			t.Fatal(err)
		}
	}
	rec.take()
	got, err := players.GetMany(ctx, append(ids, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 {
		t.Fatalf("GetMany found %d of 300", len(got))
	}
	if cmds := rec.take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		t.Fatalf("GetMany of 301 keys sent %v, want one find", names(cmds))
	}
	page, err := players.List(ctx, runtimePage(250))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 250 || page.Next == "" {
		t.Fatalf("List page of %d, next %q", len(page.Items), page.Next)
	}
	if cmds := rec.take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		t.Fatalf("a List page of 250 sent %v, want one find", names(cmds))
	}
}

// TestMongoAppendRepliesAreSmall (issue 15): AppendRounds on a game of
// 75 KB receives a few bytes per append, on every server: one
// findAndModify projecting the new length, or (FerretDB, which refuses the
// projection) a find of the length alone and a conditioned update; it
// never reads the aggregate back.
func TestMongoAppendRepliesAreSmall(t *testing.T) {
	var mu sync.Mutex
	var replies []string
	mon := &event.CommandMonitor{Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, fmt.Sprintf("%s:%d", e.CommandName, len(e.Reply)))
	}}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(mon))
	games := game.NewGameMongoRepository(db)
	ctx := context.Background()
	g := &game.Game{ID: "big"}
	for i := range 50 {
		g.Rounds = append(g.Rounds, bigRound(i))
	}
	if err := games.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mu.Lock()
		replies = nil
		mu.Unlock()
		n, err := games.AppendRounds(ctx, "big", game.Round{Moves: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		if n != 50+i {
			t.Fatalf("append %d: index %d, want %d", i, n, 50+i)
		}
		mu.Lock()
		got := slices.Clone(replies)
		mu.Unlock()
		total := 0
		for _, r := range got {
			var size int
			fmt.Sscanf(r[strings.LastIndex(r, ":")+1:], "%d", &size)
			total += size
		}
		// A reply naming the new length, or an update count, is about 100
		// to 200 bytes; the game is 75 KB.
		if total > 600 {
			t.Fatalf("append %d received %d bytes (%v): more than the new length", i, total, got)
		}
		t.Logf("append %d: replies %v", i, got)
	}
	got, err := games.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rounds) != 53 || got.Version != 4 {
		t.Fatalf("after 3 appends: %d rounds, version %d", len(got.Rounds), got.Version)
	}
}
