package mongotest_test

// Probes of the server behaviours generated code relies on. They run against
// FerretDB by default and against a real MongoDB when NOAM_MONGO_URI is set.
// Where FerretDB v1.24.0 differs from MongoDB, the subtest asserts FerretDB's
// actual behaviour when that is useful to know, then skips with the reason.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/integration/mongotest"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

type round struct {
	Moves string `bson:"moves"`
}

type lens struct {
	Rounds int64 `bson:"rounds"`
}

type game struct {
	ID          string  `bson:"_id"`
	FirstPlayer string  `bson:"firstPlayer,omitempty"`
	Rounds      []round `bson:"rounds,omitempty"`
	Len         *lens   `bson:"_len,omitempty"`
	Version     int64   `bson:"version,omitempty"`
}

func newGame(id string, version int64) game {
	return game{
		ID:          id,
		FirstPlayer: "mary",
		Rounds:      []round{{"a"}, {"b"}},
		Len:         &lens{Rounds: 2},
		Version:     version,
	}
}

// setup returns a collection in a fresh database holding games g1 and g2.
func setup(t *testing.T) (context.Context, *mongo.Collection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	coll := mongotest.Start(t).Collection("games")
	if _, err := coll.InsertMany(ctx, []any{newGame("g1", 1), newGame("g2", 1)}); err != nil {
		t.Fatalf("InsertMany: %v", err)
	}
	return ctx, coll
}

func getGame(ctx context.Context, t *testing.T, coll *mongo.Collection, id any) game {
	t.Helper()
	var g game
	if err := coll.FindOne(ctx, bson.M{"_id": id}).Decode(&g); err != nil {
		t.Fatalf("FindOne(%v): %v", id, err)
	}
	return g
}

func getRaw(ctx context.Context, t *testing.T, coll *mongo.Collection, id any) bson.Raw {
	t.Helper()
	raw, err := coll.FindOne(ctx, bson.M{"_id": id}).Raw()
	if err != nil {
		t.Fatalf("FindOne(%v): %v", id, err)
	}
	return raw
}

func keys(raw bson.Raw) []string {
	elems, _ := raw.Elements()
	var ks []string
	for _, e := range elems {
		ks = append(ks, e.Key())
	}
	sort.Strings(ks)
	return ks
}

func checkUpdate(t *testing.T, what string, res *mongo.UpdateResult, err error, matched, modified, upserted int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if res.MatchedCount != matched || res.ModifiedCount != modified || res.UpsertedCount != upserted {
		t.Fatalf("%s: matched/modified/upserted = %d/%d/%d, want %d/%d/%d",
			what, res.MatchedCount, res.ModifiedCount, res.UpsertedCount, matched, modified, upserted)
	}
}

// isNotImplemented reports whether err is FerretDB's NotImplemented (238) error.
func isNotImplemented(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(238)
}

// ferretDBLacks skips t if running on FerretDB and err is its NotImplemented
// error; it fails t for any other error.
func ferretDBLacks(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !mongotest.Real() && isNotImplemented(err) {
		t.Skipf("FerretDB does not support %s: %v", what, err)
	}
	t.Fatalf("%s: %v", what, err)
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func TestProbe(t *testing.T) {
	t.Run("a_InsertDuplicateID", func(t *testing.T) {
		ctx, coll := setup(t)
		_, err := coll.InsertOne(ctx, newGame("g1", 1))
		if !mongo.IsDuplicateKeyError(err) {
			t.Fatalf("InsertOne of existing _id: IsDuplicateKeyError(%v) = false", err)
		}
		// InsertMany: the duplicate is reported, the other document inserted (ordered: before it).
		_, err = coll.InsertMany(ctx, []any{newGame("g3", 1), newGame("g1", 1), newGame("g4", 1)})
		if !mongo.IsDuplicateKeyError(err) {
			t.Fatalf("InsertMany: IsDuplicateKeyError(%v) = false", err)
		}
		if n, err := coll.CountDocuments(ctx, bson.M{}); err != nil || n != 3 {
			t.Errorf("after ordered InsertMany with duplicate: count = %d, %v; want 3", n, err)
		}
	})

	t.Run("a_ConcurrentInsertSameID", func(t *testing.T) {
		ctx, coll := setup(t)
		const workers = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ok, dup int
		var other []error
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := coll.InsertOne(ctx, newGame("new", 1))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case mongo.IsDuplicateKeyError(err):
					dup++
				default:
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 || dup != workers-1 || len(other) != 0 {
			t.Errorf("%d concurrent inserts of one _id: %d ok, %d duplicate, %d other (first: %v)",
				workers, ok, dup, len(other), first(other))
		}
	})

	t.Run("b_FindOneAndUpdatePushInc", func(t *testing.T) {
		ctx, coll := setup(t)
		var got game
		err := coll.FindOneAndUpdate(ctx, bson.M{"_id": "g1"}, bson.M{
			"$push": bson.M{"rounds": round{"c"}},
			"$inc":  bson.M{"_len.rounds": 1},
		}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
		if err != nil {
			t.Fatalf("FindOneAndUpdate: %v", err)
		}
		if got.Len == nil || got.Len.Rounds != 3 {
			t.Errorf("_len = %+v, want rounds 3", got.Len)
		}
		if want := []round{{"a"}, {"b"}, {"c"}}; !reflect.DeepEqual(got.Rounds, want) {
			t.Errorf("rounds = %v, want %v", got.Rounds, want)
		}
		// ReturnDocument(Before) returns the previous state.
		err = coll.FindOneAndUpdate(ctx, bson.M{"_id": "g1"}, bson.M{"$inc": bson.M{"_len.rounds": 1}}).Decode(&got)
		if err != nil || got.Len.Rounds != 3 {
			t.Errorf("ReturnDocument(Before): _len = %+v, %v; want rounds 3", got.Len, err)
		}
		// No match: ErrNoDocuments.
		err = coll.FindOneAndUpdate(ctx, bson.M{"_id": "nope"}, bson.M{"$inc": bson.M{"_len.rounds": 1}}).Err()
		if !errors.Is(err, mongo.ErrNoDocuments) {
			t.Errorf("FindOneAndUpdate of missing doc: err = %v, want ErrNoDocuments", err)
		}
	})

	t.Run("b_FindOneAndUpdateProjection", func(t *testing.T) {
		ctx, coll := setup(t)
		got, err := coll.FindOneAndUpdate(ctx, bson.M{"_id": "g1"}, bson.M{
			"$push": bson.M{"rounds": round{"c"}},
			"$inc":  bson.M{"_len.rounds": 1},
		}, options.FindOneAndUpdate().
			SetReturnDocument(options.After).
			SetProjection(bson.M{"_len.rounds": 1})).Raw()
		if err != nil && !mongotest.Real() {
			// The failing command must not have applied the update.
			if g := getGame(ctx, t, coll, "g1"); g.Len.Rounds != 2 || len(g.Rounds) != 2 {
				t.Errorf("failed findAndModify modified the document: %+v", g)
			}
		}
		ferretDBLacks(t, "findAndModify with a projection (fields)", err)
		if ks := keys(got); !reflect.DeepEqual(ks, []string{"_id", "_len"}) {
			t.Errorf("projected keys = %v, want [_id _len]", ks)
		}
		if n := got.Lookup("_len", "rounds").AsInt64(); n != 3 {
			t.Errorf("_len.rounds = %d, want 3", n)
		}
	})

	t.Run("c_UpdateArrayElementIfExists", func(t *testing.T) {
		ctx, coll := setup(t)
		res, err := coll.UpdateOne(ctx,
			bson.M{"_id": "g1", "rounds.1": bson.M{"$exists": true}},
			bson.M{"$set": bson.M{"rounds.1": round{"B"}}})
		checkUpdate(t, "rounds.1", res, err, 1, 1, 0)
		res, err = coll.UpdateOne(ctx,
			bson.M{"_id": "g1", "rounds.5": bson.M{"$exists": true}},
			bson.M{"$set": bson.M{"rounds.5": round{"X"}}})
		checkUpdate(t, "rounds.5", res, err, 0, 0, 0)
		g := getGame(ctx, t, coll, "g1")
		if want := []round{{"a"}, {"B"}}; !reflect.DeepEqual(g.Rounds, want) {
			t.Errorf("rounds = %v, want %v", g.Rounds, want)
		}
	})

	t.Run("d_ProjectionSlice", func(t *testing.T) {
		ctx, coll := setup(t)
		// $slice alone: MongoDB keeps all other fields.
		got, err := coll.FindOne(ctx, bson.M{"_id": "g1"},
			options.FindOne().SetProjection(bson.M{"rounds": bson.M{"$slice": bson.A{1, 1}}})).Raw()
		ferretDBLacks(t, "the $slice projection", err)
		if ks, want := keys(got), []string{"_id", "_len", "firstPlayer", "rounds", "version"}; !reflect.DeepEqual(ks, want) {
			t.Errorf("keys = %v, want %v", ks, want)
		}
		var g game
		if err := bson.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if want := []round{{"b"}}; !reflect.DeepEqual(g.Rounds, want) {
			t.Errorf("rounds = %v, want %v", g.Rounds, want)
		}

		// $slice with an inclusion: only _id and the included fields remain.
		got, err = coll.FindOne(ctx, bson.M{"_id": "g1"},
			options.FindOne().SetProjection(bson.M{"rounds": bson.M{"$slice": bson.A{1, 1}}, "_len.rounds": 1})).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if ks, want := keys(got), []string{"_id", "_len", "rounds"}; !reflect.DeepEqual(ks, want) {
			t.Errorf("keys = %v, want %v", ks, want)
		}

		// Out of range: empty array.
		got, err = coll.FindOne(ctx, bson.M{"_id": "g1"},
			options.FindOne().SetProjection(bson.M{"rounds": bson.M{"$slice": bson.A{5, 1}}})).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if vs, err := got.Lookup("rounds").Array().Values(); err != nil || len(vs) != 0 {
			t.Errorf("out-of-range $slice: rounds = %v, want empty array", got.Lookup("rounds"))
		}
	})

	t.Run("d_AggregateElementAt", func(t *testing.T) {
		// Works on FerretDB (unlike the $slice projection and the $slice and
		// $arrayElemAt aggregation operators): $unwind, $skip, $limit.
		ctx, coll := setup(t)
		elem := func(i int) []bson.Raw {
			t.Helper()
			cur, err := coll.Aggregate(ctx, mongo.Pipeline{
				{{Key: "$match", Value: bson.M{"_id": "g1"}}},
				{{Key: "$unwind", Value: "$rounds"}},
				{{Key: "$skip", Value: i}},
				{{Key: "$limit", Value: 1}},
				{{Key: "$project", Value: bson.M{"rounds": 1}}},
			})
			if err != nil {
				t.Fatalf("Aggregate: %v", err)
			}
			var out []bson.Raw
			if err := cur.All(ctx, &out); err != nil {
				t.Fatalf("Aggregate: %v", err)
			}
			return out
		}
		out := elem(1)
		if len(out) != 1 || out[0].Lookup("rounds", "moves").StringValue() != "b" {
			t.Errorf("element 1: got %v", out)
		}
		if out := elem(5); len(out) != 0 {
			t.Errorf("element 5: got %v, want nothing", out)
		}
	})

	t.Run("e_ReplaceOneVersioned", func(t *testing.T) {
		ctx, coll := setup(t)
		next := newGame("g1", 2)
		next.FirstPlayer = "bob"
		res, err := coll.ReplaceOne(ctx, bson.M{"_id": "g1", "version": 1}, next)
		checkUpdate(t, "replace version 1", res, err, 1, 1, 0)
		res, err = coll.ReplaceOne(ctx, bson.M{"_id": "g1", "version": 1}, newGame("g1", 2))
		checkUpdate(t, "replace stale version", res, err, 0, 0, 0)
		if g := getGame(ctx, t, coll, "g1"); g.FirstPlayer != "bob" || g.Version != 2 {
			t.Errorf("got %+v", g)
		}

		res, err = coll.ReplaceOne(ctx, bson.M{"_id": "g9"}, newGame("g9", 1), options.Replace().SetUpsert(true))
		checkUpdate(t, "replace upsert new", res, err, 0, 0, 1)
		if res.UpsertedID != "g9" {
			t.Errorf("UpsertedID = %#v, want g9", res.UpsertedID)
		}
		if g := getGame(ctx, t, coll, "g9"); !reflect.DeepEqual(g, newGame("g9", 1)) {
			t.Errorf("got %+v", g)
		}
		res, err = coll.ReplaceOne(ctx, bson.M{"_id": "g9"}, newGame("g9", 5), options.Replace().SetUpsert(true))
		checkUpdate(t, "replace upsert existing", res, err, 1, 1, 0)

		// Upsert with a stale version: the filter matches nothing, so an insert
		// of the existing _id is attempted, failing with a duplicate key error.
		_, err = coll.ReplaceOne(ctx, bson.M{"_id": "g9", "version": 1}, newGame("g9", 6), options.Replace().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			t.Errorf("stale-version upsert: IsDuplicateKeyError(%v) = false", err)
		}
	})

	t.Run("f_RangeSortLimit", func(t *testing.T) {
		ctx, coll := setup(t)
		_, err := coll.InsertMany(ctx, []any{bson.M{"_id": "d"}, bson.M{"_id": "b"}, bson.M{"_id": "a"}, bson.M{"_id": "c"}})
		if err != nil {
			t.Fatal(err)
		}
		ids := func(coll *mongo.Collection, filter any, sortDir int, limit int64) []any {
			t.Helper()
			cur, err := coll.Find(ctx, filter,
				options.Find().SetSort(bson.M{"_id": sortDir}).SetLimit(limit).SetProjection(bson.M{"_id": 1}))
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			var docs []bson.M
			if err := cur.All(ctx, &docs); err != nil {
				t.Fatalf("Find: %v", err)
			}
			var out []any
			for _, d := range docs {
				out = append(out, d["_id"])
			}
			return out
		}
		if got, want := ids(coll, bson.M{"_id": bson.M{"$gt": "a"}}, 1, 3), []any{"b", "c", "d"}; !reflect.DeepEqual(got, want) {
			t.Errorf("string ids: got %v, want %v", got, want)
		}
		if got, want := ids(coll, bson.M{"_id": bson.M{"$lt": "h"}}, -1, 3), []any{"g2", "g1", "d"}; !reflect.DeepEqual(got, want) {
			t.Errorf("string ids desc: got %v, want %v", got, want)
		}

		nums := coll.Database().Collection("nums")
		var docs []any
		for _, n := range []int64{20, 3, 100, 1, 10, 2} {
			docs = append(docs, bson.M{"_id": n})
		}
		if _, err := nums.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if got, want := ids(nums, bson.M{"_id": bson.M{"$gt": int64(2)}}, 1, 3), []any{int64(3), int64(10), int64(20)}; !reflect.DeepEqual(got, want) {
			t.Errorf("int64 ids: got %#v, want %#v", got, want)
		}
		if got, want := ids(nums, bson.M{"_id": bson.M{"$lt": int64(100)}}, -1, 2), []any{int64(20), int64(10)}; !reflect.DeepEqual(got, want) {
			t.Errorf("int64 ids desc: got %#v, want %#v", got, want)
		}
		// An int32 bound compares numerically with int64 values.
		if got, want := ids(nums, bson.M{"_id": bson.M{"$gte": int32(10)}}, 1, 0), []any{int64(10), int64(20), int64(100)}; !reflect.DeepEqual(got, want) {
			t.Errorf("int32 bound: got %#v, want %#v", got, want)
		}
	})

	t.Run("g_SetManyAndInc", func(t *testing.T) {
		ctx, coll := setup(t)
		res, err := coll.UpdateOne(ctx, bson.M{"_id": "g1"}, bson.M{
			"$set": bson.M{"firstPlayer": "joe", "extra.nested": "x", "rounds.0.moves": "A"},
			"$inc": bson.M{"version": 1, "counter": 5},
		})
		checkUpdate(t, "UpdateOne", res, err, 1, 1, 0)
		g := getGame(ctx, t, coll, "g1")
		if g.FirstPlayer != "joe" || g.Version != 2 || g.Rounds[0].Moves != "A" || g.Rounds[1].Moves != "b" {
			t.Errorf("got %+v", g)
		}
		raw := getRaw(ctx, t, coll, "g1")
		if v := raw.Lookup("version"); v.Type != bson.TypeInt64 {
			t.Errorf("version: type %v after $inc of an int64 by an int32, want int64", v.Type)
		}
		if v := raw.Lookup("counter"); v.Type != bson.TypeInt32 || v.Int32() != 5 {
			t.Errorf("counter = %v, want int32 5", v)
		}
		if v := raw.Lookup("extra", "nested"); v.StringValue() != "x" {
			t.Errorf("extra.nested = %v", v)
		}
	})

	t.Run("h_CommandMonitor", func(t *testing.T) {
		var mu sync.Mutex
		var started []*event.CommandStartedEvent
		monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, e)
		}}
		db := mongotest.StartWithOptions(t, options.Client().SetMonitor(monitor))
		ctx := context.Background()
		coll := db.Collection("games")
		if _, err := coll.InsertOne(ctx, newGame("g1", 1)); err != nil {
			t.Fatal(err)
		}
		if err := coll.FindOne(ctx, bson.M{"_id": "g1"}).Err(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		var found bool
		for _, e := range started {
			if e.CommandName != "find" {
				continue
			}
			found = true
			if e.DatabaseName != db.Name() {
				t.Errorf("DatabaseName = %q, want %q", e.DatabaseName, db.Name())
			}
			if v := e.Command.Lookup("find").StringValue(); v != "games" {
				t.Errorf("find = %q", v)
			}
			if v := e.Command.Lookup("filter", "_id").StringValue(); v != "g1" {
				t.Errorf("filter._id = %q", v)
			}
			if v := e.Command.Lookup("limit").AsInt64(); v != 1 {
				t.Errorf("limit = %d", v)
			}
		}
		if !found {
			t.Errorf("no find command in %d started events", len(started))
		}
	})

	t.Run("i_InAndDelete", func(t *testing.T) {
		ctx, coll := setup(t)
		cur, err := coll.Find(ctx, bson.M{"_id": bson.M{"$in": bson.A{"g2", "nope", "g1"}}},
			options.Find().SetSort(bson.M{"_id": 1}))
		if err != nil {
			t.Fatal(err)
		}
		var gs []game
		if err := cur.All(ctx, &gs); err != nil {
			t.Fatal(err)
		}
		if len(gs) != 2 || gs[0].ID != "g1" || gs[1].ID != "g2" {
			t.Errorf("got %+v", gs)
		}
		for i, want := range []int64{1, 0} {
			res, err := coll.DeleteOne(ctx, bson.M{"_id": "g1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.DeletedCount != want {
				t.Errorf("DeleteOne #%d: DeletedCount = %d, want %d", i, res.DeletedCount, want)
			}
		}
		res, err := coll.DeleteMany(ctx, bson.M{"_id": bson.M{"$in": bson.A{"g1", "g2"}}})
		if err != nil || res.DeletedCount != 1 {
			t.Errorf("DeleteMany: %+v, %v", res, err)
		}
	})

	t.Run("j_UniqueIndex", func(t *testing.T) {
		ctx, coll := setup(t)
		// g1 and g2 both have firstPlayer "mary": creating the index must fail.
		model := mongo.IndexModel{Keys: bson.M{"firstPlayer": 1}, Options: options.Index().SetUnique(true)}
		if _, err := coll.Indexes().CreateOne(ctx, model); err == nil {
			t.Errorf("creating a unique index over duplicate values succeeded")
		}
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": "g2"}, bson.M{"$set": bson.M{"firstPlayer": "ann"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.Indexes().CreateOne(ctx, model); err != nil {
			t.Fatalf("CreateOne unique: %v", err)
		}
		g := newGame("g3", 1)
		g.FirstPlayer = "ann"
		if _, err := coll.InsertOne(ctx, g); !mongo.IsDuplicateKeyError(err) {
			t.Errorf("insert violating unique index: IsDuplicateKeyError(%v) = false", err)
		}
		_, err := coll.UpdateOne(ctx, bson.M{"_id": "g1"}, bson.M{"$set": bson.M{"firstPlayer": "ann"}})
		if err == nil {
			t.Fatal("update violating unique index succeeded")
		}
		if g := getGame(ctx, t, coll, "g1"); g.FirstPlayer != "mary" {
			t.Errorf("failed update modified the document: %+v", g)
		}
		if !mongo.IsDuplicateKeyError(err) {
			if !mongotest.Real() {
				t.Skipf("FerretDB rejects an update violating a unique index, but not with a duplicate key error: %v", err)
			}
			t.Errorf("update violating unique index: IsDuplicateKeyError(%v) = false", err)
		}
	})

	t.Run("j_SetOnInsertUpsert", func(t *testing.T) {
		ctx, coll := setup(t)
		upd := func(x int) *mongo.UpdateResult {
			t.Helper()
			res, err := coll.UpdateOne(ctx, bson.M{"_id": "c1"}, bson.M{
				"$setOnInsert": bson.M{"created": x},
				"$set":         bson.M{"x": x},
			}, options.UpdateOne().SetUpsert(true))
			if err != nil {
				t.Fatalf("UpdateOne upsert: %v", err)
			}
			return res
		}
		if res := upd(1); res.UpsertedCount != 1 || res.UpsertedID != "c1" {
			t.Errorf("first upsert: %+v", res)
		}
		if res := upd(2); res.MatchedCount != 1 || res.UpsertedCount != 0 {
			t.Errorf("second upsert: %+v", res)
		}
		raw := getRaw(ctx, t, coll, "c1")
		if raw.Lookup("created").AsInt64() != 1 || raw.Lookup("x").AsInt64() != 2 {
			t.Errorf("got %v, want created 1 and x 2", raw)
		}
	})

	t.Run("j_Unset", func(t *testing.T) {
		ctx, coll := setup(t)
		res, err := coll.UpdateOne(ctx, bson.M{"_id": "g1"}, bson.M{"$unset": bson.M{"firstPlayer": "", "_len.rounds": ""}})
		checkUpdate(t, "$unset", res, err, 1, 1, 0)
		raw := getRaw(ctx, t, coll, "g1")
		if _, err := raw.LookupErr("firstPlayer"); err == nil {
			t.Errorf("firstPlayer still present: %v", raw)
		}
		if elems, err := raw.Lookup("_len").Document().Elements(); err != nil || len(elems) != 0 {
			t.Errorf("_len = %v, want empty document", raw.Lookup("_len"))
		}
	})

	t.Run("j_CounterUpsertInc", func(t *testing.T) {
		ctx, coll := setup(t)
		next := func(counters *mongo.Collection) (int64, error) {
			var doc struct {
				Seq int64 `bson:"seq"`
			}
			err := counters.FindOneAndUpdate(ctx, bson.M{"_id": "games"},
				bson.M{"$inc": bson.M{"seq": int64(1)}},
				options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
			return doc.Seq, err
		}
		counters := coll.Database().Collection("counters")
		for want := int64(1); want <= 3; want++ {
			got, err := next(counters)
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if got != want {
				t.Fatalf("next = %d, want %d", got, want)
			}
		}

		// concurrently calls next workers*each times, checking all results differ.
		concurrently := func(t *testing.T, counters *mongo.Collection) string {
			const workers, each = 8, 25
			var mu sync.Mutex
			seen := map[int64]int{}
			var errs []error
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						n, err := next(counters)
						mu.Lock()
						if err != nil {
							errs = append(errs, err)
						} else {
							seen[n]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			dups := 0
			for _, c := range seen {
				if c > 1 {
					dups++
				}
			}
			var final struct {
				Seq int64 `bson:"seq"`
			}
			if err := counters.FindOne(ctx, bson.M{"_id": "games"}).Decode(&final); err != nil {
				t.Fatal(err)
			}
			if len(errs) == 0 && dups == 0 && len(seen) == workers*each && final.Seq == 3+workers*each {
				return ""
			}
			return fmt.Sprintf("%d calls: %d errors (first: %v), %d distinct values, %d duplicated, final seq %d (want %d)",
				workers*each, len(errs), first(errs), len(seen), dups, final.Seq, 3+workers*each)
		}

		t.Run("Concurrent", func(t *testing.T) {
			if bad := concurrently(t, counters); bad != "" {
				if !mongotest.Real() {
					t.Skip("FerretDB: concurrent FindOneAndUpdate+$inc is not atomic (lost updates): " + bad)
				}
				t.Error(bad)
			}
		})

		t.Run("ConcurrentOneConnection", func(t *testing.T) {
			// Workaround for FerretDB: a client with a single connection
			// serialises the commands, so the counter is exact.
			db := mongotest.StartWithOptions(t, options.Client().SetMaxPoolSize(1))
			counters := db.Collection("counters")
			for range 3 {
				if _, err := next(counters); err != nil {
					t.Fatal(err)
				}
			}
			if bad := concurrently(t, counters); bad != "" {
				t.Error(bad)
			}
		})
	})

	t.Run("j_ConcurrentVersionedReplace", func(t *testing.T) {
		// Optimistic concurrency: of N concurrent ReplaceOne calls filtered on
		// the same version, exactly one must match.
		ctx, coll := setup(t)
		const workers = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		var matched int64
		var errs []error
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g := newGame("g1", 2)
				g.FirstPlayer = fmt.Sprint("p", i)
				res, err := coll.ReplaceOne(ctx, bson.M{"_id": "g1", "version": 1}, g)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				matched += res.MatchedCount
			}()
		}
		wg.Wait()
		if matched == 1 && len(errs) == 0 {
			return
		}
		summary := fmt.Sprintf("%d concurrent versioned replaces: %d matched, %d errors (first: %v)", workers, matched, len(errs), first(errs))
		if !mongotest.Real() {
			t.Skip("FerretDB: versioned ReplaceOne is not atomic under concurrency: " + summary)
		}
		t.Error(summary)
	})

	t.Run("k_EmbeddedDocumentIDs", func(t *testing.T) {
		// Composite block keys are stored as an embedded document _id
		// (fields in key-part order): equality, $in and $gt work on them,
		// and they sort part by part, numerically.
		ctx, coll := setup(t)
		type key struct {
			Post int64 `bson:"post"`
			Seq  int64 `bson:"seq"`
		}
		keys := coll.Database().Collection("keys")
		for _, k := range []key{{35, 1}, {35, 10}, {36, 1}, {35, 2}, {4, 100}, {-1, 3}} {
			if _, err := keys.InsertOne(ctx, bson.M{"_id": k}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := keys.InsertOne(ctx, bson.M{"_id": key{35, 2}}); !mongo.IsDuplicateKeyError(err) {
			t.Errorf("duplicate embedded _id: IsDuplicateKeyError(%v) = false", err)
		}
		find := func(filter any) []key {
			t.Helper()
			cur, err := keys.Find(ctx, filter, options.Find().SetSort(bson.M{"_id": 1}))
			if err != nil {
				t.Fatal(err)
			}
			var docs []struct {
				ID key `bson:"_id"`
			}
			if err := cur.All(ctx, &docs); err != nil {
				t.Fatal(err)
			}
			var out []key
			for _, d := range docs {
				out = append(out, d.ID)
			}
			return out
		}
		if got, want := find(bson.M{}), []key{{-1, 3}, {4, 100}, {35, 1}, {35, 2}, {35, 10}, {36, 1}}; !reflect.DeepEqual(got, want) {
			t.Errorf("sorted: %v, want %v", got, want)
		}
		if got, want := find(bson.M{"_id": key{35, 2}}), []key{{35, 2}}; !reflect.DeepEqual(got, want) {
			t.Errorf("equality: %v, want %v", got, want)
		}
		if got, want := find(bson.M{"_id": bson.M{"$in": bson.A{key{36, 1}, key{35, 2}, key{1, 1}}}}), []key{{35, 2}, {36, 1}}; !reflect.DeepEqual(got, want) {
			t.Errorf("$in: %v, want %v", got, want)
		}
		if got, want := find(bson.M{"_id": bson.M{"$gt": key{35, 2}}}), []key{{35, 10}, {36, 1}}; !reflect.DeepEqual(got, want) {
			t.Errorf("$gt: %v, want %v", got, want)
		}
	})

	t.Run("k_HexRangeAndMaxUpsert", func(t *testing.T) {
		// Index tables: string _id ranges compare bytewise, and an upsert
		// with $max and $set works whether or not the entry exists.
		ctx, coll := setup(t)
		ix := coll.Database().Collection("ix")
		for _, id := range []string{"0261", "026100", "026100ff01", "0262", "ff"} {
			if _, err := ix.InsertOne(ctx, bson.M{"_id": id, "s": int64(5)}); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := ix.Find(ctx, bson.M{"_id": bson.M{"$gte": "0261", "$lt": "0261ff"}}, options.Find().SetSort(bson.M{"_id": 1}))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		var ids []any
		for _, d := range docs {
			ids = append(ids, d["_id"])
		}
		if want := []any{"0261", "026100", "026100ff01"}; !reflect.DeepEqual(ids, want) {
			t.Errorf("range: %v, want %v", ids, want)
		}
		for _, c := range []struct {
			id      string
			s, want int64
		}{{"0261", 3, 5}, {"0261", 9, 9}, {"0300", 4, 4}} {
			_, err := ix.UpdateOne(ctx, bson.M{"_id": c.id}, bson.M{"$max": bson.M{"s": c.s}, "$set": bson.M{"id": "x"}}, options.UpdateOne().SetUpsert(true))
			if err != nil {
				t.Fatal(err)
			}
			if got := getRaw(ctx, t, ix, c.id).Lookup("s").AsInt64(); got != c.want {
				t.Errorf("$max %d on %s: s = %d, want %d", c.s, c.id, got, c.want)
			}
		}
	})

	t.Run("j_Transactions", func(t *testing.T) {
		ctx, coll := setup(t)
		sess, err := coll.Database().Client().StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			return coll.InsertOne(ctx, newGame("g5", 1))
		})
		if err != nil {
			if !mongotest.Real() {
				t.Skipf("FerretDB does not support transactions: %v", err)
			}
			// A standalone mongod does not support them either.
			t.Skipf("transactions unavailable: %v", err)
		}
		getGame(ctx, t, coll, "g5")
	})
}
