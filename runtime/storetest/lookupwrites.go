package storetest

import (
	"cmp"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// matchLookups is what a test expects of a match's lookups of one value
// per block: its region and level (regionLevel) and its venue's city.
type matchLookups struct {
	region string
	level  int
	city   string
}

// checkMatchLookups checks that regionLevel (by each region, and by each
// region and level) and venueCity list exactly the matches of want that
// hold the value, in lookup order (value, then block key).
func (e *env) checkMatchLookups(t *testing.T, what string, want map[string]matchLookups) {
	t.Helper()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range want {
			if !yield(id) {
				return
			}
		}
	})
	regions, cities := map[string]bool{"north": true, "south": true, "west": true}, map[string]bool{"Rome": true, "Oslo": true, "Lima": true}
	for _, m := range want {
		regions[m.region] = true
		if m.city != "" {
			cities[m.city] = true
		}
	}
	for r := range regions {
		var exp []string
		levels := map[int]bool{}
		for _, id := range ids {
			if want[id].region == r {
				exp = append(exp, id)
				levels[want[id].level] = true
			}
		}
		slices.SortStableFunc(exp, func(a, b string) int { return cmp.Compare(want[a].level, want[b].level) })
		eqStrings(t, what+": ListByRegionLevel "+r, e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq(r)}), exp...)
		for l := range levels {
			var expL []string
			for _, id := range exp {
				if want[id].level == l {
					expL = append(expL, id)
				}
			}
			eqStrings(t, what+": ListByRegionLevel "+r+" and a level", e.byRegion(t, model.MatchRegionLevelQuery{Region: runtime.Eq(r), Level: runtime.Eq(l)}), expL...)
		}
	}
	for c := range cities {
		var exp []string
		for _, id := range ids {
			if want[id].city == c {
				exp = append(exp, id)
			}
		}
		eqStrings(t, what+": ListByVenueCity "+c, e.byCity(t, c), exp...)
	}
}

// testLookupEveryWrite: after each kind of write (Create, CreateMany, Put,
// PutMany, Set of a whole lookup and of one part of a composite one,
// Update of lookup fields with and without an index-table field, Update,
// Append and SetAt of other fields, Delete, DeleteMany) the lookups of
// one value per block list exactly the blocks that hold each value, and
// Repair finds nothing to fix. On DynamoDB these lookups are global
// secondary indexes whose keys are attributes of the block's own item:
// a write path that forgot them leaves a block listed under its old
// value, or under none.
func testLookupEveryWrite(t *testing.T, e *env) {
	want := map[string]matchLookups{}
	mk := func(id, region string, level int, city string) *model.Match {
		m := newMatch(id, 1)
		m.Region, m.Level, m.Venue.City = region, level, city
		want[id] = matchLookups{region, level, city}
		return m
	}
	must(t, e.Matches.Create(bg, mk("a", "north", 4, "Rome")))
	must(t, e.Matches.Create(bg, mk("b", "north", 2, "Oslo")))
	e.checkMatchLookups(t, "after Create", want)
	must(t, e.Matches.CreateMany(bg, []*model.Match{mk("c", "south", 5, "Rome"), mk("d", "north", 4, "")}))
	e.checkMatchLookups(t, "after CreateMany", want)

	c, d := e.getMatch(t, "c"), e.getMatch(t, "d")
	c.Region, d.Venue.City = "west", "Oslo"
	want["c"] = matchLookups{"west", 5, "Rome"}
	want["d"] = matchLookups{"north", 4, "Oslo"}
	must(t, e.Matches.PutMany(bg, []*model.Match{c, d, mk("e", "north", 1, "Rome")}))
	e.checkMatchLookups(t, "after PutMany", want)
	a := e.getMatch(t, "a")
	a.Level = 7
	want["a"] = matchLookups{"north", 7, "Rome"}
	must(t, e.Matches.Put(bg, a))
	e.checkMatchLookups(t, "after Put", want)

	must(t, e.Matches.SetRegion(bg, "b", "south"))
	want["b"] = matchLookups{"south", 2, "Oslo"}
	e.checkMatchLookups(t, "after SetRegion (one part of regionLevel)", want)
	must(t, e.Matches.SetVenue(bg, "a", model.Venue{City: "Lima"}))
	want["a"] = matchLookups{"north", 7, "Lima"}
	e.checkMatchLookups(t, "after SetVenue (all of venueCity)", want)
	must(t, e.Matches.SetVenue(bg, "a", model.Venue{}))
	want["a"] = matchLookups{"north", 7, ""}
	e.checkMatchLookups(t, "after SetVenue to no city", want)

	must(t, e.Matches.Update(bg, "c", model.MatchUpdate{Region: ptr("north"), Level: ptr(3), Venue: &model.Venue{City: "Oslo"}}))
	want["c"] = matchLookups{"north", 3, "Oslo"}
	e.checkMatchLookups(t, "after Update of every lookup field", want)
	must(t, e.Matches.Update(bg, "d", model.MatchUpdate{Level: ptr(6)}))
	want["d"] = matchLookups{"north", 6, "Oslo"}
	e.checkMatchLookups(t, "after Update of one part of regionLevel", want)
	must(t, e.Matches.Update(bg, "e", model.MatchUpdate{Region: ptr("west"), Tags: &[]string{"moved"}}))
	want["e"] = matchLookups{"west", 1, "Rome"}
	e.checkMatchLookups(t, "after Update of a part of regionLevel and of tags (an index-table lookup)", want)
	must(t, e.Matches.Update(bg, "e", model.MatchUpdate{Start: ptr(t0.Add(1)), Meta: &map[string]int{"k": 2}}))
	must(t, e.Matches.SetStart(bg, "b", t0.Add(2)))
	e.checkMatchLookups(t, "after writes of unindexed fields", want)
	_, err := e.Matches.AppendRounds(bg, "b", newRound("b", 5))
	must(t, err)
	must(t, e.Matches.SetRoundsAt(bg, "b", 0, newRound("b", 6)))
	must(t, e.Matches.Update(bg, "b", model.MatchUpdate{Level: ptr(8), RoundsAt: map[int]model.Round{1: newRound("b", 7)}}))
	want["b"] = matchLookups{"south", 8, "Oslo"}
	e.checkMatchLookups(t, "after AppendRounds, SetRoundsAt and an Update with an element", want)

	must(t, e.Matches.Delete(bg, "a"))
	delete(want, "a")
	e.checkMatchLookups(t, "after Delete", want)
	must(t, e.Matches.DeleteMany(bg, []string{"b", "e"}))
	delete(want, "b")
	delete(want, "e")
	e.checkMatchLookups(t, "after DeleteMany", want)

	// Another shape: Reply (a composite key, a lookup of its own field,
	// a partition no lookup reads) and Journal (EAO: the lookup's field
	// is in the root entry).
	authors := func(what, author string, want ...model.ReplyKey) {
		t.Helper()
		got := collect(t, 2, func(req runtime.PageRequest) (runtime.Page[*model.Reply], error) {
			return e.Replies.ListByAuthor(bg, author, req)
		})
		if keys := keysOf(got, func(r *model.Reply) model.ReplyKey { return r.Key }); !slices.Equal(keys, want) {
			t.Fatalf("%s: ListByAuthor %s finds %v, want %v", what, author, keys, want)
		}
	}
	r1, r2 := &model.Reply{Key: model.ReplyKey{Thread: "lw"}, Author: "ann"}, &model.Reply{Key: model.ReplyKey{Thread: "lw"}, Author: "ann"}
	must(t, e.Replies.CreateMany(bg, []*model.Reply{r1, r2}))
	authors("after CreateMany", "ann", r1.Key, r2.Key)
	_, err = e.Replies.AppendEdits(bg, r1.Key, "e1")
	must(t, err)
	must(t, e.Replies.SetAuthor(bg, r2.Key, "bob"))
	authors("after AppendEdits and SetAuthor", "ann", r1.Key)
	authors("after AppendEdits and SetAuthor", "bob", r2.Key)
	must(t, e.Replies.Update(bg, r1.Key, model.ReplyUpdate{Author: ptr("bob"), EditsAt: map[int]string{0: "e2"}}))
	authors("after Update", "ann")
	authors("after Update", "bob", r1.Key, r2.Key)
	r2.Author = "ann"
	must(t, e.Replies.PutMany(bg, []*model.Reply{r2}))
	authors("after PutMany", "ann", r2.Key)
	authors("after PutMany", "bob", r1.Key)

	owners := func(what, owner string, want ...model.JournalID) {
		t.Helper()
		if got := e.journalsBy(t, owner, ""); !slices.Equal(got, want) {
			t.Fatalf("%s: ListByOwner %s finds %v, want %v", what, owner, got, want)
		}
	}
	j := &model.Journal{Owner: "lw-ann", Lines: []model.Line{{Kind: "lw"}}}
	must(t, e.Journals.Create(bg, j))
	_, err = e.Journals.AppendNotes(bg, j.ID, "n")
	must(t, err)
	_, err = e.Journals.AppendLines(bg, j.ID, model.Line{Kind: "lw2"})
	must(t, err)
	owners("after Create and Appends", "lw-ann", j.ID)
	must(t, e.Journals.Update(bg, j.ID, model.JournalUpdate{Root: &model.Journal{Owner: "lw-bob"}}))
	owners("after Update of the root", "lw-ann")
	owners("after Update of the root", "lw-bob", j.ID)
	e.lookupsClean(t, "every kind of write")
}
