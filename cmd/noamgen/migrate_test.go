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

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
)

// TestMigrateBolt changes a model with data end to end: players written
// by model v1 (strategy etf) into a bbolt file, v2 (strategy eao, its
// generated code in runtime/storetest/evolve/eao) started on it, then
// `noamgen migrate` on v2's package: a dry run counts and writes nothing,
// a real run rewrites every old block in batches with a progress bar, a
// second run finds every block current, and a block that cannot be read
// is reported and makes the command exit 1.
func TestMigrateBolt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "players.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := etf.NewPlayerBoltRepository(db)
	must(t, v1.EnsureIndexes(ctx))
	for i := range 150 {
		must(t, v1.Create(ctx, &etf.Player{ID: fmt.Sprintf("p%03d", i), Name: fmt.Sprint("name ", i), Email: fmt.Sprintf("p%d@example.org", i), Scores: []etf.Score{{Game: "g", Points: i}}}))
	}
	v2 := eao.NewPlayerBoltRepository(db)
	must(t, v2.EnsureIndexes(ctx)) // records eao; etf goes to the history
	p, err := v2.Get(ctx, "p000")
	must(t, err)
	must(t, v2.Put(ctx, p)) // written by v2: current
	must(t, db.Close())

	wd, _ := os.Getwd()
	pkg := filepath.Join(wd, "..", "..", "runtime", "storetest", "evolve", "eao")
	code, out, errs := runIn(t, pkg, nil, "migrate", "-store", "bolt", "-bolt", path, "-dry-run")
	if code != 0 {
		t.Fatalf("migrate -dry-run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if want := "Player: 150 blocks: 149 to migrate, 1 already current, 0 failed\n"; out != want {
		t.Errorf("migrate -dry-run: stdout %q, want %q", out, want)
	}
	for _, want := range []string{"Player: 64 blocks, 63 to migrate\n", "Player: 128 blocks, 127 to migrate\n", "Player: 150 blocks, 149 to migrate\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("migrate -dry-run: stderr lacks %q:\n%s", want, errs)
		}
	}

	// The store is named by its connection flag alone.
	code, out, errs = runIn(t, pkg, nil, "migrate", "-bolt", path, "-batch", "50")
	if code != 0 {
		t.Fatalf("migrate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if want := "Player: 150 blocks: 149 migrated, 1 already current, 0 failed\n"; out != want {
		t.Errorf("migrate: stdout %q, want %q (the dry run must have written nothing)", out, want)
	}
	for _, want := range []string{"Player: [######..............] 50 blocks, 49 migrated\n", "Player: [#############.......] 100 blocks, 99 migrated\n", "Player: [####################] 150 blocks, 149 migrated\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("migrate: stderr lacks %q:\n%s", want, errs)
		}
	}
	code, out, errs = runIn(t, pkg, nil, "migrate", "-store", "bolt", "-bolt", path)
	if want := "Player: 150 blocks: 0 migrated, 150 already current, 0 failed\n"; code != 0 || out != want {
		t.Errorf("migrate again: exit %d, stdout %q, want %q\n%s", code, out, want, errs)
	}

	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec runtime.SchemaRecord
	err = db.Update(func(tx *bbolt.Tx) error {
		raw := tx.Bucket([]byte("_noam_schema")).Get([]byte("players"))
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		// A block in the old layout (etf: a marker and an entry per
		// field) whose name entry does not decode.
		b := tx.Bucket([]byte("players"))
		prefix := boltstore.BlockPrefix(runtime.AppendString(nil, "p150"))
		if err := b.Put(prefix, []byte{}); err != nil {
			return err
		}
		return b.Put(runtime.AppendString(prefix, "name"), []byte{0xff, 1, 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Layout.Strategy != "eao" || len(rec.History) != 0 {
		t.Errorf("schema record after a complete migration: %+v, want eao and no history", rec)
	}
	v2 = eao.NewPlayerBoltRepository(db)
	got, err := v2.Get(ctx, "p042")
	if err != nil || got.Name != "name 42" || got.Email != "p42@example.org" || len(got.Scores) != 1 || got.Scores[0].Points != 42 {
		t.Errorf("v2 Get of a migrated block: %+v, %v", got, err)
	}
	must(t, db.Close())
	code, out, errs = runIn(t, pkg, nil, "migrate", "-store", "bolt", "-bolt", path)
	if code != 1 || !strings.Contains(out, "Player: 151 blocks: 0 migrated, 150 already current, 1 failed\n  block p150") {
		t.Errorf("migrate with a broken block: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestMigrateErrors: bad command lines exit 2; a store the package has no
// repositories for is named.
func TestMigrateErrors(t *testing.T) {
	dir := tempPackage(t, player)
	if code, _, errs := runIn(t, dir, map[string]string{"GOFILE": "input.go", "GOPACKAGE": "p"}, "-store", "mongo"); code != 0 {
		t.Fatalf("generate: %s", errs)
	}
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no store":        {[]string{"migrate"}, 2, "name the store with -store"},
		"bad batch":       {[]string{"migrate", "-bolt", "x.db", "-batch", "0"}, 2, "-batch must be positive"},
		"not generated":   {[]string{"migrate", "-store", "bolt", "-bolt", "x.db"}, 1, "has no NewPlayerBoltRepository"},
		"unknown store":   {[]string{"migrate", "-store", "cassandra"}, 2, `-store cassandra: noamgen migrate knows bolt, dynamo, mongo, redis`},
		"two packages":    {[]string{"migrate", "-bolt", "x.db", "a", "b"}, 2, "usage: noamgen migrate"},
		"help":            {[]string{"migrate", "-h"}, 0, "-dry-run"},
		"mongo needs -db": {[]string{"migrate", "-store", "mongo", "-mongo", "mongodb://127.0.0.1:1"}, 1, "-store mongo needs -mongo URI and -db NAME"},
	} {
		code, _, errs := runIn(t, dir, nil, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, want %d; stderr lacks %q:\n%s", name, code, c.code, c.want, errs)
		}
	}
	// Nothing is left in the module.
	entries, _ := filepath.Glob(filepath.Join(dir, "..", "..", "..", "_noamgen_migrate*"))
	if len(entries) > 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
