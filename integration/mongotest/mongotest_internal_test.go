package mongotest

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// TestStartFerretDB starts a dedicated FerretDB (as Start does without Main)
// and reports how long start-up takes.
func TestStartFerretDB(t *testing.T) {
	if Real() {
		t.Skip("NOAM_MONGO_URI is set")
	}
	t0 := time.Now()
	srv, err := startFerretDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	client, err := connect(srv.uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	if err := client.Database(dbName(t)).CreateCollection(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	t3 := time.Now()
	disconnect(client)
	srv.stop()
	t.Logf("FerretDB at %s: start %v, connect+ping %v, first createCollection %v, stop %v",
		srv.uri, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), time.Since(t3))
}

func TestDBName(t *testing.T) {
	t.Run("a very/long.name with $ weird chars and more more more more more", func(t *testing.T) {
		a, b := dbName(t), dbName(t)
		if a == b || len(a) > 63 || !databaseNameRe.MatchString(a) {
			t.Errorf("dbName = %q, %q", a, b)
		}
	})
}

var databaseNameRe = regexp.MustCompile("^[a-zA-Z0-9_-]{1,63}$")

// TestStartWithoutMain checks Start when TestMain does not call Main: each
// test gets its own FerretDB.
func TestStartWithoutMain(t *testing.T) {
	if Real() {
		t.Skip("NOAM_MONGO_URI is set")
	}
	shared.mu.Lock()
	uri, client := shared.uri, shared.client
	shared.uri, shared.client = "", nil
	shared.mu.Unlock()
	defer func() {
		shared.mu.Lock()
		shared.uri, shared.client = uri, client
		shared.mu.Unlock()
	}()

	var names []string
	for range 2 {
		t.Run("Start", func(t *testing.T) {
			db := Start(t)
			ctx := context.Background()
			if _, err := db.Collection("c").InsertOne(ctx, map[string]any{"_id": 1}); err != nil {
				t.Fatal(err)
			}
			// A fresh server holds only this test's database.
			got, err := db.Client().ListDatabaseNames(ctx, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != db.Name() {
				t.Errorf("databases = %v, want [%s] (previous: %v)", got, db.Name(), names)
			}
			names = append(names, db.Name())
		})
	}
}
