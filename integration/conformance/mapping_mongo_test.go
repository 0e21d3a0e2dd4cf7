package conformance

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// recordedMapping is the lookup mapping the schema record document of
// collection coll holds ("" for none).
func recordedMapping(t *testing.T, db *mongo.Database, coll string) string {
	t.Helper()
	raw, err := db.Collection(mongostore.SchemaCollection).FindOne(bg, bson.D{{Key: "_id", Value: coll}}).Raw()
	if err != nil {
		t.Fatalf("reading the schema record of %s: %v", coll, err)
	}
	s, _ := raw.Lookup("lookups").StringValueOK()
	return s
}

// TestLookupMapping: a repository opened without mapping options gets,
// at the collection's first EnsureIndexes, the mapping the server
// supports (on FerretDB, without partial indexes, unique lookups in index
// tables), recorded in the schema record; a repository opened later
// without options follows the record (it finds the first one's aggregate
// by its unique value and is refused a second holder of it); one whose
// options name another mapping fails with ErrMappingConflict, at
// EnsureIndexes and at a write; a record without a mapping (written by an
// earlier build) gets one at the next EnsureIndexes.
func TestLookupMapping(t *testing.T) {
	db := mongotest.Start(t)
	want, others := mongostore.MappingUniqueTables, []runtime.Option{mongostore.IndexTables(), mongostore.NoPartialIndexes()}
	if mongotest.Real() {
		want, others = mongostore.MappingNative, []runtime.Option{mongostore.IndexTables(), mongostore.UniqueTables()}
	}
	first := model.NewMatchMongoRepository(db)
	must(t, first.EnsureIndexes(bg))
	coll := first.Collection().Name()
	if got := recordedMapping(t, db, coll); got != want {
		t.Fatalf("recorded mapping %q, want %q", got, want)
	}
	must(t, first.Create(bg, &model.Match{ID: "m1", Code: "c1", Region: "r", Tags: []string{"a"}}))

	later := model.NewMatchMongoRepository(db)
	got, err := later.GetByCode(bg, "c1")
	if err != nil || got.ID != "m1" {
		t.Fatalf("GetByCode in a repository opened later: %+v, %v; want m1", got, err)
	}
	if err := later.Create(bg, &model.Match{ID: "m2", Code: "c1", Region: "r"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create of a second holder of c1 in a repository opened later: %v, want ErrDuplicate", err)
	}
	if want == mongostore.MappingUniqueTables {
		n, err := db.Collection(mongostore.TableName(coll, "code")).CountDocuments(bg, bson.D{})
		if err != nil || n != 1 {
			t.Fatalf("index table of code: %d entries (%v), want 1", n, err)
		}
	}

	for _, o := range others {
		r := model.NewMatchMongoRepository(db, o)
		if err := r.Create(bg, &model.Match{ID: "m3", Code: "c3", Region: "r"}); !errors.Is(err, mongostore.ErrMappingConflict) || !errors.Is(err, runtime.ErrInvalid) {
			t.Fatalf("Create in a repository whose option contradicts the recorded mapping: %v, want ErrMappingConflict (ErrInvalid)", err)
		}
		if err := r.EnsureIndexes(bg); !errors.Is(err, mongostore.ErrMappingConflict) {
			t.Fatalf("EnsureIndexes in a repository whose option contradicts the recorded mapping: %v, want ErrMappingConflict", err)
		}
	}
	if _, err := first.Get(bg, "m3"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get m3 after the refused Creates: %v, want ErrNotFound", err)
	}
	if got := recordedMapping(t, db, coll); got != want {
		t.Fatalf("recorded mapping after the refused repositories: %q, want %q", got, want)
	}

	// A record an earlier build wrote has no mapping.
	forgetMapping(t, db, coll)
	must(t, model.NewMatchMongoRepository(db).EnsureIndexes(bg))
	if got := recordedMapping(t, db, coll); got != want {
		t.Fatalf("mapping recorded by EnsureIndexes over a record without one: %q, want %q", got, want)
	}
}

// forgetMapping removes the lookup mapping recorded for collection coll,
// as a record written by an earlier build has none, or as an operator
// does to move a collection's lookups while no process writes.
func forgetMapping(t *testing.T, db *mongo.Database, coll string) {
	t.Helper()
	if _, err := db.Collection(mongostore.SchemaCollection).UpdateOne(bg, bson.D{{Key: "_id", Value: coll}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "lookups", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
}
