package game_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// bucketKeys returns the keys of a bucket in order.
func bucketKeys(t *testing.T, db *bbolt.DB, bucket string) [][]byte {
	t.Helper()
	var keys [][]byte
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		return b.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// entryKey decodes a key of the Game bucket: the block key and the entry
// key's steps, written like the paper's /Game/2345/-/rounds/3 (without the
// collection, which is the bucket).
func entryKey(t *testing.T, k []byte) string {
	t.Helper()
	r := runtime.NewKeyReader(k)
	id, err := r.String()
	if err != nil {
		t.Fatalf("key %x: block key: %v", k, err)
	}
	rest := r.Rest()
	if len(rest) == 0 || rest[0] != boltstore.Separator {
		t.Fatalf("key %x: no separator after the block key", k)
	}
	s := "/" + id + "/-"
	r = runtime.NewKeyReader(rest[1:])
	if r.Done() {
		return s
	}
	field, err := r.String()
	if err != nil {
		t.Fatalf("key %x: entry key: %v", k, err)
	}
	s += "/" + field
	if !r.Done() {
		i, err := r.Int()
		if err != nil || !r.Done() {
			t.Fatalf("key %x: element index: %v", k, err)
		}
		s += fmt.Sprintf("/%d", i)
	}
	return s
}

func gameKeys(t *testing.T, db *bbolt.DB) []string {
	t.Helper()
	var out []string
	for _, k := range bucketKeys(t, db, "Game") {
		out = append(out, entryKey(t, k))
	}
	return out
}

// TestBoltKeyLayout checks the key-value pairs of a game (NoAM Fig. 4):
// the block's marker, then its entries in key order, all sharing the major
// key, with rounds sorted by index (numerically, not as text).
func TestBoltKeyLayout(t *testing.T) {
	db := boltharness.Open(t)
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	var rounds []game.Round
	for i := range 12 {
		rounds = append(rounds, game.Round{Moves: []string{fmt.Sprint(i)}})
	}
	must(t, games.Create(ctx, &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick", Rounds: rounds[:3]}))
	want := []string{
		"/2345/-",
		"/2345/-/firstPlayer",
		"/2345/-/rounds",
		"/2345/-/rounds/0",
		"/2345/-/rounds/1",
		"/2345/-/rounds/2",
		"/2345/-/secondPlayer",
		"/2345/-/version",
	}
	if got := gameKeys(t, db); !slices.Equal(got, want) {
		t.Fatalf("keys of a game with 3 rounds:\n%q\nwant\n%q", got, want)
	}

	// The values: BSON values, the marker empty, the count 3.
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("Game"))
		prefix := boltstore.BlockPrefix(runtime.AppendString(nil, "2345"))
		if v := b.Get(prefix); len(v) != 0 {
			t.Errorf("marker value %x, want empty", v)
		}
		var n int64
		must(t, boltstore.Decode(b.Get(runtime.AppendString(bytes.Clone(prefix), "rounds")), &n))
		var first string
		must(t, boltstore.Decode(b.Get(runtime.AppendString(bytes.Clone(prefix), "firstPlayer")), &first))
		var r game.Round
		must(t, boltstore.Decode(b.Get(runtime.AppendInt(runtime.AppendString(bytes.Clone(prefix), "rounds"), 1)), &r))
		if n != 3 || first != "mary" || r.Moves[0] != "1" {
			t.Errorf("values: count %d, firstPlayer %q, rounds[1] %+v", n, first, r)
		}
		return nil
	})
	must(t, err)

	// Blocks do not interleave, whatever their keys: "2345" and "23450"
	// share a text prefix, and round 10 sorts after round 9.
	must(t, games.Create(ctx, &game.Game{ID: "23450", Rounds: rounds}))
	must(t, games.Create(ctx, &game.Game{ID: "234", Rounds: rounds[:1]}))
	var blocks []string
	var elems []string
	for _, k := range gameKeys(t, db) {
		parts := strings.Split(k, "/") // "", id, "-", field, index
		if len(blocks) == 0 || blocks[len(blocks)-1] != parts[1] {
			blocks = append(blocks, parts[1])
		}
		if parts[1] == "23450" && len(parts) == 5 {
			elems = append(elems, parts[4])
		}
	}
	if want := []string{"234", "2345", "23450"}; !slices.Equal(blocks, want) {
		t.Fatalf("blocks in key order: %q, want %q, each one key range", blocks, want)
	}
	if want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}; !slices.Equal(elems, want) {
		t.Fatalf("rounds in key order: %v, want %v", elems, want)
	}
}

// TestBoltEntryLevelWrites counts the keys the entry-level methods write:
// AppendRounds writes the new round, the count and the version, whatever
// the number of rounds; SetRoundsAt the round and the version.
func TestBoltEntryLevelWrites(t *testing.T) {
	db := boltharness.Open(t)
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	g := &game.Game{ID: "2345", FirstPlayer: "mary", SecondPlayer: "rick"}
	for i := range 200 {
		g.Rounds = append(g.Rounds, game.Round{Moves: []string{fmt.Sprint("move", i)}})
	}
	must(t, games.Create(ctx, g))

	before := boltstore.Written()
	i, err := games.AppendRounds(ctx, "2345", game.Round{Moves: []string{"new"}})
	must(t, err)
	if i != 200 {
		t.Fatalf("AppendRounds index %d, want 200", i)
	}
	if w := boltstore.Written().Sub(before); w.Keys != 3 || w.Deletes != 0 || w.Bytes > 200 {
		t.Fatalf("AppendRounds wrote %+v, want 3 keys (round, count, version) and no old round", w)
	}

	before = boltstore.Written()
	must(t, games.SetRoundsAt(ctx, "2345", 7, game.Round{Spell: "haste"}))
	if w := boltstore.Written().Sub(before); w.Keys != 2 || w.Deletes != 0 {
		t.Fatalf("SetRoundsAt wrote %+v, want 2 keys (round, version)", w)
	}

	before = boltstore.Written()
	must(t, games.SetSecondPlayer(ctx, "2345", "ann"))
	if w := boltstore.Written().Sub(before); w.Keys != 2 || w.Deletes != 0 {
		t.Fatalf("SetSecondPlayer wrote %+v, want 2 keys (secondPlayer, version)", w)
	}

	// A failed write writes nothing.
	before = boltstore.Written()
	wantErr(t, games.SetRoundsAt(ctx, "2345", 500, game.Round{}), runtime.ErrNotFound, "SetRoundsAt out of range")
	if w := boltstore.Written().Sub(before); w != (boltstore.WriteStats{}) {
		t.Fatalf("a failed SetRoundsAt wrote %+v", w)
	}

	got, err := games.Get(ctx, "2345")
	must(t, err)
	if len(got.Rounds) != 201 || got.Rounds[7].Spell != "haste" || got.Rounds[200].Moves[0] != "new" || got.SecondPlayer != "ann" || got.Version != 4 {
		t.Fatalf("game after the writes: %d rounds, version %d", len(got.Rounds), got.Version)
	}
}

// TestBoltPutShrinks checks that Put of a game with fewer rounds removes
// the element keys past the new length.
func TestBoltPutShrinks(t *testing.T) {
	db := boltharness.Open(t)
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	g := &game.Game{ID: "g", Rounds: []game.Round{{Spell: "a"}, {Spell: "b"}, {Spell: "c"}, {Spell: "d"}}}
	must(t, games.Create(ctx, g))
	g.Rounds = g.Rounds[:1]
	must(t, games.Put(ctx, g))
	want := []string{"/g/-", "/g/-/firstPlayer", "/g/-/rounds", "/g/-/rounds/0", "/g/-/secondPlayer", "/g/-/version"}
	if got := gameKeys(t, db); !slices.Equal(got, want) {
		t.Fatalf("keys after Put of 1 round over 4:\n%q\nwant\n%q", got, want)
	}
	i, err := games.AppendRounds(ctx, "g", game.Round{Spell: "e"})
	must(t, err)
	got, err := games.Get(ctx, "g")
	must(t, err)
	if i != 1 || len(got.Rounds) != 2 || got.Rounds[1].Spell != "e" {
		t.Fatalf("after Put and append: index %d, rounds %+v", i, got.Rounds)
	}
}

// TestBoltFailedWritesChangeNothing checks that failed writes leave every
// stored key and value as it was: the transaction rolls back.
func TestBoltFailedWritesChangeNothing(t *testing.T) {
	db := boltharness.Open(t)
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	must(t, games.Create(ctx, &game.Game{ID: "g", FirstPlayer: "mary", Rounds: []game.Round{{Spell: "a"}, {Spell: "b"}}}))
	snapshot := func() map[string]string {
		m := map[string]string{}
		err := db.View(func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("Game")).ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
		})
		must(t, err)
		return m
	}
	before := snapshot()
	stale := &game.Game{ID: "g", FirstPlayer: "stale", Version: 7}
	failures := map[string]error{
		"Update with a missing element": games.Update(ctx, "g", game.GameUpdate{
			FirstPlayer: runtime.Ptr("changed"),
			RoundsAt:    map[int]game.Round{0: {Spell: "changed"}, 2: {Spell: "bad"}},
		}),
		"Update with a stale IfVersion": games.Update(ctx, "g", game.GameUpdate{FirstPlayer: runtime.Ptr("changed"), IfVersion: 9}),
		"Put with a stale version":      games.Put(ctx, stale),
		"Create of an existing game":    games.Create(ctx, &game.Game{ID: "g"}),
		"SetRoundsAt out of range":      games.SetRoundsAt(ctx, "g", -1, game.Round{}),
	}
	for what, err := range failures {
		if err == nil {
			t.Errorf("%s did not fail", what)
		}
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Fatalf("failed writes changed the keys: %d before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("failed writes changed key %x", k)
		}
	}
	if stale.Version != 7 {
		t.Fatalf("failed Put changed the caller's version to %d", stale.Version)
	}
}

// TestBoltErrors checks the error details and that a cancelled context
// stops an operation before its transaction.
func TestBoltErrors(t *testing.T) {
	db := boltharness.Open(t)
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	must(t, games.Create(ctx, &game.Game{ID: "g", Rounds: []game.Round{{}}}))
	err := games.SetRoundsAt(ctx, "g", 3, game.Round{})
	var re *runtime.Error
	if !errors.As(err, &re) || re.Detail != "rounds[3]" || re.Op != "SetRoundsAt" || re.ID != "g" || !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("SetRoundsAt out of range: %v (%+v)", err, re)
	}
	err = games.Put(ctx, &game.Game{ID: "g", Version: 5})
	if !errors.Is(err, runtime.ErrConflict) || !errors.As(err, &re) || re.Detail != "(stored version 1, expected 5)" {
		t.Fatalf("Put with a stale version: %v", err)
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
	// A read-only database fails writes with the store's error.
	path := db.Path()
	must(t, db.Close())
	ro, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	must(t, err)
	defer ro.Close()
	roGames := game.NewGameBoltRepository(ro)
	if _, err := roGames.Get(ctx, "g"); err != nil {
		t.Fatalf("Get on a read-only database: %v", err)
	}
	err = roGames.SetFirstPlayer(ctx, "g", "x")
	if !errors.Is(err, bbolt.ErrDatabaseReadOnly) || !errors.As(err, &re) || re.Op != "SetFirstPlayer" {
		t.Fatalf("write to a read-only database: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

// TestBoltAllPages iterates over more blocks than All reads per
// transaction, writing inside the loop: All holds no read transaction
// while the loop body runs, so even writes that grow the file (and make
// bbolt remap it, which waits for open read transactions) go through.
func TestBoltAllPages(t *testing.T) {
	db := boltharness.Open(t)
	players := game.NewPlayerBoltRepository(db)
	ctx := context.Background()
	var want []string
	for i := range 250 {
		name := fmt.Sprintf("p%03d", i)
		want = append(want, name)
		must(t, players.Create(ctx, &game.Player{Username: name}))
	}
	big := strings.Repeat("x", 1<<20)
	var got []string
	for p, err := range players.All(ctx) {
		must(t, err)
		got = append(got, p.Username)
		if len(got)%50 == 0 {
			must(t, players.SetLastName(ctx, p.Username, big))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All read %d players, want %d in key order", len(got), len(want))
	}
	page, err := players.List(ctx, runtime.PageRequest{Limit: 200})
	must(t, err)
	if len(page.Items) != 200 || page.Next == "" || page.Items[199].Username != "p199" || page.Items[49].LastName != big {
		t.Fatalf("List of 200: %d items, next %q", len(page.Items), page.Next)
	}
}

// A stored round overwritten with a malformed BSON document (one on which
// the MongoDB driver's decoder loops forever: a string of negative length
// under a key Round does not have) makes Get fail with
// bsonval.ErrMalformed, naming the entry, instead of hanging.
func TestBoltCorruptValue(t *testing.T) {
	// Not openBolt: closing the file waits for a read that never ends.
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "noam.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	games := game.NewGameBoltRepository(db)
	ctx := context.Background()
	if err := games.Create(ctx, &game.Game{ID: "g", Rounds: []game.Round{{Moves: []string{"a"}}}}); err != nil {
		t.Fatal(err)
	}
	suffix := runtime.AppendInt(runtime.AppendString(nil, "rounds"), 0)
	// The fuzzer's input of bsonval.TestMalformedDoesNotHang, as a stored
	// document value.
	bad := append([]byte{0x03}, "\xf6\x00\x00\x00\x02s\x00\x04\x00\x00\x00\xa5\xbc2\x00\x02\x10\x00\xee\xff\xff\xff\x10\x00\x87\xfc\xff\xff\x10\x00\xff\xff\xff\x7f\x12i64\x00\xff\xff\xff\x7f\x00\x00\x00\x00\x12u\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\xff\x00\x00\x00\x10\x00\x7f\xef\x00\x00\x12u32\x00\x95\x98\xae\x1c\x00\x00\x00\x00\x12u64\x00\x00\x00\x00@\x00\x00\x00\x00\x01f\x00UUUE\xf1\xc7{\xc1\x01f32\x00\x00\x00\x00\x00\x00\x00ptyE"...)
	err = db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("Game")).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if bytes.HasSuffix(k, suffix) {
				return tx.Bucket([]byte("Game")).Put(bytes.Clone(k), bad)
			}
		}
		return errors.New("no rounds[0] key")
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := games.Get(ctx, "g")
		done <- err
	}()
	select {
	case err := <-done:
		db.Close()
		if !errors.Is(err, bsonval.ErrMalformed) || !strings.Contains(err.Error(), "rounds[0]") {
			t.Fatalf("Get of a corrupt round: %v, want bsonval.ErrMalformed naming rounds[0]", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get of a corrupt round did not return")
	}
}

// TestNewRepositoryByHandle: the store-independent constructor picks the
// store by the handle's type, and refuses a nil handle or one no store
// takes with ErrInvalid, opening nothing.
func TestNewRepositoryByHandle(t *testing.T) {
	db := boltharness.Open(t)
	r, err := game.NewGameRepository(db)
	if err != nil {
		t.Fatal(err)
	}
	br, ok := r.(*game.GameBoltRepository)
	if !ok || br.DB() != db {
		t.Fatalf("NewGameRepository(*bbolt.DB) = %T, want *game.GameBoltRepository over db", r)
	}
	ctx := context.Background()
	if err := r.Create(ctx, &game.Game{ID: "g1", FirstPlayer: "ann"}); err != nil {
		t.Fatal(err)
	}
	got, err := game.NewGameBoltRepository(db).Get(ctx, "g1")
	if err != nil || got.FirstPlayer != "ann" {
		t.Fatalf("Get through the bbolt constructor = %+v, %v", got, err)
	}
	for _, h := range []any{nil, (*bbolt.DB)(nil), "game.db", db.Path()} {
		r, err := game.NewGameRepository(h)
		if !errors.Is(err, runtime.ErrInvalid) || r != nil {
			t.Errorf("NewGameRepository(%T) = %v, %v; want ErrInvalid", h, r, err)
		}
	}
	_, err = game.NewGameRepository(42)
	for _, want := range []string{"noam: Game: New over int: invalid value", "bolt takes *bbolt.DB", "redis takes redis.UniversalClient", "dynamo takes *dynamodb.Client", "mongo takes *mongo.Database"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewGameRepository(42): %v, want it to say %q", err, want)
		}
	}
}
