package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
)

// dumpDB reads every document of every collection of db, for checks that
// a failed call changed nothing.
func dumpDB(t *testing.T, db *mongo.Database) map[string]string {
	t.Helper()
	names, err := db.ListCollectionNames(bg, bson.D{})
	must(t, err)
	out := map[string]string{}
	for _, n := range names {
		cur, err := db.Collection(n).Find(bg, bson.D{})
		must(t, err)
		var docs []bson.Raw
		must(t, cur.All(bg, &docs))
		for _, d := range docs {
			out[n+"/"+d.Lookup("_id").String()] = d.String()
		}
	}
	return out
}

func sameDB(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%s changed the stored data: %d documents before, %d after", what, len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed %s", what, k)
		}
	}
}

// TestMongoForgedCursors (item 5): validly signed cursors (the test knows
// the key, as anyone knew the old public default) at huge positions are
// ErrBadCursor or an empty page, never a panic or a long loop, on
// ListRounds (the element listing, whose fallback path FerretDB takes)
// and on ListByPost (a scope listing).
func TestMongoForgedCursors(t *testing.T) {
	db := mongotest.Start(t)
	games := game.NewGameMongoRepository(db, mongotest.NativeOptions()...)
	must(t, games.EnsureIndexes(bg))
	must(t, games.Create(bg, &game.Game{ID: "g1", Rounds: []game.Round{{Moves: []string{"a"}}, {Moves: []string{"b"}}}}))
	comments := hotel.NewCommentMongoRepository(db, mongotest.NativeOptions()...)
	must(t, comments.EnsureIndexes(bg))
	for range 3 {
		must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 35}, Author: "ann"}))
	}
	before := dumpDB(t, db)
	positions := []int64{math.MaxInt64, math.MaxInt64 - 5, runtime.MaxPosition + 1, runtime.MaxPosition, math.MaxInt32, -1, math.MinInt64}
	rounds := runtime.ElemQuery("Game", "rounds", runtime.AppendString(nil, "g1"))
	scope := "Comment.ListByPost:" + string(runtime.AppendInt(nil, 35))
	for _, pos := range positions {
		start := time.Now()
		page, err := games.ListRounds(bg, "g1", runtime.PageRequest{Cursor: runtime.PositionCursor(rounds, pos)})
		if err != nil && !errors.Is(err, runtime.ErrBadCursor) || err == nil && len(page.Items) != 0 {
			t.Fatalf("ListRounds at %d: %v, %v", pos, page, err)
		}
		cpage, err := comments.ListByPost(bg, 35, runtime.PageRequest{Cursor: runtime.PositionCursor(scope, pos)})
		if err != nil && !errors.Is(err, runtime.ErrBadCursor) || err == nil && len(cpage.Items) != 0 {
			t.Fatalf("ListByPost at %d: %v, %v", pos, cpage, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("cursors at %d took %v", pos, d)
		}
	}
	// The query names are right: a cursor at 1 resumes after the first.
	if p, err := comments.ListByPost(bg, 35, runtime.PageRequest{Cursor: runtime.PositionCursor(scope, 1)}); err != nil || len(p.Items) != 2 {
		t.Fatalf("ListByPost after 1: %v, %v", p, err)
	}
	if p, err := games.ListRounds(bg, "g1", runtime.PageRequest{Cursor: runtime.PositionCursor(rounds, 1)}); err != nil || len(p.Items) != 1 {
		t.Fatalf("ListRounds at 1: %v, %v", p, err)
	}
	sameDB(t, "forged cursors", before, dumpDB(t, db))
}

// commandCounter counts the commands sent, by name.
type commandCounter struct {
	mu    sync.Mutex
	count map[string]int
}

func (c *commandCounter) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.count[e.CommandName]++
	}}
}

func (c *commandCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.count
	c.count = map[string]int{}
	return out
}

// TestMongoScopeGap (item 8): a page of ListByPost after a gap of 20,000
// deleted numbers costs two round trips (the counter, one range query).
func TestMongoScopeGap(t *testing.T) {
	cc := &commandCounter{count: map[string]int{}}
	db := mongotest.StartWithOptions(t, options.Client().SetMonitor(cc.monitor()))
	comments := hotel.NewCommentMongoRepository(db, mongotest.NativeOptions()...)
	must(t, comments.EnsureIndexes(bg))
	must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 7}, Author: "a"}))
	for _, n := range []int64{20_002, 20_003, 20_004} {
		must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 7, Seq: n}, Author: "a"}))
	}
	// Neighbouring scopes stay out of the pages.
	must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 6, Seq: 5}, Author: "a"}))
	must(t, comments.Create(bg, &hotel.Comment{Key: hotel.CommentKey{Post: 8, Seq: 1}, Author: "a"}))
	var got []int64
	req := runtime.PageRequest{Limit: 2}
	start := time.Now()
	for {
		cc.reset()
		page, err := comments.ListByPost(bg, 7, req)
		must(t, err)
		if n := cc.reset(); n["find"] > 2 || len(n) > 1 {
			t.Fatalf("one page sent %v, want at most two finds", n)
		}
		for _, c := range page.Items {
			got = append(got, c.Key.Seq)
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if len(got) != 4 || got[0] != 1 || got[1] != 20_002 || got[3] != 20_004 {
		t.Fatalf("listed %v", got)
	}
	t.Logf("listing across the gap took %v", time.Since(start))
}

// TestMongoCounterOverflow (item 6): after an explicit id of MaxInt64 the
// next allocation fails with runtime.ErrOverflow, changing nothing.
func TestMongoCounterOverflow(t *testing.T) {
	db := mongotest.Start(t)
	posts := hotel.NewPostMongoRepository(db, mongotest.NativeOptions()...)
	must(t, posts.EnsureIndexes(bg))
	must(t, posts.Create(bg, &hotel.Post{Title: "first"}))
	must(t, posts.Create(bg, &hotel.Post{ID: math.MaxInt64, Title: "last"}))
	before := dumpDB(t, db)
	err := posts.Create(bg, &hotel.Post{Title: "one too many"})
	if !errors.Is(err, runtime.ErrOverflow) {
		t.Fatalf("Create past MaxInt64: %v", err)
	}
	sameDB(t, "a Create past MaxInt64", before, dumpDB(t, db))
}

// TestMongoInvalidUTF8 (item 7): invalid UTF-8 in an id or a lookup value
// is runtime.ErrInvalidValue at the call, and nothing is stored (FerretDB
// would replace the bytes with U+FFFD, real MongoDB would refuse them).
func TestMongoInvalidUTF8(t *testing.T) {
	db := mongotest.Start(t)
	r := hotel.NewHotelMongoRepository(db, mongotest.NativeOptions()...)
	must(t, r.EnsureIndexes(bg))
	must(t, r.Create(bg, h1()))
	before := dumpDB(t, db)
	bad := func(f func(*hotel.Hotel)) *hotel.Hotel { h := h3(); f(h); return h }
	for what, err := range map[string]error{
		"Create id":      r.Create(bg, bad(func(h *hotel.Hotel) { h.ID = "h\xff3" })),
		"Create name":    r.Create(bg, bad(func(h *hotel.Hotel) { h.Name = "Witte\xffkind" })),
		"Create tag":     r.Create(bg, bad(func(h *hotel.Hotel) { h.Tags = []string{"ok", "sp\xc3"} })),
		"Create zip":     r.Create(bg, bad(func(h *hotel.Hotel) { h.Address.Zip = "\xed\xa0\x80" })),
		"Put id":         r.Put(bg, bad(func(h *hotel.Hotel) { h.ID = "h1\xff" })),
		"Put city":       r.Put(bg, bad(func(h *hotel.Hotel) { h.ID, h.City = "h1", "Dort\xffmund" })),
		"SetName":        r.SetName(bg, "h1", "W\xff"),
		"SetName bad id": r.SetName(bg, "h1\xff", "W"),
		"Update":         r.Update(bg, "h1", hotel.HotelUpdate{Tags: &[]string{"\xff"}}),
		"Delete":         r.Delete(bg, "h1\xff"),
	} {
		if !errors.Is(err, runtime.ErrInvalidValue) {
			t.Errorf("%s: %v, want ErrInvalidValue", what, err)
		}
	}
	sameDB(t, "writes with invalid UTF-8", before, dumpDB(t, db))
}

// TestMongoLargeUndo (item 3): a Create whose aggregate write fails
// undoes every entry it wrote in bounded batches, and Repair clears stale
// entries through its small-batch cursor. By default: a Create of 600 tags
// on a taken id (more keys than one batch); with NOAM_LARGE=1 the case of
// the issue: 50 tags of 1 MiB (50 MiB document, 100 MiB of index keys,
// more than one message can carry) and 30 stale entries of 2 MiB (about
// 150 s on FerretDB).
func TestMongoLargeUndo(t *testing.T) {
	large := os.Getenv("NOAM_LARGE") != ""
	db := mongotest.Start(t)
	r := hotel.NewHotelMongoRepository(db, mongostore.IndexTables())
	must(t, r.EnsureIndexes(bg))
	must(t, r.Create(bg, h1()))
	before := dumpDB(t, db)
	big := h3()
	big.Tags = nil
	if large {
		for i := range 50 {
			big.Tags = append(big.Tags, strings.Repeat(string(rune('a'+i%26)), 1<<20-1)+string(rune('A'+i/26)))
		}
	} else {
		big.ID = "h1" // taken: the insert fails after the entries are written
		for i := range 600 {
			big.Tags = append(big.Tags, fmt.Sprintf("tag%04d", i))
		}
	}
	if err := r.Create(bg, big); err == nil {
		t.Fatal("the Create succeeded")
	}
	sameDB(t, "the failed Create", before, dumpDB(t, db))
	tags := db.Collection(mongostore.TableName("Hotel", "tags"))
	nStale, size := 600, 10
	if large {
		nStale, size = 30, 1<<20
	}
	for i := range nStale {
		key := runtime.AppendString(nil, strings.Repeat("x", size)+fmt.Sprint(i))
		_, err := tags.InsertOne(bg, bson.D{{Key: "_id", Value: mongostore.IndexKey(append(key, runtime.AppendString(nil, "h1")...))}, {Key: "id", Value: "h1"}, {Key: "inc", Value: int64(1)}, {Key: "s", Value: int64(1)}})
		must(t, err)
	}
	rep, err := r.Repair(bg)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if rep.Removed != nStale || rep.Added != 0 {
		t.Fatalf("Repair: %v, want %d removed", rep, nStale)
	}
	sameDB(t, "Repair", before, dumpDB(t, db))
}

// TestMongoTimeRule (item 9): time.Time values come back truncated to
// milliseconds and in UTC (BSON datetime), the rule RELIABILITY.md states
// for every store.
func TestMongoTimeRule(t *testing.T) {
	db := mongotest.Start(t)
	coll := mongostore.Collection(db, "T")
	zone := time.FixedZone("+0530", 5*3600+1800)
	in := time.Date(2026, 11, 23, 23, 59, 59, 123456789, zone)
	type doc struct {
		ID string    `bson:"_id"`
		At time.Time `bson:"at"`
	}
	_, err := coll.InsertOne(bg, doc{ID: "a", At: in})
	must(t, err)
	var out doc
	must(t, coll.FindOne(bg, bson.D{{Key: "_id", Value: "a"}}).Decode(&out))
	if want := in.Truncate(time.Millisecond).UTC(); !out.At.Equal(want) || out.At.Location() != time.UTC || out.At.Nanosecond() != 123_000_000 {
		t.Fatalf("time %v came back as %v, want %v", in, out.At, want)
	}
}

// TestMongoTooLarge (issue 12): a write that would make a document larger
// than MongoDB's 16 MiB fails with runtime.ErrTooLarge and changes nothing,
// on both lookup mappings. FerretDB v1 stores larger documents: the
// adapter checks the size of every document and update it sends.
func TestMongoTooLarge(t *testing.T) {
	huge := strings.Repeat("x", 17<<20)
	for _, mapping := range []struct {
		name string
		opts []runtime.Option
	}{{"native", mongotest.NativeOptions()}, {"tables", []runtime.Option{mongostore.IndexTables()}}} {
		t.Run(mapping.name, func(t *testing.T) {
			db := mongotest.Start(t)
			r := hotel.NewHotelMongoRepository(db, mapping.opts...)
			must(t, r.EnsureIndexes(bg))
			must(t, r.Create(bg, h1()))
			games := game.NewGameMongoRepository(db, mapping.opts...)
			must(t, games.EnsureIndexes(bg))
			must(t, games.Create(bg, &game.Game{ID: "g1", Rounds: []game.Round{{Moves: []string{"a"}}}}))
			before := dumpDB(t, db)
			big := func(f func(*hotel.Hotel)) *hotel.Hotel { h := h3(); f(h); return h }
			_, appendErr := games.AppendRounds(bg, "g1", game.Round{Moves: []string{huge}})
			for what, err := range map[string]error{
				"Create":              r.Create(bg, big(func(h *hotel.Hotel) { h.Address.Street = huge })),
				"Create of big tags":  r.Create(bg, big(func(h *hotel.Hotel) { h.Tags = []string{huge[:9<<20], huge[:9<<20] + "y"} })),
				"Put":                 r.Put(bg, big(func(h *hotel.Hotel) { h.ID, h.Address.Street = "h1", huge })),
				"Put of a new hotel":  r.Put(bg, big(func(h *hotel.Hotel) { h.Address.Street = huge })),
				"SetTags":             r.SetTags(bg, "h1", []string{huge}),
				"SetAddress":          r.SetAddress(bg, "h1", hotel.Address{Street: huge}),
				"Update":              r.Update(bg, "h1", hotel.HotelUpdate{City: ptr("Bonn"), Address: &hotel.Address{Street: huge}}),
				"AppendRounds":        appendErr,
				"SetRoundsAt":         games.SetRoundsAt(bg, "g1", 0, game.Round{Moves: []string{huge}}),
				"Put of a huge game":  games.Put(bg, &game.Game{ID: "g2", Rounds: []game.Round{{Moves: []string{huge}}}}),
				"Create of huge game": games.Create(bg, &game.Game{ID: "g3", FirstPlayer: huge}),
			} {
				if !errors.Is(err, runtime.ErrTooLarge) {
					t.Errorf("%s: %v, want ErrTooLarge", what, err)
				}
			}
			sameDB(t, "writes over 16 MiB", before, dumpDB(t, db))
		})
	}
}

func ptr[V any](v V) *V { return &v }
