// Package hoteltest is the store-independent test suite of lookups,
// composite keys, enumerable keys, batch reads and pagination, run against
// every store's generated repositories through the store's harness
// (runtime/storetest.Harness, the one the conformance suite takes).
package hoteltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Stores are the repositories under test, over an empty database.
type Stores struct {
	Hotels   hotel.HotelRepository
	Posts    hotel.PostRepository
	Comments hotel.CommentRepository
	// UnorderedScan says that List and All return blocks in no defined
	// order (DynamoDB scans): the suite then checks that every block comes
	// once, not their order.
	UnorderedScan bool
}

// stores makes the example's repositories over a database of any store.
var stores = storetest.Opener[Stores](func(h any, o ...runtime.Option) (Stores, error) {
	var err error
	s := Stores{Hotels: storetest.Make(&err, hotel.NewHotelRepository, h, o), Posts: storetest.Make(&err, hotel.NewPostRepository, h, o), Comments: storetest.Make(&err, hotel.NewCommentRepository, h, o)}
	return s, err
})

// Run runs the whole suite against the store of h: an empty database per
// subtest.
func Run(t *testing.T, h storetest.Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Stores)
	}{
		{"EnsureIndexes", testEnsureIndexes},
		{"ListByValue", testListByValue},
		{"CompositePrefixAndRange", testCompositePrefixAndRange},
		{"CompositeBadQuery", testCompositeBadQuery},
		{"SliceElements", testSliceElements},
		{"NestedPath", testNestedPath},
		{"MaintainedBySetters", testMaintainedBySetters},
		{"MaintainedByUpdate", testMaintainedByUpdate},
		{"MaintainedByPut", testMaintainedByPut},
		{"MaintainedByDelete", testMaintainedByDelete},
		{"Unique", testUnique},
		{"UniqueFailedWritesChangeNothing", testUniqueFailedWrites},
		{"UniqueZeroValuesNotIndexed", testUniqueZero},
		{"LookupPagination", testLookupPagination},
		{"LookupCursors", testLookupCursors},
		{"RepairConsistent", testRepairConsistent},
		{"Counter", testCounter},
		{"ScopedCounter", testScopedCounter},
		{"ScopePages", testScopePages},
		{"GetMany", testGetMany},
		{"PagesHelper", testPagesHelper},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := stores.Open(t, h)
			s.UnorderedScan = !h.Caps.OrderedScan
			must(t, s.Hotels.EnsureIndexes(ctx))
			must(t, s.Posts.EnsureIndexes(ctx))
			must(t, s.Comments.EnsureIndexes(ctx))
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

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

// ids lists the ids of every page of a listing, following cursors.
func ids(t *testing.T, limit int, list func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error)) []string {
	t.Helper()
	var out []string
	req := runtime.PageRequest{Limit: limit}
	for range 1000 {
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

func byCity(t *testing.T, s Stores, q hotel.HotelCityStarsQuery) []string {
	t.Helper()
	return ids(t, 3, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByCityStars(ctx, q, req)
	})
}

func byName(t *testing.T, s Stores, name string) []string {
	t.Helper()
	return ids(t, 3, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByName(ctx, name, req)
	})
}

func byTag(t *testing.T, s Stores, tag string) []string {
	t.Helper()
	return ids(t, 3, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByTags(ctx, tag, req)
	})
}

func byZip(t *testing.T, s Stores, zip string) []string {
	t.Helper()
	return ids(t, 3, func(req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByAddressZip(ctx, zip, req)
	})
}

func eq(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func dortmund(id string, stars int) *hotel.Hotel {
	return &hotel.Hotel{ID: id, Name: "Hotel " + id, City: "Dortmund", Stars: stars}
}

// seed stores the hotels of the slides' example.
func seed(t *testing.T, s Stores) {
	t.Helper()
	for _, h := range []*hotel.Hotel{
		{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 4, Tags: []string{"spa", "wifi"}, Address: hotel.Address{Zip: "44139"}},
		{ID: "h2", Name: "Ibis", City: "Dortmund", Stars: 2, Tags: []string{"wifi"}, Address: hotel.Address{Zip: "44137"}},
		{ID: "h3", Name: "Adlon", City: "Berlin", Stars: 5, Tags: []string{"spa", "spa"}, Address: hotel.Address{Zip: "10117"}},
		{ID: "h4", Name: "Mercure", City: "Dortmund", Stars: 4, Address: hotel.Address{Zip: "44139"}},
		{ID: "h5", Name: "Parkhotel", City: "Dortmund", Stars: 3},
		{ID: "h6", Name: "Motel One", City: "Essen", Stars: 2, Tags: []string{"wifi"}},
	} {
		must(t, s.Hotels.Create(ctx, h))
	}
}

func testEnsureIndexes(t *testing.T, s Stores) {
	// Safe to call again, with and without data.
	must(t, s.Hotels.EnsureIndexes(ctx))
	seed(t, s)
	must(t, s.Hotels.EnsureIndexes(ctx))
	eq(t, "name lookup after EnsureIndexes", byName(t, s, "Adlon"), "h3")
}

func testListByValue(t *testing.T, s Stores) {
	seed(t, s)
	eq(t, "by name", byName(t, s, "Ibis"), "h2")
	eq(t, "by unknown name", byName(t, s, "Hilton"))
	h, err := s.Hotels.GetByName(ctx, "Wittekind")
	must(t, err)
	if h.ID != "h1" || h.City != "Dortmund" || len(h.Tags) != 2 {
		t.Fatalf("GetByName: %+v", h)
	}
	_, err = s.Hotels.GetByName(ctx, "Hilton")
	wantErr(t, err, runtime.ErrNotFound, "GetByName of an unknown name")
}

func testCompositePrefixAndRange(t *testing.T, s Stores) {
	seed(t, s)
	// All parts.
	eq(t, "Dortmund:4", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}), "h1", "h4")
	// Leading prefix: all hotels in Dortmund, in (stars, id) order.
	eq(t, "Dortmund", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}), "h2", "h5", "h1", "h4")
	// A range on the last given part.
	eq(t, "Dortmund, stars >= 3", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Gte(3)}), "h5", "h1", "h4")
	eq(t, "Dortmund, stars > 3", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Gt(3)}), "h1", "h4")
	eq(t, "Dortmund, stars < 4", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Lt(4)}), "h2", "h5")
	eq(t, "Dortmund, stars <= 3", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Lte(3)}), "h2", "h5")
	eq(t, "Dortmund, 3 <= stars < 5", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Between(3, 5)}), "h5", "h1", "h4")
	eq(t, "Dortmund, stars >= 9", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Gte(9)}))
	// A range on the first part, and no condition at all.
	eq(t, "cities from D to E", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Between("D", "E")}), "h2", "h5", "h1", "h4")
	eq(t, "cities >= Dortmund", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Gte("Dortmund")}), "h2", "h5", "h1", "h4", "h6")
	eq(t, "everything", byCity(t, s, hotel.HotelCityStarsQuery{}), "h3", "h2", "h5", "h1", "h4", "h6")
	// Prefixes do not match longer strings: "Dort" is not "Dortmund".
	eq(t, "city Dort", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dort")}))
}

func testCompositeBadQuery(t *testing.T, s Stores) {
	seed(t, s)
	for name, q := range map[string]hotel.HotelCityStarsQuery{
		"second part without the first": {Stars: runtime.Eq(4)},
		"condition after a range":       {City: runtime.Gte("D"), Stars: runtime.Eq(4)},
	} {
		_, err := s.Hotels.ListByCityStars(ctx, q, runtime.PageRequest{})
		wantErr(t, err, runtime.ErrBadQuery, name)
	}
}

func testSliceElements(t *testing.T, s Stores) {
	seed(t, s)
	eq(t, "tag spa", byTag(t, s, "spa"), "h1", "h3") // h3 lists spa twice: once here
	eq(t, "tag wifi", byTag(t, s, "wifi"), "h1", "h2", "h6")
	eq(t, "tag pool", byTag(t, s, "pool"))
	must(t, s.Hotels.SetTags(ctx, "h1", []string{"pool"}))
	eq(t, "tag spa after SetTags", byTag(t, s, "spa"), "h3")
	eq(t, "tag wifi after SetTags", byTag(t, s, "wifi"), "h2", "h6")
	eq(t, "tag pool after SetTags", byTag(t, s, "pool"), "h1")
	must(t, s.Hotels.SetTags(ctx, "h3", nil))
	eq(t, "tag spa after clearing", byTag(t, s, "spa"))
}

func testNestedPath(t *testing.T, s Stores) {
	seed(t, s)
	eq(t, "zip 44139", byZip(t, s, "44139"), "h1", "h4")
	must(t, s.Hotels.SetAddress(ctx, "h4", hotel.Address{Street: "Westfalendamm", Zip: "44141"}))
	eq(t, "zip 44139 after SetAddress", byZip(t, s, "44139"), "h1")
	eq(t, "zip 44141 after SetAddress", byZip(t, s, "44141"), "h4")
	must(t, s.Hotels.Update(ctx, "h1", hotel.HotelUpdate{Address: &hotel.Address{Zip: "44141"}}))
	eq(t, "zip 44141 after Update", byZip(t, s, "44141"), "h1", "h4")
	eq(t, "zip 44139 after Update", byZip(t, s, "44139"))
}

func testMaintainedBySetters(t *testing.T, s Stores) {
	seed(t, s)
	must(t, s.Hotels.SetCity(ctx, "h1", "Berlin"))
	eq(t, "Dortmund:4 after SetCity", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}), "h4")
	eq(t, "Berlin after SetCity", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin")}), "h1", "h3")
	must(t, s.Hotels.SetStars(ctx, "h1", 5))
	eq(t, "Berlin:5 after SetStars", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin"), Stars: runtime.Eq(5)}), "h1", "h3")
	eq(t, "Berlin:4", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin"), Stars: runtime.Eq(4)}))
	// Setting the same value again keeps the entry.
	must(t, s.Hotels.SetStars(ctx, "h1", 5))
	eq(t, "Berlin:5 after the same SetStars", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin"), Stars: runtime.Eq(5)}), "h1", "h3")
	// Clearing a value indexes the zero value.
	must(t, s.Hotels.SetCity(ctx, "h2", ""))
	eq(t, "empty city", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("")}), "h2")
	wantErr(t, s.Hotels.SetCity(ctx, "nope", "Berlin"), runtime.ErrNotFound, "SetCity of a missing hotel")
	eq(t, "Berlin after a failed SetCity", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin")}), "h1", "h3")
	// A setter of an unindexed field leaves the index alone.
	must(t, s.Hotels.SetRooms(ctx, "h1", []hotel.Room{{Number: 1}}))
	eq(t, "Berlin after SetRooms", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin")}), "h1", "h3")
}

func testMaintainedByUpdate(t *testing.T, s Stores) {
	seed(t, s)
	must(t, s.Hotels.Update(ctx, "h2", hotel.HotelUpdate{City: runtime.Ptr("Essen"), Stars: runtime.Ptr(3), Tags: &[]string{"spa"}, Name: runtime.Ptr("Ibis Budget")}))
	eq(t, "Essen after Update", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Essen")}), "h6", "h2")
	eq(t, "Dortmund after Update", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}), "h5", "h1", "h4")
	eq(t, "tag spa after Update", byTag(t, s, "spa"), "h1", "h2", "h3")
	eq(t, "old name after Update", byName(t, s, "Ibis"))
	eq(t, "new name after Update", byName(t, s, "Ibis Budget"), "h2")
	// Only one part of a composite lookup changes: the other is kept.
	must(t, s.Hotels.Update(ctx, "h2", hotel.HotelUpdate{Stars: runtime.Ptr(1)}))
	eq(t, "Essen:1", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Essen"), Stars: runtime.Eq(1)}), "h2")
	eq(t, "Essen:3", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Essen"), Stars: runtime.Eq(3)}))
}

func testMaintainedByPut(t *testing.T, s Stores) {
	seed(t, s)
	h, err := s.Hotels.Get(ctx, "h1")
	must(t, err)
	h.City, h.Stars, h.Tags, h.Name, h.Address.Zip = "Essen", 5, []string{"sauna"}, "Wittekind II", "45127"
	must(t, s.Hotels.Put(ctx, h))
	eq(t, "Dortmund:4 after Put", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}), "h4")
	eq(t, "Essen:5 after Put", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Essen"), Stars: runtime.Eq(5)}), "h1")
	eq(t, "tag spa after Put", byTag(t, s, "spa"), "h3")
	eq(t, "tag sauna after Put", byTag(t, s, "sauna"), "h1")
	eq(t, "old name after Put", byName(t, s, "Wittekind"))
	eq(t, "zip after Put", byZip(t, s, "45127"), "h1")
	// The old name is free again.
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "h9", Name: "Wittekind", City: "Hamm"}))
	// Put of a new hotel indexes it.
	must(t, s.Hotels.Put(ctx, &hotel.Hotel{ID: "h10", Name: "Neu", City: "Hamm", Stars: 1}))
	eq(t, "Hamm", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Hamm")}), "h9", "h10")
}

func testMaintainedByDelete(t *testing.T, s Stores) {
	seed(t, s)
	must(t, s.Hotels.Delete(ctx, "h1"))
	eq(t, "Dortmund:4 after Delete", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}), "h4")
	eq(t, "tag spa after Delete", byTag(t, s, "spa"), "h3")
	eq(t, "zip after Delete", byZip(t, s, "44139"), "h4")
	eq(t, "name after Delete", byName(t, s, "Wittekind"))
	_, err := s.Hotels.GetByName(ctx, "Wittekind")
	wantErr(t, err, runtime.ErrNotFound, "GetByName after Delete")
	// The unique name is free: no unique record was left behind.
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "h7", Name: "Wittekind", City: "Dortmund", Stars: 4}))
	h, err := s.Hotels.GetByName(ctx, "Wittekind")
	must(t, err)
	if h.ID != "h7" {
		t.Fatalf("GetByName after re-use: %s", h.ID)
	}
	rep, err := s.Hotels.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair found problems after Delete: %v", rep)
	}
}

func testUnique(t *testing.T, s Stores) {
	seed(t, s)
	err := s.Hotels.Create(ctx, &hotel.Hotel{ID: "x", Name: "Ibis", City: "Köln"})
	wantErr(t, err, runtime.ErrDuplicate, "Create with a taken unique name")
	_, err = s.Hotels.Get(ctx, "x")
	wantErr(t, err, runtime.ErrNotFound, "the hotel of a failed Create")
	eq(t, "Köln after a failed Create", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Köln")}))
	wantErr(t, s.Hotels.SetName(ctx, "h1", "Ibis"), runtime.ErrDuplicate, "SetName to a taken name")
	wantErr(t, s.Hotels.Update(ctx, "h1", hotel.HotelUpdate{Name: runtime.Ptr("Ibis"), City: runtime.Ptr("Köln")}), runtime.ErrDuplicate, "Update to a taken name")
	h, err := s.Hotels.Get(ctx, "h1")
	must(t, err)
	if h.Name != "Wittekind" || h.City != "Dortmund" {
		t.Fatalf("failed unique writes changed the hotel: %+v", h)
	}
	// Setting one's own name again is fine; swapping names via a free one works.
	must(t, s.Hotels.SetName(ctx, "h2", "Ibis"))
	must(t, s.Hotels.SetName(ctx, "h2", "tmp"))
	must(t, s.Hotels.SetName(ctx, "h1", "Ibis"))
	must(t, s.Hotels.SetName(ctx, "h2", "Wittekind"))
	for name, want := range map[string]string{"Ibis": "h1", "Wittekind": "h2"} {
		h, err := s.Hotels.GetByName(ctx, name)
		must(t, err)
		if h.ID != want {
			t.Fatalf("GetByName(%s) = %s, want %s", name, h.ID, want)
		}
	}
	eq(t, "tmp is free again", byName(t, s, "tmp"))
}

func testUniqueFailedWrites(t *testing.T, s Stores) {
	seed(t, s)
	before, err := s.Hotels.Get(ctx, "h1")
	must(t, err)
	changed := *before
	changed.Name, changed.City, changed.Tags = "Adlon", "Köln", []string{"new"}
	wantErr(t, s.Hotels.Put(ctx, &changed), runtime.ErrDuplicate, "Put with a taken name")
	after, err := s.Hotels.Get(ctx, "h1")
	must(t, err)
	if after.Name != before.Name || after.City != before.City || !slices.Equal(after.Tags, before.Tags) {
		t.Fatalf("failed Put changed the hotel: %+v", after)
	}
	eq(t, "Köln after a failed Put", byCity(t, s, hotel.HotelCityStarsQuery{City: runtime.Eq("Köln")}))
	eq(t, "tag new after a failed Put", byTag(t, s, "new"))
	eq(t, "name still h1's", byName(t, s, "Wittekind"), "h1")
	rep, err := s.Hotels.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("failed writes left lookup entries behind: %v", rep)
	}
}

func testLookupPagination(t *testing.T, s Stores) {
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("d%02d", i)
		must(t, s.Hotels.Create(ctx, dortmund(id, 3)))
		want = append(want, id)
	}
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "b1", Name: "B", City: "Berlin", Stars: 3}))
	q := hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(3)}
	var got []string
	var sizes []int
	req := runtime.PageRequest{Limit: 10}
	for range 10 {
		page, err := s.Hotels.ListByCityStars(ctx, q, req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		for _, h := range page.Items {
			got = append(got, h.ID)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	eq(t, "pages", got, want...)
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Fatalf("page sizes %v", sizes)
	}
	// Changes between pages: nothing skipped or repeated.
	page, err := s.Hotels.ListByCityStars(ctx, q, runtime.PageRequest{Limit: 5}) // d00..d04
	must(t, err)
	must(t, s.Hotels.Delete(ctx, "d01"))
	must(t, s.Hotels.Delete(ctx, "d05"))
	must(t, s.Hotels.Create(ctx, dortmund("d00a", 3)))
	must(t, s.Hotels.Create(ctx, dortmund("d05a", 3)))
	must(t, s.Hotels.SetStars(ctx, "d06", 4)) // leaves the query's range
	var rest []string
	req = runtime.PageRequest{Limit: 5, Cursor: page.Next}
	for range 10 {
		page, err := s.Hotels.ListByCityStars(ctx, q, req)
		must(t, err)
		for _, h := range page.Items {
			rest = append(rest, h.ID)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	var wantRest []string
	for i := 7; i < 25; i++ {
		wantRest = append(wantRest, fmt.Sprintf("d%02d", i))
	}
	eq(t, "pages after changes", rest, append([]string{"d05a"}, wantRest...)...)
}

func testLookupCursors(t *testing.T, s Stores) {
	for i := range 6 {
		must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: fmt.Sprintf("h%d", i), Name: fmt.Sprint("n", i), City: []string{"Dortmund", "Berlin"}[i%2], Stars: 3, Tags: []string{"a"}}))
	}
	page, err := s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}, runtime.PageRequest{Limit: 1})
	must(t, err)
	good := page.Next
	tagPage, err := s.Hotels.ListByTags(ctx, "a", runtime.PageRequest{Limit: 1})
	must(t, err)
	listPage, err := s.Hotels.List(ctx, runtime.PageRequest{Limit: 1})
	must(t, err)
	flip := []byte(good)
	flip[len(flip)/2] ^= 2
	for name, c := range map[string]string{
		"tampered":   string(flip),
		"truncated":  good[:len(good)-2],
		"garbage":    "%%%",
		"other tag":  tagPage.Next,
		"List's":     listPage.Next,
		"extended":   good + "x",
		"whitespace": " " + good,
	} {
		_, err := s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}, runtime.PageRequest{Limit: 1, Cursor: c})
		wantErr(t, err, runtime.ErrBadCursor, "ListByCityStars with a "+name+" cursor")
	}
	// The same lookup with other conditions is another query.
	_, err = s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq("Berlin")}, runtime.PageRequest{Limit: 1, Cursor: good})
	wantErr(t, err, runtime.ErrBadCursor, "a Dortmund cursor used for Berlin")
	_, err = s.Hotels.ListByTags(ctx, "b", runtime.PageRequest{Limit: 1, Cursor: tagPage.Next})
	wantErr(t, err, runtime.ErrBadCursor, "a tag cursor used for another tag")
	_, err = s.Hotels.List(ctx, runtime.PageRequest{Limit: 1, Cursor: good})
	wantErr(t, err, runtime.ErrBadCursor, "a lookup cursor used by List")
	if _, err := s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}, runtime.PageRequest{Limit: 1, Cursor: good}); err != nil {
		t.Fatalf("the good cursor: %v", err)
	}
}

func testRepairConsistent(t *testing.T, s Stores) {
	seed(t, s)
	must(t, s.Hotels.SetCity(ctx, "h2", "Bochum"))
	must(t, s.Hotels.Delete(ctx, "h6"))
	rep, err := s.Hotels.Repair(ctx)
	must(t, err)
	if rep.Aggregates != 5 || rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair of consistent lookups: %v", rep)
	}
}

func testCounter(t *testing.T, s Stores) {
	var got []int64
	for i := range 3 {
		p := &hotel.Post{Title: fmt.Sprint("post ", i), Author: "ann"}
		must(t, s.Posts.Create(ctx, p))
		got = append(got, p.ID)
	}
	if !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("allocated ids %v, want 1 2 3", got)
	}
	p, err := s.Posts.Get(ctx, 2)
	must(t, err)
	if p.Title != "post 1" {
		t.Fatalf("post 2: %+v", p)
	}
	// An explicit id is kept; allocation then skips ids in use.
	must(t, s.Posts.Create(ctx, &hotel.Post{ID: 4, Title: "explicit"}))
	next := &hotel.Post{Title: "after explicit"}
	must(t, s.Posts.Create(ctx, next))
	if next.ID != 5 {
		t.Fatalf("id allocated after an explicit 4: %d, want 5", next.ID)
	}
	// Deleted ids are not reused.
	must(t, s.Posts.Delete(ctx, 5))
	again := &hotel.Post{Title: "again"}
	must(t, s.Posts.Create(ctx, again))
	if again.ID != 6 {
		t.Fatalf("id after deleting 5: %d, want 6", again.ID)
	}
	// Author lookup on a counter-keyed aggregate, in id (numeric) order.
	var authors []int64
	page, err := s.Posts.ListByAuthor(ctx, "ann", runtime.PageRequest{Limit: 10})
	must(t, err)
	for _, p := range page.Items {
		authors = append(authors, p.ID)
	}
	if !slices.Equal(authors, []int64{1, 2, 3}) {
		t.Fatalf("posts by ann: %v", authors)
	}
}

func testScopedCounter(t *testing.T, s Stores) {
	var keys []hotel.CommentKey
	for _, post := range []int64{35, 35, 36, 35} {
		c := &hotel.Comment{Key: hotel.CommentKey{Post: post}, Author: "bob", Text: "hi"}
		must(t, s.Comments.Create(ctx, c))
		keys = append(keys, c.Key)
	}
	want := []hotel.CommentKey{{Post: 35, Seq: 1}, {Post: 35, Seq: 2}, {Post: 36, Seq: 1}, {Post: 35, Seq: 3}}
	if !slices.Equal(keys, want) {
		t.Fatalf("allocated comment keys %v, want %v", keys, want)
	}
	c, err := s.Comments.Get(ctx, hotel.CommentKey{Post: 35, Seq: 2})
	must(t, err)
	if c.Author != "bob" {
		t.Fatalf("comment 35/2: %+v", c)
	}
	wantErr(t, s.Comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: 35, Seq: 2}}), runtime.ErrDuplicate, "Create of an existing comment key")
	// List orders composite keys part by part, numerically.
	page, err := s.Comments.List(ctx, runtime.PageRequest{})
	must(t, err)
	var listed []hotel.CommentKey
	for _, c := range page.Items {
		listed = append(listed, c.Key)
	}
	byKey := func(a []hotel.CommentKey) {
		sort.Slice(a, func(i, j int) bool {
			if a[i].Post != a[j].Post {
				return a[i].Post < a[j].Post
			}
			return a[i].Seq < a[j].Seq
		})
	}
	sorted := slices.Clone(want)
	byKey(sorted)
	if s.UnorderedScan {
		byKey(listed) // every block once, in no defined order
	}
	if !slices.Equal(listed, sorted) {
		t.Fatalf("List of comments: %v, want %v", listed, sorted)
	}
}

func scopeSeqs(t *testing.T, s Stores, post int64, limit int) ([]int64, []int) {
	t.Helper()
	var seqs []int64
	var sizes []int
	req := runtime.PageRequest{Limit: limit}
	for range 100 {
		page, err := s.Comments.ListByPost(ctx, post, req)
		must(t, err)
		sizes = append(sizes, len(page.Items))
		for _, c := range page.Items {
			if c.Key.Post != post {
				t.Fatalf("comment %v listed for post %d", c.Key, post)
			}
			seqs = append(seqs, c.Key.Seq)
		}
		if page.Next == "" {
			return seqs, sizes
		}
		req.Cursor = page.Next
	}
	t.Fatal("ListByPost does not end")
	return nil, nil
}

func testScopePages(t *testing.T, s Stores) {
	for range 7 {
		must(t, s.Comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: 35}}))
	}
	must(t, s.Comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: 36}}))
	seqs, sizes := scopeSeqs(t, s, 35, 3)
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6, 7}) || !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Fatalf("pages %v: %v", sizes, seqs)
	}
	// Deleted numbers leave gaps that pages skip.
	for _, seq := range []int64{2, 3, 4, 7} {
		must(t, s.Comments.Delete(ctx, hotel.CommentKey{Post: 35, Seq: seq}))
	}
	seqs, _ = scopeSeqs(t, s, 35, 2)
	if !slices.Equal(seqs, []int64{1, 5, 6}) {
		t.Fatalf("after deletes: %v, want 1 5 6", seqs)
	}
	seqs, _ = scopeSeqs(t, s, 99, 2)
	if len(seqs) != 0 {
		t.Fatalf("comments of a post without any: %v", seqs)
	}
	// Cursors are bound to the scope.
	page, err := s.Comments.ListByPost(ctx, 35, runtime.PageRequest{Limit: 1})
	must(t, err)
	_, err = s.Comments.ListByPost(ctx, 36, runtime.PageRequest{Limit: 1, Cursor: page.Next})
	wantErr(t, err, runtime.ErrBadCursor, "a post 35 cursor used for post 36")
	_, err = s.Comments.ListByPost(ctx, 35, runtime.PageRequest{Limit: 1, Cursor: page.Next + "A"})
	wantErr(t, err, runtime.ErrBadCursor, "an extended cursor")
}

func testGetMany(t *testing.T, s Stores) {
	seed(t, s)
	m, err := s.Hotels.GetMany(ctx, []string{"h3", "h1", "missing", "h1"})
	must(t, err)
	if len(m) != 2 || m["h1"] == nil || m["h3"] == nil || m["h1"].Name != "Wittekind" {
		t.Fatalf("GetMany: %v", m)
	}
	m, err = s.Hotels.GetMany(ctx, nil)
	must(t, err)
	if len(m) != 0 {
		t.Fatalf("GetMany of no keys: %v", m)
	}
	for range 3 {
		must(t, s.Comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: 1}}))
	}
	cm, err := s.Comments.GetMany(ctx, []hotel.CommentKey{{Post: 1, Seq: 1}, {Post: 1, Seq: 3}, {Post: 2, Seq: 1}})
	must(t, err)
	if len(cm) != 2 || cm[hotel.CommentKey{Post: 1, Seq: 3}] == nil {
		t.Fatalf("GetMany of comments: %v", cm)
	}
}

// testPagesHelper: runtime.Pages follows the cursors of a lookup listing.
func testPagesHelper(t *testing.T, s Stores) {
	seed(t, s)
	var got []string
	for h, err := range runtime.Pages(ctx, 1, func(ctx context.Context, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund")}, req)
	}) {
		must(t, err)
		got = append(got, h.ID)
	}
	eq(t, "runtime.Pages over ListByCityStars", got, "h2", "h5", "h1", "h4")
	var gotErr error
	for _, err := range runtime.Pages(ctx, 1, func(ctx context.Context, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
		return s.Hotels.ListByCityStars(ctx, hotel.HotelCityStarsQuery{Stars: runtime.Eq(4)}, req)
	}) {
		gotErr = err
	}
	wantErr(t, gotErr, runtime.ErrBadQuery, "runtime.Pages over a bad query")
}

// testUniqueZero: the zero value of a unique lookup is not indexed (as with
// a partial unique index, or SQL's NULL): any number of hotels may have no
// name, GetByName("") finds none, and a hotel can clear its name.
func testUniqueZero(t *testing.T, s Stores) {
	seed(t, s)
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "z1", City: "Köln"}))
	must(t, s.Hotels.Create(ctx, &hotel.Hotel{ID: "z2", City: "Köln"}))
	must(t, s.Hotels.SetName(ctx, "h1", ""))
	must(t, s.Hotels.Update(ctx, "h2", hotel.HotelUpdate{Name: runtime.Ptr("")}))
	_, err := s.Hotels.GetByName(ctx, "")
	wantErr(t, err, runtime.ErrNotFound, "GetByName of the zero value")
	// The cleared names are free again.
	must(t, s.Hotels.SetName(ctx, "z1", "Wittekind"))
	must(t, s.Hotels.SetName(ctx, "z2", "Ibis"))
	h, err := s.Hotels.GetByName(ctx, "Ibis")
	must(t, err)
	if h.ID != "z2" {
		t.Fatalf("GetByName(Ibis) = %s, want z2", h.ID)
	}
	rep, err := s.Hotels.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("Repair after zero values: %v", rep)
	}
}
