package example

// MongoDB-specific tests of the lookup protocol (runtime/mongostore): the
// documents it stores, reads that meet stale entries, Repair of
// deliberately broken index tables, the crash windows of a write without
// transactions, and failed unique writes that must change nothing.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

var bg = context.Background()

func must(t *testing.T, err error) {
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

// hotelFixture is a database with the hotels of the suite's example.
type hotelFixture struct {
	db     *mongo.Database
	hotels *hotel.HotelMongoRepository
}

func newHotelFixture(t *testing.T, db *mongo.Database) *hotelFixture {
	t.Helper()
	f := &hotelFixture{db: db, hotels: hotel.NewHotelMongoRepository(db, mongostore.IndexTables())}
	must(t, f.hotels.EnsureIndexes(bg))
	for _, h := range []*hotel.Hotel{
		{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 4, Tags: []string{"spa", "wifi"}, Address: hotel.Address{Zip: "44139"}},
		{ID: "h2", Name: "Ibis", City: "Dortmund", Stars: 2, Tags: []string{"wifi"}, Address: hotel.Address{Zip: "44137"}},
		{ID: "h3", Name: "Adlon", City: "Berlin", Stars: 5, Tags: []string{"spa"}, Address: hotel.Address{Zip: "10117"}},
		{ID: "h4", Name: "Mercure", City: "Dortmund", Stars: 4, Address: hotel.Address{Zip: "44139"}},
		{ID: "h5", Name: "Parkhotel", City: "Dortmund", Stars: 3},
		{ID: "h6", Name: "Motel One", City: "Essen", Stars: 2, Tags: []string{"wifi"}},
	} {
		must(t, f.hotels.Create(bg, h))
	}
	return f
}

// table opens the index table of a Hotel lookup.
func (f *hotelFixture) table(lookup string) *mongo.Collection {
	return f.db.Collection(mongostore.TableName("Hotel", lookup))
}

// Index keys of the Hotel lookups.
func nameKey(name string) string { return mongostore.IndexKey(runtime.AppendString(nil, name)) }

func cityStarsKey(city string, stars int, id string) string {
	return mongostore.IndexKey(runtime.AppendString(runtime.AppendInt(runtime.AppendString(nil, city), int64(stars)), id))
}

func tagKey(tag, id string) string {
	return mongostore.IndexKey(runtime.AppendString(runtime.AppendString(nil, tag), id))
}

// insertEntry writes an index entry of block id directly, as a write age
// ago would have; the entry carries the block's incarnation if it exists.
func insertEntry(t *testing.T, coll *mongo.Collection, key string, id any, age time.Duration) {
	t.Helper()
	var inc int64
	raw, err := coll.Database().Collection(strings.Split(coll.Name(), "__")[0]).FindOne(bg, bson.D{{Key: "_id", Value: id}}).Raw()
	if err == nil {
		inc, _ = raw.Lookup("_inc").AsInt64OK()
	}
	_, err = coll.InsertOne(bg, bson.D{{Key: "_id", Value: key}, {Key: "id", Value: id}, {Key: "inc", Value: inc}, {Key: "s", Value: time.Now().Add(-age).UnixNano()}, {Key: "w", Value: int64(42)}})
	must(t, err)
}

func count(t *testing.T, coll *mongo.Collection, filter any) int64 {
	t.Helper()
	n, err := coll.CountDocuments(bg, filter)
	must(t, err)
	return n
}

func (f *hotelFixture) byCity(t *testing.T, city string, stars int) []string {
	t.Helper()
	q := hotel.HotelCityStarsQuery{City: runtime.Eq(city)}
	if stars != 0 {
		q.Stars = runtime.Eq(stars)
	}
	return hotelIDs(t, 2, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return f.hotels.ListByCityStars(bg, q, req)
	})
}

func (f *hotelFixture) byTag(t *testing.T, tag string) []string {
	t.Helper()
	return hotelIDs(t, 2, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return f.hotels.ListByTags(bg, tag, req)
	})
}

func (f *hotelFixture) nameOwner(t *testing.T, name string) string {
	t.Helper()
	h, err := f.hotels.GetByName(bg, name)
	if errors.Is(err, runtime.ErrNotFound) {
		return ""
	}
	must(t, err)
	return h.ID
}

// hotelIDs lists the ids of every page of a listing.
func hotelIDs(t *testing.T, limit int, list func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error)) []string {
	t.Helper()
	out := []string{}
	req := runtime.PageRequest{Limit: limit}
	for range 100 {
		page, err := list(req)
		must(t, err)
		if len(page.Items) > limit {
			t.Fatalf("page of %d items with limit %d", len(page.Items), limit)
		}
		for _, h := range page.Items {
			out = append(out, h.ID)
		}
		if page.Next == "" {
			return out
		}
		req.Cursor = page.Next
	}
	t.Fatal("listing does not end")
	return nil
}

func eqIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// dump renders every document of the given collections, in _id order,
// with the index entries' write sequences.
func dump(t *testing.T, colls ...*mongo.Collection) string {
	t.Helper()
	var b strings.Builder
	for _, c := range colls {
		cur, err := c.Find(bg, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		must(t, err)
		var docs []bson.Raw
		must(t, cur.All(bg, &docs))
		fmt.Fprintf(&b, "%s:\n", c.Name())
		for _, d := range docs {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	return b.String()
}

func (f *hotelFixture) all() []*mongo.Collection {
	return []*mongo.Collection{f.db.Collection("Hotel"), f.table("name"), f.table("cityStars"), f.table("tags"), f.table("addressZip")}
}

// TestMongoLookupDocuments checks what the protocol stores: one collection
// per index table, entries keyed by the hex of the encoded key (value and
// block key, or the value alone when unique), the hidden _seq of the
// aggregate, and the id index EnsureIndexes creates.
func TestMongoLookupDocuments(t *testing.T) {
	f := newHotelFixture(t, mongotest.Start(t))
	var e struct {
		ID string `bson:"id"`
		S  int64  `bson:"s"`
	}
	must(t, f.table("name").FindOne(bg, bson.D{{Key: "_id", Value: nameKey("Wittekind")}}).Decode(&e))
	if e.ID != "h1" || e.S == 0 {
		t.Fatalf("unique entry of Wittekind: %+v", e)
	}
	must(t, f.table("cityStars").FindOne(bg, bson.D{{Key: "_id", Value: cityStarsKey("Dortmund", 4, "h1")}}).Decode(&e))
	if e.ID != "h1" {
		t.Fatalf("entry Dortmund:4:h1: %+v", e)
	}
	if n := count(t, f.table("tags"), bson.D{}); n != 5 {
		t.Fatalf("tags table has %d entries, want 5 (one per hotel and tag)", n)
	}
	if n := count(t, f.table("addressZip"), bson.D{}); n != 6 {
		t.Fatalf("addressZip table has %d entries, want 6 (the empty zip is a value too)", n)
	}
	raw, err := f.db.Collection("Hotel").FindOne(bg, bson.D{{Key: "_id", Value: "h1"}}).Raw()
	must(t, err)
	seq, ok := raw.Lookup("_seq").AsInt64OK()
	if !ok || seq < e.S {
		t.Fatalf("hotel h1 has _seq %v, want at least its entries' s %d", raw.Lookup("_seq"), e.S)
	}
	specs, err := f.table("cityStars").Indexes().ListSpecifications(bg)
	must(t, err)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "id_1") {
		t.Fatalf("indexes of Hotel__cityStars: %v, want id_1", names)
	}
	// A setter of an indexed field changes the write sequence; one of an
	// unindexed field does not go through the protocol.
	must(t, f.hotels.SetCity(bg, "h1", "Essen"))
	raw, err = f.db.Collection("Hotel").FindOne(bg, bson.D{{Key: "_id", Value: "h1"}}).Raw()
	must(t, err)
	if s2, _ := raw.Lookup("_seq").AsInt64OK(); s2 <= seq {
		t.Fatalf("_seq after SetCity: %d, want more than %d", s2, seq)
	}
	if n := count(t, f.table("cityStars"), bson.D{{Key: "id", Value: "h1"}}); n != 1 {
		t.Fatalf("h1 has %d cityStars entries after SetCity, want 1", n)
	}
}

// TestMongoListByDropsStaleEntries: a page that meets stale entries skips
// them, keeps reading so that the page is still full, and removes those
// older than StaleAfter; younger ones (perhaps a write in flight) are only
// skipped.
func TestMongoListByDropsStaleEntries(t *testing.T) {
	db := mongotest.Start(t)
	hotels := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, hotels.EnsureIndexes(bg))
	for i := range 6 {
		must(t, hotels.Create(bg, &hotel.Hotel{ID: fmt.Sprintf("d%02d", i), Name: fmt.Sprint("D", i), City: "Dortmund", Stars: 3}))
	}
	must(t, hotels.Create(bg, &hotel.Hotel{ID: "b1", Name: "B", City: "Berlin", Stars: 3}))
	table := db.Collection(mongostore.TableName("Hotel", "cityStars"))
	// Old stale entries: a missing block, and a block without the value.
	insertEntry(t, table, cityStarsKey("Dortmund", 3, "d00a"), "d00a", time.Hour)
	insertEntry(t, table, cityStarsKey("Dortmund", 3, "d01a"), "b1", time.Hour)
	// A young one, as a write in flight would leave.
	insertEntry(t, table, cityStarsKey("Dortmund", 3, "d02a"), "d02a", 0)
	q := hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(3)}
	page, err := hotels.ListByCityStars(bg, q, runtime.PageRequest{Limit: 3})
	must(t, err)
	var got []string
	for _, h := range page.Items {
		got = append(got, h.ID)
	}
	eqIDs(t, "first page", got, "d00", "d01", "d02")
	if page.Next == "" {
		t.Fatal("first page has no Next")
	}
	page, err = hotels.ListByCityStars(bg, q, runtime.PageRequest{Limit: 3, Cursor: page.Next})
	must(t, err)
	got = nil
	for _, h := range page.Items {
		got = append(got, h.ID)
	}
	eqIDs(t, "second page", got, "d03", "d04", "d05")
	if page.Next != "" {
		t.Fatal("last page has a Next")
	}
	for key, want := range map[string]int64{
		cityStarsKey("Dortmund", 3, "d00a"): 0,
		cityStarsKey("Dortmund", 3, "d01a"): 0,
		cityStarsKey("Dortmund", 3, "d02a"): 1,
	} {
		if n := count(t, table, bson.D{{Key: "_id", Value: key}}); n != want {
			t.Errorf("stale entry %s: %d left after the read, want %d", key, n, want)
		}
	}
	// GetBy drops an old stale unique entry too.
	names := db.Collection(mongostore.TableName("Hotel", "name"))
	insertEntry(t, names, nameKey("Ghost"), "gone", time.Hour)
	_, err = hotels.GetByName(bg, "Ghost")
	wantErr(t, err, runtime.ErrNotFound, "GetByName of a stale entry")
	if n := count(t, names, bson.D{{Key: "_id", Value: nameKey("Ghost")}}); n != 0 {
		t.Fatal("GetByName left the old stale entry")
	}
}

// TestMongoRepairBrokenLookups breaks the index tables behind the
// repository's back: reads are right before Repair wherever an entry
// exists (they verify it), Repair reports exactly what it fixed, and a
// second Repair finds nothing.
func TestMongoRepairBrokenLookups(t *testing.T) {
	f := newHotelFixture(t, mongotest.Start(t))
	// 1. A lost entry: h1 in Dortmund:4.
	res, err := f.table("cityStars").DeleteOne(bg, bson.D{{Key: "_id", Value: cityStarsKey("Dortmund", 4, "h1")}})
	must(t, err)
	if res.DeletedCount != 1 {
		t.Fatal("no entry Dortmund:4:h1 to delete")
	}
	// 2. A stale entry: h2 is not tagged pool.
	insertEntry(t, f.table("tags"), tagKey("pool", "h2"), "h2", 0)
	// 3. An entry of a block that does not exist.
	insertEntry(t, f.table("cityStars"), cityStarsKey("Dortmund", 4, "ghost"), "ghost", 0)
	// 4. A unique entry whose block no longer has the value: h5 renamed
	// behind the repository's back (so its new name has no entry either).
	_, err = f.db.Collection("Hotel").UpdateOne(bg, bson.D{{Key: "_id", Value: "h5"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "Parkhotel Neu"}}}})
	must(t, err)

	// Reads verify entries: the stale ones are not listed.
	eqIDs(t, "tag pool before Repair", f.byTag(t, "pool"))
	eqIDs(t, "Dortmund:4 before Repair (h1's entry is lost)", f.byCity(t, "Dortmund", 4), "h4")
	if o := f.nameOwner(t, "Parkhotel"); o != "" {
		t.Fatalf("GetByName(Parkhotel) before Repair: %s", o)
	}
	// The stale entries are young: the reads skipped them but left them for Repair.

	rep, err := f.hotels.Repair(bg)
	must(t, err)
	if rep.Aggregates != 6 || rep.Added != 2 || rep.Removed != 3 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair: %v; want 6 aggregates, 2 added (Dortmund:4:h1, Parkhotel Neu), 3 removed (pool:h2, Dortmund:4:ghost, Parkhotel)", rep)
	}
	eqIDs(t, "Dortmund:4 after Repair", f.byCity(t, "Dortmund", 4), "h1", "h4")
	eqIDs(t, "tag pool after Repair", f.byTag(t, "pool"))
	if o := f.nameOwner(t, "Parkhotel Neu"); o != "h5" {
		t.Fatalf("GetByName(Parkhotel Neu) after Repair: %q", o)
	}
	if n := count(t, f.table("name"), bson.D{{Key: "_id", Value: nameKey("Parkhotel")}}); n != 0 {
		t.Fatal("Repair left the stale unique entry")
	}
	// The freed name can be taken at once.
	must(t, f.hotels.Create(bg, &hotel.Hotel{ID: "h7", Name: "Parkhotel", City: "Hamm"}))
	rep, err = f.hotels.Repair(bg)
	must(t, err)
	if rep.Aggregates != 7 || rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("second Repair: %v, want nothing to fix", rep)
	}
}

// TestMongoRepairUniqueConflict: two aggregates hold one unique value (a
// write outside the repository): the first in block-key order keeps it.
func TestMongoRepairUniqueConflict(t *testing.T) {
	f := newHotelFixture(t, mongotest.Start(t))
	_, err := f.db.Collection("Hotel").InsertOne(bg, bson.D{{Key: "_id", Value: "h0"}, {Key: "name", Value: "Ibis"}, {Key: "city", Value: "Bonn"}, {Key: "stars", Value: 1}})
	must(t, err)
	rep, err := f.hotels.Repair(bg)
	must(t, err)
	// h0's entries are all missing (name, Bonn:1, empty zip); the name
	// entry is moved from h2 to h0.
	if rep.Aggregates != 7 || rep.Added != 3 || rep.Removed != 1 || len(rep.Conflicts) != 1 {
		t.Fatalf("Repair: %v (conflicts %q)", rep, rep.Conflicts)
	}
	if c := rep.Conflicts[0]; !strings.Contains(c, `"Ibis"`) || !strings.Contains(c, "h0") || !strings.Contains(c, "h2") {
		t.Fatalf("conflict %q does not name the value and both holders", c)
	}
	if o := f.nameOwner(t, "Ibis"); o != "h0" {
		t.Fatalf("GetByName(Ibis) after Repair: %q, want h0", o)
	}
	eqIDs(t, "Bonn", f.byCity(t, "Bonn", 0), "h0")
	rep, err = f.hotels.Repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 1 {
		t.Fatalf("second Repair: %v (the conflict remains, nothing else to fix)", rep)
	}
}

// TestMongoUniqueConflictChangesNothing: a write that fails because a
// unique value is taken leaves the aggregate and every index table exactly
// as they were.
func TestMongoUniqueConflictChangesNothing(t *testing.T) {
	f := newHotelFixture(t, mongotest.Start(t))
	before := dump(t, f.all()...)
	h, err := f.hotels.Get(bg, "h1")
	must(t, err)
	h.Name, h.City, h.Stars, h.Tags, h.Address.Zip = "Adlon", "Köln", 1, []string{"new", "spa"}, "50667"
	wantErr(t, f.hotels.Put(bg, h), runtime.ErrDuplicate, "Put with a taken name")
	if after := dump(t, f.all()...); after != before {
		t.Fatalf("failed Put changed the collections:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	wantErr(t, f.hotels.SetName(bg, "h1", "Ibis"), runtime.ErrDuplicate, "SetName to a taken name")
	if after := dump(t, f.all()...); after != before {
		t.Fatalf("failed SetName changed the collections:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	wantErr(t, f.hotels.Update(bg, "h1", hotel.HotelUpdate{Name: runtime.Ptr("Mercure"), City: runtime.Ptr("Köln"), Tags: &[]string{"x"}}), runtime.ErrDuplicate, "Update to a taken name")
	if after := dump(t, f.all()...); after != before {
		t.Fatalf("failed Update changed the collections:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	wantErr(t, f.hotels.Create(bg, &hotel.Hotel{ID: "h9", Name: "Ibis", City: "Köln", Tags: []string{"x"}}), runtime.ErrDuplicate, "Create with a taken name")
	if after := dump(t, f.all()...); after != before {
		t.Fatalf("failed Create changed the collections:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// A Create of an existing block fails after its entries are written:
	// they are removed again.
	err = f.hotels.Create(bg, &hotel.Hotel{ID: "h1", Name: "Fresh", City: "Köln", Tags: []string{"x"}, Address: hotel.Address{Zip: "50667"}})
	wantErr(t, err, runtime.ErrDuplicate, "Create of an existing block")
	if after := dump(t, f.all()...); after != before {
		t.Fatalf("failed Create of an existing block changed the collections:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if o := f.nameOwner(t, "Fresh"); o != "" {
		t.Fatalf("the name of a failed Create is taken by %s", o)
	}
}

// withStaleAfter sets mongostore.StaleAfter for the test.
func withStaleAfter(t *testing.T, d time.Duration) {
	old := mongostore.StaleAfter
	mongostore.StaleAfter = d
	t.Cleanup(func() { mongostore.StaleAfter = old })
}

// TestMongoCrashWindows simulates a write that stops between the steps of
// the protocol, by writing the index entries or the aggregate alone.
func TestMongoCrashWindows(t *testing.T) {
	const grace = 300 * time.Millisecond
	withStaleAfter(t, grace)

	t.Run("ClaimWithoutAggregate", func(t *testing.T) {
		// A write claimed "Taken" for h1, then crashed before writing h1.
		f := newHotelFixture(t, mongotest.Start(t))
		insertEntry(t, f.table("name"), nameKey("Taken"), "h1", 0)
		if o := f.nameOwner(t, "Taken"); o != "" {
			t.Fatalf("GetByName of a claim without aggregate: %s", o)
		}
		// Within the grace period the claim may belong to a write in
		// flight: it is not taken over.
		err := f.hotels.Create(bg, &hotel.Hotel{ID: "h8", Name: "Taken"})
		wantErr(t, err, runtime.ErrDuplicate, "Create with a young stale claim")
		if _, err := f.hotels.Get(bg, "h8"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("the failed Create stored h8: %v", err)
		}
		time.Sleep(grace + 100*time.Millisecond)
		must(t, f.hotels.Create(bg, &hotel.Hotel{ID: "h8", Name: "Taken"}))
		if o := f.nameOwner(t, "Taken"); o != "h8" {
			t.Fatalf("GetByName(Taken) after the takeover: %q", o)
		}
		rep, err := f.hotels.Repair(bg)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 {
			t.Fatalf("Repair after the takeover: %v", rep)
		}
	})

	t.Run("ClaimOfDeletedBlock", func(t *testing.T) {
		// Delete removed the block, then crashed before removing its entries.
		f := newHotelFixture(t, mongotest.Start(t))
		_, err := f.db.Collection("Hotel").DeleteOne(bg, bson.D{{Key: "_id", Value: "h3"}})
		must(t, err)
		if o := f.nameOwner(t, "Adlon"); o != "" {
			t.Fatalf("GetByName of a deleted block: %s", o)
		}
		eqIDs(t, "Berlin after the crashed Delete", f.byCity(t, "Berlin", 0))
		time.Sleep(grace + 100*time.Millisecond)
		must(t, f.hotels.Create(bg, &hotel.Hotel{ID: "h9", Name: "Adlon", City: "Berlin"}))
		if o := f.nameOwner(t, "Adlon"); o != "h9" {
			t.Fatalf("GetByName(Adlon) after the takeover: %q", o)
		}
		rep, err := f.hotels.Repair(bg)
		must(t, err)
		// Left: h3's entries of Berlin:5, spa and its zip; the name was taken over.
		if rep.Added != 0 || rep.Removed != 3 {
			t.Fatalf("Repair after the crashed Delete: %v, want 3 removed", rep)
		}
		eqIDs(t, "Berlin", f.byCity(t, "Berlin", 0), "h9")
	})

	t.Run("EntriesWithoutAggregate", func(t *testing.T) {
		// SetCity(h1, Köln) added its entry, then crashed.
		f := newHotelFixture(t, mongotest.Start(t))
		insertEntry(t, f.table("cityStars"), cityStarsKey("Köln", 4, "h1"), "h1", 0)
		eqIDs(t, "Köln", f.byCity(t, "Köln", 0))
		eqIDs(t, "Dortmund:4", f.byCity(t, "Dortmund", 4), "h1", "h4")
		// The next write of h1 goes through: the entry is ours.
		must(t, f.hotels.SetCity(bg, "h1", "Köln"))
		eqIDs(t, "Köln after SetCity", f.byCity(t, "Köln", 0), "h1")
		eqIDs(t, "Dortmund:4 after SetCity", f.byCity(t, "Dortmund", 4), "h4")
		rep, err := f.hotels.Repair(bg)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 {
			t.Fatalf("Repair: %v", rep)
		}
	})

	t.Run("AggregateWithoutCleanup", func(t *testing.T) {
		// SetCity(h1, Essen) and SetName(h2, Ibis Budget) wrote their
		// entries and the aggregate, then crashed before removing the old
		// entries.
		f := newHotelFixture(t, mongotest.Start(t))
		insertEntry(t, f.table("cityStars"), cityStarsKey("Essen", 4, "h1"), "h1", 0)
		insertEntry(t, f.table("name"), nameKey("Ibis Budget"), "h2", 0)
		coll := f.db.Collection("Hotel")
		_, err := coll.UpdateOne(bg, bson.D{{Key: "_id", Value: "h1"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "city", Value: "Essen"}}}})
		must(t, err)
		_, err = coll.UpdateOne(bg, bson.D{{Key: "_id", Value: "h2"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "Ibis Budget"}}}})
		must(t, err)
		eqIDs(t, "Dortmund:4", f.byCity(t, "Dortmund", 4), "h4")
		eqIDs(t, "Essen", f.byCity(t, "Essen", 0), "h6", "h1")
		if o := f.nameOwner(t, "Ibis"); o != "" {
			t.Fatalf("GetByName(Ibis): %s", o)
		}
		// Another hotel can take the old name once the stale claim is old.
		wantErr(t, f.hotels.SetName(bg, "h4", "Ibis"), runtime.ErrDuplicate, "SetName to a young stale name")
		time.Sleep(grace + 100*time.Millisecond)
		must(t, f.hotels.SetName(bg, "h4", "Ibis"))
		if o := f.nameOwner(t, "Ibis"); o != "h4" {
			t.Fatalf("GetByName(Ibis) after the takeover: %q", o)
		}
		rep, err := f.hotels.Repair(bg)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 1 {
			t.Fatalf("Repair: %v, want 1 removed (Dortmund:4:h1)", rep)
		}
	})
}

// TestMongoLookupRoundTrips counts the commands the lookup methods send: a
// page through a lookup is one range read of the index table and one batch
// read of the aggregates; GetMany and a page of a counter scope are one
// batch read (plus the counter); a setter of an unindexed field keeps its
// single update.
func TestMongoLookupRoundTrips(t *testing.T) {
	rec := &recorder{}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(rec.monitor()))
	f := newHotelFixture(t, db)
	comments := hotel.NewCommentMongoRepository(db, mongostore.IndexTables())
	must(t, comments.EnsureIndexes(bg))
	for range 5 {
		must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 35}, Author: "ann"}))
	}
	rec.take()

	check := func(what string, want ...string) {
		t.Helper()
		cmds := rec.take()
		if !slices.Equal(names(cmds), want) {
			t.Fatalf("%s sent %v, want %v", what, names(cmds), want)
		}
	}
	page, err := f.hotels.ListByCityStars(bg, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}, runtime.PageRequest{Limit: 3})
	must(t, err)
	if len(page.Items) != 3 || page.Next == "" {
		t.Fatalf("page: %d items, next %q", len(page.Items), page.Next)
	}
	check("a page of ListByCityStars", "find", "find")
	m, err := f.hotels.GetMany(bg, []string{"h1", "h2", "h3", "nope"})
	must(t, err)
	if len(m) != 3 {
		t.Fatalf("GetMany: %v", m)
	}
	check("GetMany", "find")
	cpage, err := comments.ListByPost(bg, 35, runtime.PageRequest{Limit: 4})
	must(t, err)
	if len(cpage.Items) != 4 || cpage.Next == "" {
		t.Fatalf("ListByPost: %d items, next %q", len(cpage.Items), cpage.Next)
	}
	// One find on the post's comments by _id.post and _id.seq, whatever the
	// gaps of deleted numbers (the counter is not read).
	check("a page of ListByPost", "find")
	_, err = f.hotels.GetByName(bg, "Adlon")
	must(t, err)
	check("GetByName", "find", "find")
	must(t, f.hotels.SetRooms(bg, "h1", []hotel.Room{{Number: 1}}))
	check("SetRooms (no lookup)", "update")
	must(t, f.hotels.SetCity(bg, "h1", "Essen"))
	// Read the block, add the new entry, write the block, remove the old entry.
	check("SetCity", "find", "findAndModify", "update", "delete")
}
