package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestExplainMarkdownAndJSON(t *testing.T) {
	dir := tempPackage(t, player)
	code, out, errs := runIn(t, dir, nil, "explain")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, errs)
	}
	for _, want := range []string{"```mermaid", "Player:2345 -> {age}", "`/Player/2345/-/age`", "### MongoDB", "| SetAge |"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runIn(t, dir, nil, "explain", "-format", "json", "-store", "bolt")
	if code != 0 {
		t.Fatalf("explain -format json: exit %d: %s", code, errs)
	}
	var r struct {
		Version    int      `json:"version"`
		Stores     []string `json:"stores"`
		Aggregates []struct {
			Name    string `json:"name"`
			Methods []struct {
				Name   string                     `json:"name"`
				Stores map[string]json.RawMessage `json:"stores"`
			} `json:"methods"`
		} `json:"aggregates"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("explain -format json is not JSON: %v\n%s", err, out)
	}
	if r.Version != 1 || len(r.Stores) != 1 || r.Stores[0] != "bolt" || len(r.Aggregates) != 1 || r.Aggregates[0].Name != "Player" {
		t.Fatalf("JSON report %+v", r)
	}
	for _, m := range r.Aggregates[0].Methods {
		if _, ok := m.Stores["bolt"]; !ok || len(m.Stores) != 1 {
			t.Errorf("method %s: stores %v, want bolt only", m.Name, m.Stores)
		}
	}
	// The generation flags still work beside the subcommand.
	if code, _, errs := runIn(t, dir, nil, "-store", "bolt", "-check"); code != 1 || !strings.Contains(errs, "missing") {
		t.Errorf("noamgen -check after explain: exit %d: %s", code, errs)
	}
}

func TestExplainFileAndCheck(t *testing.T) {
	dir := tempPackage(t, player)
	if code, _, errs := runIn(t, dir, nil, "explain", "-o", "LAYOUT.md"); code != 0 {
		t.Fatalf("explain -o: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "LAYOUT.md"))
	if err != nil || !strings.HasPrefix(string(b), "# Storage layout of ") {
		t.Fatalf("LAYOUT.md: %v\n%s", err, b)
	}
	if code, _, errs := runIn(t, dir, nil, "explain", "-o", "LAYOUT.md", "-check"); code != 0 {
		t.Fatalf("explain -check right after writing: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, "LAYOUT.md"), append(b, "edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runIn(t, dir, nil, "explain", "-o", "LAYOUT.md", "-check"); code != 1 || !strings.Contains(errs, "LAYOUT.md: out of date") {
		t.Fatalf("explain -check of an edited file: exit %d: %s", code, errs)
	}
	if code, _, errs := runIn(t, dir, nil, "explain", "-o", "NONE.md", "-check"); code != 1 || !strings.Contains(errs, "NONE.md: missing") {
		t.Fatalf("explain -check of a missing file: exit %d: %s", code, errs)
	}
}

func TestExplainErrors(t *testing.T) {
	dir := tempPackage(t, player)
	t.Setenv("NOAM_MONGO_URI", "")
	t.Setenv("NOAM_BOLT_FILE", "")
	t.Setenv("NOAM_REDIS_URL", "")
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"bad format":      {[]string{"explain", "-format", "yaml"}, 2, "-format must be md or json"},
		"check without o": {[]string{"explain", "-check"}, 2, "-check needs -o"},
		"unknown store":   {[]string{"explain", "-store", "nope"}, 1, `unknown store "nope"`},
		"sample nothing":  {[]string{"explain", "-sample", "3"}, 2, "no store to sample"},
		"two packages":    {[]string{"explain", ".", "."}, 2, "usage: noamgen explain"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errs := runIn(t, dir, nil, c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", code, c.code, c.want, errs)
			}
		})
	}
	bad := tempPackage(t, "package p\n\ntype T struct {\n\t_  struct{} `noam:\"aggregate,partion=x\"`\n\tID string   `noam:\"id\"`\n}\n")
	code, _, errs := runIn(t, bad, nil, "explain")
	if code != 1 || !strings.Contains(errs, "input.go:4:") {
		t.Fatalf("explain of a bad tag: exit %d, want 1 and a positioned error:\n%s", code, errs)
	}
	if code, _, errs := runIn(t, dir, nil, "explain", "-h"); code != 0 || !strings.Contains(errs, "-sample N") || !strings.Contains(errs, "-bolt file") || !strings.Contains(errs, "-mongo URI") || !strings.Contains(errs, "-redis URL") {
		t.Fatalf("explain -h: exit %d:\n%s", code, errs)
	}
}

// TestExplainSampleBolt samples a bbolt file written by the example's
// generated repositories through the command line.
func TestExplainSampleBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "game.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	games := game.NewGameBoltRepository(db)
	for _, id := range []string{"a", "b", "c"} {
		g := &game.Game{ID: id, FirstPlayer: "mary"}
		for range len(id) + 2 {
			g.Rounds = append(g.Rounds, game.Round{Moves: []string{"m"}})
		}
		if err := games.Create(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	wd, _ := os.Getwd()
	code, out, errs := runIn(t, filepath.Join(wd, "..", "..", "example", "game"), nil, "explain", "-store", "bolt", "-sample", "2", "-bolt", path)
	if code != 0 {
		t.Fatalf("explain -sample: exit %d: %s", code, errs)
	}
	for _, want := range []string{"### Sample of bbolt (" + path + "): 2 blocks", "| `rounds[i]` | 6 |", "Largest partitions: `rounds` of `a`"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "Recorded layout: none.") {
		t.Errorf("no record, and explain does not say so:\n%s", out)
	}
	// The Player bucket does not exist: zero blocks, no error.
	if !strings.Contains(out, "### Sample of bbolt ("+path+"): 0 blocks") {
		t.Errorf("no sample of the empty Player bucket:\n%s", out)
	}
}

// TestExplainSampleRedis samples a real Redis server, written by the
// example's generated repositories, through the command line (-redis).
func TestExplainSampleRedis(t *testing.T) {
	c := redistest.Server(t)
	games := game.NewGameRedisRepository(c)
	for _, id := range []string{"a", "b", "c"} {
		g := &game.Game{ID: id, FirstPlayer: "mary"}
		for range len(id) + 2 {
			g.Rounds = append(g.Rounds, game.Round{Moves: []string{"m"}})
		}
		if err := games.Create(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := json.Marshal(runtime.SchemaRecord{Layout: runtime.Layout{Collection: "Game", Strategy: "eao", Fields: []string{"firstPlayer", "secondPlayer"}, Partitions: []string{"rounds"}, Version: "version"}})
	if err := c.Set(context.Background(), "noam:schema:{Game}", rec, 0).Err(); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("redis://%s/%d", c.Options().Addr, c.Options().DB)
	wd, _ := os.Getwd()
	code, out, errs := runIn(t, filepath.Join(wd, "..", "..", "example", "game"), nil, "explain", "-store", "redis", "-sample", "2", "-redis", url)
	if code != 0 {
		t.Fatalf("explain -sample: exit %d: %s", code, errs)
	}
	src := c.Options().Addr + " db " + fmt.Sprint(c.Options().DB)
	for _, want := range []string{"### Sample of Redis (" + src + ", listing Game:blocks): 2 blocks", "| `rounds[i]` | 6 |", "Largest partitions: `rounds` of `a`", "### Sample of Redis (" + src + ", listing Player:blocks): 0 blocks",
		"- recorded: `eao: firstPlayer, secondPlayer; partitioned: rounds; version: version`", "- strategy eao -> etf\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestExplainRecordedLayout: with -sample, explain reads the layout the
// store recorded for the collection (bolt: bucket _noam_schema, keyed by
// collection) and shows it beside the model's, with what changed.
func TestExplainRecordedLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "players.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := runtime.Layout{Collection: "players", Strategy: "etf", Fields: []string{"name", "email", "city", "scores"}}
	older := v1
	older.Strategy = "eao"
	rec, err := json.Marshal(runtime.SchemaRecord{Layout: v1, History: []runtime.Layout{older}})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("_noam_schema"))
		if err != nil {
			return err
		}
		return b.Put([]byte("players"), rec)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	evolve := filepath.Join(wd, "..", "..", "runtime", "storetest", "evolve")
	code, out, errs := runIn(t, filepath.Join(evolve, "lookups"), nil, "explain", "-store", "bolt", "-sample", "1", "-bolt", path)
	if code != 0 {
		t.Fatalf("explain -sample: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"#### Layout recorded in bbolt",
		"- recorded: `etf: name, email, city, scores`",
		"- current: `etf: name, email, city, scores; lookups: email(email) unique, city(city)`",
		"- lookup email(email) unique added\n- lookup city(city) added\n",
		"older layouts", "- `eao: name, email, city, scores`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runIn(t, filepath.Join(evolve, "eao"), nil, "explain", "-store", "bolt", "-sample", "1", "-bolt", path, "-format", "json")
	if code != 0 {
		t.Fatalf("explain -sample -format json: exit %d: %s", code, errs)
	}
	var r struct {
		Aggregates []struct {
			Samples map[string]struct {
				Recorded struct {
					Layout  *runtime.Layout
					Current runtime.Layout
					Changes []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := r.Aggregates[0].Samples["bolt"].Recorded
	if got.Layout == nil || got.Layout.Strategy != "etf" || got.Current.Strategy != "eao" || strings.Join(got.Changes, "; ") != "strategy etf -> eao" {
		t.Errorf("recorded: %+v", got)
	}
	// The etf model is the recorded layout.
	code, out, _ = runIn(t, filepath.Join(evolve, "etf"), nil, "explain", "-store", "bolt", "-sample", "1", "-bolt", path)
	if code != 0 || !strings.Contains(out, "The recorded layout is the current one.") {
		t.Errorf("explain of the recorded model: exit %d:\n%s", code, out)
	}

	// A record the repository's EnsureIndexes writes (runtime.LayoutOf
	// of its descriptor) is the layout explain computes from the model.
	path = filepath.Join(t.TempDir(), "lookups.db")
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = lookups.NewPlayerBoltRepository(db).EnsureIndexes(context.Background())
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runIn(t, filepath.Join(evolve, "lookups"), nil, "explain", "-store", "bolt", "-sample", "1", "-bolt", path)
	if code != 0 || !strings.Contains(out, "The recorded layout is the current one.") || !strings.Contains(out, "- recorded: `etf: name, email, city, scores; lookups: email(email) unique, city(city)`") {
		t.Errorf("explain of the layout EnsureIndexes recorded: exit %d:\n%s", code, out)
	}
}
