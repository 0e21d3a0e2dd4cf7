package explain_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/runtime"
)

// TestLayoutOfIsRecorded: the layout explain computes from the model is
// the one the generated repositories' EnsureIndexes records
// (runtime.LayoutOf of their descriptor), for partitions, a version, a
// counter, composite, nested and multi-valued lookups.
func TestLayoutOfIsRecorded(t *testing.T) {
	ctx := context.Background()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "x.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{
		game.NewGameBoltRepository(db), game.NewPlayerBoltRepository(db), game.NewTournamentBoltRepository(db),
		hotel.NewHotelBoltRepository(db), hotel.NewPostBoltRepository(db), hotel.NewCommentBoltRepository(db),
	} {
		if err := r.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"game", "hotel"} {
		for _, a := range load(t, s).Aggregates {
			var raw []byte
			err := db.View(func(tx *bbolt.Tx) error {
				raw = tx.Bucket([]byte(explain.SchemaBucket)).Get([]byte(a.Collection))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := runtime.DecodeSchema(raw)
			if err != nil || rec == nil {
				t.Fatalf("%s: record %q: %v", a.Name, raw, err)
			}
			if got := explain.LayoutOf(a); !reflect.DeepEqual(got, rec.Layout) {
				t.Errorf("%s: explain computes\n%+v\nEnsureIndexes recorded\n%+v", a.Name, got, rec.Layout)
			}
		}
	}
}
