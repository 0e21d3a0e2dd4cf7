package example

// Lookups on MongoDB's native secondary indexes (the default mapping): the
// indexes EnsureIndexes creates, the commands the lookup methods send
// (shown with the driver's command monitor), taken unique values, and
// Repair's report.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// nativeHotels opens the Hotel repository with every lookup native. On
// FerretDB, which has no partial indexes, the unique index on name is made
// without the partial filter (mongostore.NoPartialIndexes); a real MongoDB
// gets the partial index that leaves empty names out.
func nativeHotels(t *testing.T, db *mongo.Database) *hotel.HotelMongoRepository {
	t.Helper()
	var opts []runtime.Option
	if !mongotest.Real() {
		opts = append(opts, mongostore.NoPartialIndexes())
	}
	hotels := hotel.NewHotelMongoRepository(db, opts...)
	must(t, hotels.EnsureIndexes(bg))
	for _, h := range []*hotel.Hotel{
		{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 4, Tags: []string{"spa", "wifi"}, Address: hotel.Address{Zip: "44139"}},
		{ID: "h2", Name: "Ibis", City: "Dortmund", Stars: 2, Tags: []string{"wifi"}, Address: hotel.Address{Zip: "44137"}},
		{ID: "h3", Name: "Adlon", City: "Berlin", Stars: 5, Tags: []string{"spa"}, Address: hotel.Address{Zip: "10117"}},
		{ID: "h4", Name: "Mercure", City: "Dortmund", Stars: 4, Address: hotel.Address{Zip: "44139"}},
		{ID: "h5", Name: "Parkhotel", City: "Dortmund", Stars: 3},
		{ID: "h6", Name: "Motel One", City: "Essen", Stars: 2, Tags: []string{"wifi"}},
	} {
		must(t, hotels.Create(bg, h))
	}
	return hotels
}

// TestMongoNativeIndexes lists the indexes EnsureIndexes creates for the
// Hotel lookups, and checks that no index table exists.
func TestMongoNativeIndexes(t *testing.T) {
	db := mongotest.Start(t)
	nativeHotels(t, db)
	cur, err := db.Collection("Hotel").Indexes().List(bg)
	must(t, err)
	var specs []bson.M
	must(t, cur.All(bg, &specs))
	got := map[string]string{}
	for _, s := range specs {
		key, _ := bson.MarshalExtJSON(s["key"], false, false)
		desc := string(key)
		if u, _ := s["unique"].(bool); u {
			desc += " unique"
		}
		got[fmt.Sprint(s["name"])] = desc
	}
	want := map[string]string{
		"_id_":            `{"_id":1}`,
		"noam_name":       `{"name":1} unique`,
		"noam_cityStars":  `{"city":1,"stars":1,"_id":1}`,
		"noam_tags":       `{"tags":1,"_id":1}`,
		"noam_addressZip": `{"address.zip":1,"_id":1}`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes of Hotel:\n got %v\nwant %v", got, want)
	}
	names, err := db.ListCollectionNames(bg, bson.D{})
	must(t, err)
	for _, n := range names {
		if strings.HasPrefix(n, "Hotel__") {
			t.Errorf("index table %s exists with native lookups", n)
		}
	}
}

// TestMongoNativeLookupRoundTrips shows with the command monitor that,
// with native indexes, GetByName is one findOne, a page of
// ListByCityStars one find with the filter and sort the index serves, and
// SetCity one update: no index table is read or written.
func TestMongoNativeLookupRoundTrips(t *testing.T) {
	rec := &recorder{}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(rec.monitor()))
	hotels := nativeHotels(t, db)
	rec.take()
	check := func(what string, want ...string) []*eventCmd {
		t.Helper()
		cmds := rec.take()
		if !slices.Equal(names(cmds), want) {
			t.Fatalf("%s sent %v, want %v", what, names(cmds), want)
		}
		var out []*eventCmd
		for _, c := range cmds {
			out = append(out, &eventCmd{c.CommandName, c.Command})
		}
		return out
	}

	h, err := hotels.GetByName(bg, "Adlon")
	must(t, err)
	if h.ID != "h3" {
		t.Fatalf("GetByName(Adlon) = %s, want h3", h.ID)
	}
	check("GetByName", "find")

	page, err := hotels.ListByCityStars(bg, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Gte(3)}, runtime.PageRequest{Limit: 2})
	must(t, err)
	if ids := hotelIDsOf(page.Items); fmt.Sprint(ids) != "[h5 h1]" || page.Next == "" {
		t.Fatalf("first page: %v, next %q", ids, page.Next)
	}
	cmd := check("a page of ListByCityStars", "find")[0]
	if f, s := cmd.field("filter"), cmd.field("sort"); f != `{"city": "Dortmund","stars": {"$gte": {"$numberLong":"3"}}}` || s != `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}` {
		t.Errorf("ListByCityStars sent filter %s sort %s", f, s)
	}
	page, err = hotels.ListByCityStars(bg, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Gte(3)}, runtime.PageRequest{Limit: 2, Cursor: page.Next})
	must(t, err)
	if ids := hotelIDsOf(page.Items); fmt.Sprint(ids) != "[h4]" || page.Next != "" {
		t.Fatalf("second page: %v, next %q", ids, page.Next)
	}
	cmd = check("the second page of ListByCityStars", "find")[0]
	t.Logf("second page: find %s sort %s", cmd.field("filter"), cmd.field("sort"))

	must(t, hotels.SetCity(bg, "h1", "Essen"))
	check("SetCity", "update")
	must(t, hotels.SetTags(bg, "h2", []string{"pool"}))
	check("SetTags", "update")
	tags, err := hotels.ListByTags(bg, "pool", runtime.PageRequest{Limit: 5})
	must(t, err)
	if ids := hotelIDsOf(tags.Items); fmt.Sprint(ids) != "[h2]" {
		t.Fatalf("ListByTags(pool) = %v", ids)
	}
	check("ListByTags", "find")
	rep, err := hotels.Repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Native) != 4 || !strings.Contains(rep.String(), "nothing to repair") {
		t.Fatalf("Repair: %v (%+v)", rep, rep)
	}
	check("Repair")
}

// TestMongoNativeUniqueTaken: a write that gives a taken name to a second
// hotel fails with runtime.ErrDuplicate naming the value, and changes
// nothing; a taken block key stays a duplicate block key.
func TestMongoNativeUniqueTaken(t *testing.T) {
	db := mongotest.Start(t)
	hotels := nativeHotels(t, db)
	before := docsOf(t, db.Collection("Hotel"))
	for what, err := range map[string]error{
		"Create":  hotels.Create(bg, &hotel.Hotel{ID: "h9", Name: "Adlon", City: "Bonn"}),
		"Put":     hotels.Put(bg, &hotel.Hotel{ID: "h1", Name: "Adlon", City: "Bonn"}),
		"SetName": hotels.SetName(bg, "h2", "Adlon"),
		"Update":  hotels.Update(bg, "h2", hotel.HotelUpdate{Name: ptr("Adlon"), City: ptr("Bonn")}),
	} {
		if !errors.Is(err, runtime.ErrDuplicate) || !strings.Contains(err.Error(), `Hotel.name "Adlon" is taken`) {
			t.Errorf("%s of a taken name: %v, want ErrDuplicate naming the value", what, err)
		}
	}
	err := hotels.Create(bg, &hotel.Hotel{ID: "h1", Name: "Fresh"})
	if !errors.Is(err, runtime.ErrDuplicate) || strings.Contains(err.Error(), "is taken") {
		t.Errorf("Create of a taken block key: %v", err)
	}
	if after := docsOf(t, db.Collection("Hotel")); !reflect.DeepEqual(after, before) {
		t.Fatalf("failed writes changed the collection:\n%v\n%v", before, after)
	}
}

type eventCmd struct {
	name string
	cmd  bson.Raw
}

// field renders a field of the command as relaxed extended JSON.
func (c *eventCmd) field(key string) string {
	v, err := c.cmd.LookupErr(key)
	if err != nil {
		return ""
	}
	return v.String()
}

func hotelIDsOf(hs []*hotel.Hotel) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

func ptr[V any](v V) *V { return &v }

// docsOf reads every document of coll, in _id order.
func docsOf(t *testing.T, coll *mongo.Collection) []bson.M {
	t.Helper()
	cur, err := coll.Find(bg, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	must(t, err)
	var docs []bson.M
	must(t, cur.All(bg, &docs))
	return docs
}

// TestMongoNativeEnsureWithoutPartialIndexes: with the default options the
// first EnsureIndexes decides the lookup mapping by what the server has: a
// real MongoDB keeps every lookup on a native index; a server without
// partial indexes (FerretDB v1) keeps the unique ones in index tables. The
// mapping is recorded in the collection's schema record document, and
// the unique lookup is enforced either way.
func TestMongoNativeEnsureWithoutPartialIndexes(t *testing.T) {
	db := mongotest.Start(t)
	hotels := hotel.NewHotelMongoRepository(db)
	must(t, hotels.EnsureIndexes(bg))
	var doc bson.M
	must(t, db.Collection(mongostore.SchemaCollection).FindOne(bg, bson.D{{Key: "_id", Value: "Hotel"}}).Decode(&doc))
	want := mongostore.MappingUniqueTables
	if mongotest.Real() {
		want = mongostore.MappingNative
	}
	if doc["lookups"] != want {
		t.Fatalf("recorded lookup mapping %v, want %q", doc["lookups"], want)
	}
	must(t, hotels.Create(bg, &hotel.Hotel{ID: "h1", Name: "Wittekind", City: "Dortmund"}))
	if err := hotels.Create(bg, &hotel.Hotel{ID: "h2", Name: "Wittekind", City: "Essen"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create of a second hotel named Wittekind: %v, want ErrDuplicate", err)
	}
	if h, err := hotels.GetByName(bg, "Wittekind"); err != nil || h.ID != "h1" {
		t.Fatalf("GetByName(Wittekind) = %v, %v; want h1", h, err)
	}
}

// TestMongoNativeToTables: hotels written with native lookups, then opened
// with every lookup in an index table: EnsureIndexes fills the tables from
// the aggregates (a Repair then finds nothing to add), and reads and
// writes through the tables work on the documents the native mapping wrote
// (README, changing a lookup's mapping).
func TestMongoNativeToTables(t *testing.T) {
	db := mongotest.Start(t)
	nativeHotels(t, db)
	// A move to another mapping forgets the recorded one first (every
	// repository follows the record, and refuses options naming another).
	_, err := db.Collection(mongostore.SchemaCollection).UpdateOne(bg, bson.D{{Key: "_id", Value: "Hotel"}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "lookups", Value: ""}}}})
	must(t, err)
	hotels := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, hotels.EnsureIndexes(bg))
	if n, _ := db.Collection("Hotel__name").CountDocuments(bg, bson.D{}); n != 6 {
		t.Fatalf("Hotel__name holds %d entries after EnsureIndexes, want 6", n)
	}
	rep, err := hotels.Repair(bg)
	must(t, err)
	if rep.Aggregates != 6 || rep.Added != 0 || rep.Removed != 0 || len(rep.Native) != 0 {
		t.Fatalf("Repair: %+v", rep)
	}
	h, err := hotels.GetByName(bg, "Adlon")
	must(t, err)
	if h.ID != "h3" {
		t.Fatalf("GetByName(Adlon) = %s", h.ID)
	}
	must(t, hotels.SetCity(bg, "h1", "Essen"))
	page, err := hotels.ListByCityStars(bg, hotel.HotelCityStarsQuery{City: runtime.Eq("Essen")}, runtime.PageRequest{Limit: 10})
	must(t, err)
	if ids := hotelIDsOf(page.Items); fmt.Sprint(ids) != "[h6 h1]" {
		t.Fatalf("ListByCityStars(Essen) = %v, want [h6 h1]", ids)
	}
	must(t, hotels.Delete(bg, "h3"))
	if _, err := hotels.GetByName(bg, "Adlon"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByName after Delete: %v", err)
	}
	if n, _ := db.Collection("Hotel__name").CountDocuments(bg, bson.D{}); n != 5 {
		t.Fatalf("Hotel__name holds %d entries after the Delete, want 5", n)
	}
}

// TestMongoNativeNotReady: before EnsureIndexes has made the native unique
// index of Hotel.name, a write fails with runtime.ErrNotReady naming
// EnsureIndexes (MongoDB would otherwise take two hotels with one name
// without a word) and writes nothing; after it, writes work and the value
// is enforced. (The repository's gate answers first, there being no
// recorded layout; the store's own check of the index is tested by
// integration/conformance's TestEvolutionMongoIndexReplaced.)
func TestMongoNativeNotReady(t *testing.T) {
	db := mongotest.Start(t)
	var opts []runtime.Option
	if !mongotest.Real() {
		opts = append(opts, mongostore.NoPartialIndexes())
	}
	hotels := hotel.NewHotelMongoRepository(db, opts...)
	h := &hotel.Hotel{ID: "h1", Name: "Wittekind", City: "Dortmund"}
	err := hotels.Create(bg, h)
	if !errors.Is(err, runtime.ErrNotReady) || !strings.Contains(err.Error(), "EnsureIndexes") {
		t.Fatalf("Create before EnsureIndexes: %v, want ErrNotReady naming EnsureIndexes", err)
	}
	if _, err := hotels.Get(bg, "h1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get after the refused Create: %v, want ErrNotFound", err)
	}
	must(t, hotels.EnsureIndexes(bg))
	must(t, hotels.Create(bg, h))
	err = hotels.Create(bg, &hotel.Hotel{ID: "h2", Name: "Wittekind"})
	if !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create of a taken name after EnsureIndexes: %v, want ErrDuplicate", err)
	}
	// A second repository (another process) checks once, and finds the
	// index there.
	other := hotel.NewHotelMongoRepository(db, opts...)
	must(t, other.Create(bg, &hotel.Hotel{ID: "h3", Name: "Adlon"}))
}
