package hotel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/example/hotel/hoteltest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
)

var ctx = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

// seed stores hotels h1..h4 and returns their repository.
func seed(t *testing.T, db *bbolt.DB) *hotel.HotelBoltRepository {
	t.Helper()
	hotels := hotel.NewHotelBoltRepository(db)
	must(t, hotels.EnsureIndexes(ctx))
	for _, h := range []*hotel.Hotel{
		{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 4, Tags: []string{"spa", "wifi"}, Address: hotel.Address{Zip: "44139"}},
		{ID: "h2", Name: "Ibis", City: "Dortmund", Stars: 2, Tags: []string{"wifi"}, Address: hotel.Address{Zip: "44137"}},
		{ID: "h3", Name: "Adlon", City: "Berlin", Stars: 5, Tags: []string{"spa"}, Address: hotel.Address{Zip: "10117"}},
		{ID: "h4", Name: "Mercure", City: "Dortmund", Stars: 4, Address: hotel.Address{Zip: "44139"}},
	} {
		must(t, hotels.Create(ctx, h))
	}
	return hotels
}

// dump returns every key and value of every bucket.
func dump(t *testing.T, db *bbolt.DB) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			m := map[string]string{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
		})
	})
	must(t, err)
	return out
}

// change runs fn in a write transaction on the named bucket, bypassing
// the repositories.
func change(t *testing.T, db *bbolt.DB, bucket string, fn func(b *bbolt.Bucket) error) {
	t.Helper()
	must(t, db.Update(func(tx *bbolt.Tx) error { return fn(tx.Bucket([]byte(bucket))) }))
}

func str(s string) []byte { return runtime.AppendString(nil, s) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func hotelIDs(page runtime.Page[*hotel.Hotel], err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	out := []string{}
	for _, h := range page.Items {
		out = append(out, h.ID)
	}
	return out
}

func eq(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// TestBoltRepair breaks the index tables behind the repository's back and
// checks that reads skip what is stale and that Repair fixes exactly that.
func TestBoltRepair(t *testing.T) {
	db := boltharness.Open(t)
	hotels := seed(t, db)
	all := runtime.PageRequest{}
	dortmund4 := hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}

	// A missing entry: h1 vanishes from Dortmund:4.
	change(t, db, "Hotel.cityStars", func(b *bbolt.Bucket) error {
		return b.Delete(cat(str("Dortmund"), runtime.AppendInt(nil, 4), str("h1")))
	})
	// A stale entry pointing at a block that lacks the value, and one
	// pointing at a block that does not exist.
	change(t, db, "Hotel.tags", func(b *bbolt.Bucket) error { return b.Put(cat(str("pool"), str("h2")), []byte{}) })
	change(t, db, "Hotel.addressZip", func(b *bbolt.Bucket) error { return b.Put(cat(str("99999"), str("ghost")), []byte{}) })
	// A unique entry naming the wrong holder.
	change(t, db, "Hotel.name", func(b *bbolt.Bucket) error { return b.Put(str("Adlon"), str("h1")) })
	// A unique value given to a second block: h2 takes h1's name, and the
	// index still says h2 is Ibis.
	name, err := boltstore.Encode("Wittekind")
	must(t, err)
	change(t, db, "Hotel", func(b *bbolt.Bucket) error {
		return b.Put(runtime.AppendString(boltstore.BlockPrefix(str("h2")), "name"), name)
	})

	// Reads check every entry against its block: stale ones are skipped.
	eq(t, "Dortmund:4 with an entry missing", hotelIDs(hotels.ListByCityStars(ctx, dortmund4, all)), "h4")
	eq(t, "tag pool (stale)", hotelIDs(hotels.ListByTags(ctx, "pool", all)))
	eq(t, "zip 99999 (no block)", hotelIDs(hotels.ListByAddressZip(ctx, "99999", all)))
	_, err = hotels.GetByName(ctx, "Adlon")
	wantErr(t, err, runtime.ErrNotFound, "GetByName through an entry naming the wrong holder")
	eq(t, "name Ibis (stale)", hotelIDs(hotels.ListByName(ctx, "Ibis", all)))

	rep, err := hotels.Repair(ctx)
	must(t, err)
	// Removed: tags pool/h2, addressZip 99999/ghost, name Adlon->h1 and
	// Ibis->h2. Added: cityStars Dortmund/4/h1 and name Adlon->h3.
	if rep.Aggregates != 4 || rep.Added != 2 || rep.Removed != 4 || len(rep.Conflicts) != 1 {
		t.Fatalf("Repair: %v %q", rep, rep.Conflicts)
	}
	if c := rep.Conflicts[0]; !strings.Contains(c, `Hotel.name "Wittekind"`) || !strings.Contains(c, `kept for "h1"`) || !strings.Contains(c, `"h2"`) {
		t.Fatalf("conflict %q", c)
	}

	eq(t, "Dortmund:4 after Repair", hotelIDs(hotels.ListByCityStars(ctx, dortmund4, all)), "h1", "h4")
	eq(t, "tag pool after Repair", hotelIDs(hotels.ListByTags(ctx, "pool", all)))
	eq(t, "name Ibis after Repair", hotelIDs(hotels.ListByName(ctx, "Ibis", all)))
	eq(t, "name Wittekind after Repair", hotelIDs(hotels.ListByName(ctx, "Wittekind", all)), "h1")
	for name, want := range map[string]string{"Adlon": "h3", "Wittekind": "h1", "Mercure": "h4"} {
		h, err := hotels.GetByName(ctx, name)
		must(t, err)
		if h.ID != want {
			t.Fatalf("GetByName(%s) after Repair: %s, want %s", name, h.ID, want)
		}
	}
	after := dump(t, db)
	keys := func(bucket string) int { return len(after[bucket]) }
	if keys("Hotel.name") != 3 || keys("Hotel.cityStars") != 4 || keys("Hotel.tags") != 4 || keys("Hotel.addressZip") != 4 {
		t.Fatalf("index sizes after Repair: name %d, cityStars %d, tags %d, addressZip %d",
			keys("Hotel.name"), keys("Hotel.cityStars"), keys("Hotel.tags"), keys("Hotel.addressZip"))
	}

	// Nothing left to fix; the conflict stays until a write resolves it.
	rep, err = hotels.Repair(ctx)
	must(t, err)
	if rep.Aggregates != 4 || rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 1 {
		t.Fatalf("second Repair: %v", rep)
	}
	if !maps.EqualFunc(after, dump(t, db), maps.Equal) {
		t.Fatal("a Repair with nothing to fix changed the database")
	}
	must(t, hotels.SetName(ctx, "h2", "Ibis"))
	rep, err = hotels.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair after resolving the conflict: %v", rep)
	}
}

// TestBoltFailedUniqueWritesChangeNothing checks that writes failing on a
// unique value leave every bucket byte for byte as it was.
func TestBoltFailedUniqueWritesChangeNothing(t *testing.T) {
	db := boltharness.Open(t)
	hotels := seed(t, db)
	posts := hotel.NewPostBoltRepository(db)
	must(t, posts.Create(ctx, &hotel.Post{Title: "first", Author: "ann"}))
	before := dump(t, db)
	stats := boltstore.Written()

	h, err := hotels.Get(ctx, "h1")
	must(t, err)
	h.Name, h.City, h.Stars, h.Tags, h.Address.Zip = "Adlon", "Köln", 1, []string{"new"}, "50667"
	wantErr(t, hotels.Put(ctx, h), runtime.ErrDuplicate, "Put with a taken name")
	wantErr(t, hotels.Put(ctx, &hotel.Hotel{ID: "h9", Name: "Ibis", City: "Köln"}), runtime.ErrDuplicate, "Put of a new hotel with a taken name")
	wantErr(t, hotels.Create(ctx, &hotel.Hotel{ID: "h9", Name: "Ibis", City: "Köln"}), runtime.ErrDuplicate, "Create with a taken name")
	wantErr(t, hotels.SetName(ctx, "h1", "Mercure"), runtime.ErrDuplicate, "SetName to a taken name")
	wantErr(t, hotels.Update(ctx, "h1", hotel.HotelUpdate{City: runtime.Ptr("Köln"), Tags: &[]string{"x"}, Name: runtime.Ptr("Mercure")}), runtime.ErrDuplicate, "Update to a taken name")

	var re *runtime.Error
	err = hotels.SetName(ctx, "h1", "Mercure")
	if !errors.As(err, &re) || re.Op != "SetName" || re.ID != "h1" || re.Detail != `(lookup Hotel.name "Mercure" is taken)` {
		t.Fatalf("error of a taken name: %v", err)
	}
	if !maps.EqualFunc(before, dump(t, db), maps.Equal) {
		t.Fatal("failed writes changed the database")
	}
	if w := boltstore.Written().Sub(stats); w != (boltstore.WriteStats{}) {
		t.Fatalf("failed writes counted %+v", w)
	}
}

// TestBoltIndexLayout checks the keys and values of the index tables and
// counters: a composite lookup's keys are (city, stars, block key) tuples
// in that order, a unique lookup's key is the value and its value the
// block key, and counters are keyed by collection and scope.
func TestBoltIndexLayout(t *testing.T) {
	db := boltharness.Open(t)
	seed(t, db)
	comments := hotel.NewCommentBoltRepository(db)
	for _, post := range []int64{35, 35, 36} {
		must(t, comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: post}, Author: "bob"}))
	}
	tables := dump(t, db)

	var got []string
	for _, k := range sortedKeys(tables["Hotel.cityStars"]) {
		r := runtime.NewKeyReader([]byte(k))
		city, err1 := r.String()
		stars, err2 := r.Int()
		id, err3 := r.String()
		if err := errors.Join(err1, err2, err3); err != nil || !r.Done() {
			t.Fatalf("cityStars key %x: %v, rest %x", k, err, r.Rest())
		}
		if v := tables["Hotel.cityStars"][k]; v != "" {
			t.Fatalf("cityStars value %x, want empty", v)
		}
		got = append(got, fmt.Sprintf("%s/%d/%s", city, stars, id))
	}
	eq(t, "Hotel.cityStars keys", got, "Berlin/5/h3", "Dortmund/2/h2", "Dortmund/4/h1", "Dortmund/4/h4")

	got = nil
	for _, k := range sortedKeys(tables["Hotel.name"]) {
		r := runtime.NewKeyReader([]byte(k))
		name, err := r.String()
		must(t, err)
		v := runtime.NewKeyReader([]byte(tables["Hotel.name"][k]))
		id, err := v.String()
		must(t, err)
		if !r.Done() || !v.Done() {
			t.Fatalf("name entry %x: %x", k, tables["Hotel.name"][k])
		}
		got = append(got, name+"="+id)
	}
	eq(t, "Hotel.name entries", got, "Adlon=h3", "Ibis=h2", "Mercure=h4", "Wittekind=h1")

	got = nil
	for _, k := range sortedKeys(tables["Hotel.tags"]) {
		r := runtime.NewKeyReader([]byte(k))
		tag, _ := r.String()
		id, _ := r.String()
		got = append(got, tag+"/"+id)
	}
	eq(t, "Hotel.tags keys", got, "spa/h1", "spa/h3", "wifi/h1", "wifi/h2")

	got = nil
	for _, k := range sortedKeys(tables[boltstore.CountersBucket]) {
		r := runtime.NewKeyReader([]byte(k))
		coll, err := r.String()
		must(t, err)
		post, err := r.Int()
		must(t, err)
		var n int64
		must(t, boltstore.Decode([]byte(tables[boltstore.CountersBucket][k]), &n))
		got = append(got, fmt.Sprintf("%s/%d=%d", coll, post, n))
	}
	eq(t, "counters", got, "Comment/35=2", "Comment/36=1")
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// TestBoltUniqueRace: 8 goroutines race to take one unique name, half by
// SetName and half by Create. Exactly one wins, the others get
// runtime.ErrDuplicate, and the index tables are consistent afterwards.
func TestBoltUniqueRace(t *testing.T) {
	db := boltharness.Open(t)
	hotels := hotel.NewHotelBoltRepository(db)
	must(t, hotels.EnsureIndexes(ctx))
	for i := range 4 {
		must(t, hotels.Create(ctx, &hotel.Hotel{ID: fmt.Sprint("old", i), Name: fmt.Sprint("name", i), City: "Hamm"}))
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				errs[i] = hotels.SetName(ctx, fmt.Sprint("old", i/2), "Taken")
			} else {
				errs[i] = hotels.Create(ctx, &hotel.Hotel{ID: fmt.Sprint("new", i), Name: "Taken", City: "Hamm"})
			}
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both took the name", winner, i)
		case err == nil:
			winner = i
		default:
			wantErr(t, err, runtime.ErrDuplicate, fmt.Sprint("writer ", i))
		}
	}
	if winner < 0 {
		t.Fatal("no writer took the name")
	}
	h, err := hotels.GetByName(ctx, "Taken")
	must(t, err)
	want := fmt.Sprint("new", winner)
	if winner%2 == 0 {
		want = fmt.Sprint("old", winner/2)
	}
	if h.ID != want {
		t.Fatalf("GetByName: %s, want %s (writer %d)", h.ID, want, winner)
	}
	eq(t, "ListByName", hotelIDs(hotels.ListByName(ctx, "Taken", runtime.PageRequest{})), want)
	rep, err := hotels.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair after the race: %v", rep)
	}
}

// TestBoltBeforeEnsureIndexes: on bbolt too, lookups need EnsureIndexes,
// since only the layout it records says that their index tables are
// complete. Before it, reads through a lookup and writes that claim
// unique values fail with runtime.ErrNotReady and change nothing; other
// reads find nothing and create no bucket; other writes work, and
// EnsureIndexes then builds the lookups over what they wrote.
func TestBoltBeforeEnsureIndexes(t *testing.T) {
	db := boltharness.Open(t)
	s := hoteltest.Stores{Hotels: hotel.NewHotelBoltRepository(db), Posts: hotel.NewPostBoltRepository(db), Comments: hotel.NewCommentBoltRepository(db)}
	all := runtime.PageRequest{}
	_, err := s.Hotels.ListByName(ctx, "x", all)
	wantErr(t, err, runtime.ErrNotReady, "ListByName")
	_, err = s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{}, all)
	wantErr(t, err, runtime.ErrNotReady, "ListByCityStars")
	_, err = s.Hotels.GetByName(ctx, "x")
	wantErr(t, err, runtime.ErrNotReady, "GetByName")
	m, err := s.Hotels.GetMany(ctx, []string{"h1"})
	if err != nil || len(m) != 0 {
		t.Fatalf("GetMany: %v, %v", m, err)
	}
	page, err := s.Comments.ListByPost(ctx, 35, all)
	if err != nil || len(page.Items) != 0 || page.Next != "" {
		t.Fatalf("ListByPost: %+v, %v", page, err)
	}
	err = s.Hotels.Create(ctx, &hotel.Hotel{ID: "h1", Name: "Ibis", City: "Essen", Tags: []string{"wifi"}})
	wantErr(t, err, runtime.ErrNotReady, "Create of a hotel (a unique name)")
	if tables := dump(t, db); len(tables) != 0 {
		t.Fatalf("reads and a refused write created buckets: %v", slices.Sorted(maps.Keys(tables)))
	}

	// Comment has no unique lookup: its writes need nothing.
	must(t, s.Comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: 35}, Author: "bob"}))
	page, err = s.Comments.ListByPost(ctx, 35, all)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListByPost after Create: %+v, %v", page, err)
	}
	must(t, s.Hotels.EnsureIndexes(ctx))
	must(t, s.Posts.EnsureIndexes(ctx))
	must(t, s.Comments.EnsureIndexes(ctx))
	page, err = s.Comments.ListByAuthor(ctx, "bob", all)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListByAuthor of the comment written before EnsureIndexes: %+v, %v", page, err)
	}
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "h1", Name: "Ibis", City: "Essen", Tags: []string{"wifi"}}))
	eq(t, "ListByTags after Create", hotelIDs(s.Hotels.ListByTags(ctx, "wifi", all)), "h1")
	// The zip lookup's bucket holds the hotel's zero zip.
	eq(t, "ListByAddressZip of the zero value", hotelIDs(s.Hotels.ListByAddressZip(ctx, "", all)), "h1")
	want := []string{"Comment", "Comment.author", "Hotel", "Hotel.addressZip", "Hotel.cityStars", "Hotel.name", "Hotel.tags", "Post", "Post.author", "_noam_fence", "_noam_schema", "noam.counters"}
	if got := slices.Sorted(maps.Keys(dump(t, db))); !slices.Equal(got, want) {
		t.Fatalf("buckets %q, want %q", got, want)
	}
}
