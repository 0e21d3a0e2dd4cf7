package bolt_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/templates"
	"github.com/noamgen/noamgen/templates/bolt"
)

// gameSchema loads example/game with the parser, as noamgen explain does.
func gameSchema(t *testing.T) *model.Schema {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "example", "game"))
	s, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func explainer(t *testing.T) templates.Explainer {
	t.Helper()
	ex, ok := templates.ExplainerOf("bolt")
	if !ok {
		t.Fatal("bolt registered no explainer")
	}
	return ex
}

// writeGames stores the example blocks explain shows (block key 2345, two
// elements per partition) with the generated bbolt repositories, and
// returns the file.
func writeGames(t *testing.T, more func(*bbolt.DB)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "noam.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := game.NewGameBoltRepository(db).Create(ctx, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick",
		Rounds: []game.Round{{Moves: []string{"a"}}, {Moves: []string{"b"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := game.NewPlayerBoltRepository(db).Create(ctx, &game.Player{Username: "2345", FirstName: "Mary"}); err != nil {
		t.Fatal(err)
	}
	if err := game.NewTournamentBoltRepository(db).Create(ctx, &game.Tournament{ID: 2345, Name: "cup"}); err != nil {
		t.Fatal(err)
	}
	if more != nil {
		more(db)
	}
	return path
}

// TestLayoutIsWhatTheStoreWrites compares the example block of each
// aggregate's bbolt layout, key by key and in order, with the keys the
// generated repository really writes for that block.
func TestLayoutIsWhatTheStoreWrites(t *testing.T) {
	s := gameSchema(t)
	path := writeGames(t, nil)
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ex := explainer(t)
	for _, a := range s.Aggregates {
		var want []string
		for _, st := range ex.Layout(a).Example {
			want = append(want, st.Key)
		}
		var got []string
		err := db.View(func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte(a.Collection)).ForEach(func(k, _ []byte) error {
				got = append(got, bolt.ReadableKey(a.Collection, k))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: explain shows the keys\n%s\nthe store wrote\n%s", a.Name, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// TestCostMatchesWrites checks the keys explain says an entry-level write
// puts against what the bbolt adapter counts (boltstore.Written).
func TestCostMatchesWrites(t *testing.T) {
	s := gameSchema(t)
	a := s.Aggregate("Game")
	path := writeGames(t, nil)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	calls := map[string]func() error{
		"AppendRounds":    func() error { _, err := games.AppendRounds(ctx, "2345", game.Round{}); return err },
		"SetRoundsAt":     func() error { return games.SetRoundsAt(ctx, "2345", 1, game.Round{Spell: "x"}) },
		"SetSecondPlayer": func() error { return games.SetSecondPlayer(ctx, "2345", "ann") },
		"Delete":          func() error { return games.Delete(ctx, "2345") },
	}
	order := []string{"AppendRounds", "SetRoundsAt", "SetSecondPlayer", "Delete"}
	ex := explainer(t)
	for _, name := range order {
		var m templates.Method
		for _, mm := range templates.Methods(a) {
			if mm.Name == name {
				m = mm
			}
		}
		if m.Name == "" {
			t.Fatalf("Game has no method %s", name)
		}
		c := ex.Cost(a, m, explain.AccessOf(a, m))
		puts := 0
		for _, op := range c.Ops {
			if strings.HasPrefix(op, "put /") {
				puts++
			}
		}
		before := boltstore.Written()
		if err := calls[name](); err != nil {
			t.Fatal(err)
		}
		w := boltstore.Written().Sub(before)
		if name == "Delete" {
			// 2345 has 3 rounds now: marker, 2 players, count, 3 rounds, version.
			if w.Deletes != 8 || !slices.Contains(c.Ops, "delete every key of the block's range") {
				t.Errorf("Delete deleted %d keys; explain says %q", w.Deletes, c.Ops)
			}
			continue
		}
		if int64(puts) != w.Keys {
			t.Errorf("%s: explain says %d puts (%q), the adapter wrote %d keys", name, puts, c.Ops, w.Keys)
		}
		if c.RoundTrips != "0 (embedded)" || !strings.Contains(c.Atomic, "one bbolt transaction") {
			t.Errorf("%s: round trips %q, atomic %q", name, c.RoundTrips, c.Atomic)
		}
	}
}

// TestSample samples a real bbolt file: entry sizes, largest blocks and
// partitions, and that the file is opened read-only (it is unchanged).
func TestSample(t *testing.T) {
	s := gameSchema(t)
	path := writeGames(t, func(db *bbolt.DB) {
		games := game.NewGameBoltRepository(db)
		g := &game.Game{ID: "big", FirstPlayer: "ann"}
		for range 5 {
			g.Rounds = append(g.Rounds, game.Round{Moves: []string{strings.Repeat("m", 200)}})
		}
		if err := games.Create(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		if err := games.Create(context.Background(), &game.Game{ID: "empty"}); err != nil {
			t.Fatal(err)
		}
	})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ex := explainer(t)
	a := s.Aggregate("Game")
	smp, err := ex.Sample(context.Background(), a, map[string]string{"bolt": path}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if smp.Blocks != 3 {
		t.Fatalf("sampled %d blocks, want 3", smp.Blocks)
	}
	// Expected sizes, straight from the file.
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	perBlock := map[string]int{}
	elems, elemBytes, elemMax := 0, int64(0), 0
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("Game")).ForEach(func(k, v []byte) error {
			rk := bolt.ReadableKey("Game", k)
			blk := strings.Split(rk, "/")[2]
			perBlock[blk] += len(k) + len(v)
			if strings.Contains(rk, "/rounds/") {
				elems++
				elemBytes += int64(len(k) + len(v))
				elemMax = max(elemMax, len(k)+len(v))
			}
			return nil
		})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
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
	if smp.MaxValueBytes != bbolt.MaxValueSize || len(smp.Warnings) != 0 {
		t.Errorf("bbolt declares its 2 GiB value limit, which the sample is far from: %+v", smp)
	}
	// At most n blocks.
	smp, err = ex.Sample(context.Background(), a, map[string]string{"bolt": path}, 2)
	if err != nil || smp.Blocks != 2 || len(smp.Largest) != 2 {
		t.Fatalf("sample of 2: %+v, %v", smp, err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("sampling changed the database file")
	}
	// No file named: nothing sampled; a missing file: an error.
	if smp, err := ex.Sample(context.Background(), a, map[string]string{}, 2); smp != nil || err != nil {
		t.Errorf("sample without a file: %+v, %v", smp, err)
	}
	if _, err := ex.Sample(context.Background(), a, map[string]string{"bolt": filepath.Join(t.TempDir(), "none.db")}, 2); err == nil {
		t.Error("sampling a missing file succeeded")
	}
}
