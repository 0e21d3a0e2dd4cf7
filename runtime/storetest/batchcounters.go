package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// BatchCounterTrips checks that a store allocates the numbers of a
// CreateMany with a counter once per counter scope, not once per item:
// a CreateMany of 50 journals (one counter) takes at most bound round
// trips, as one of 5 does, and one of 30 replies over 3 threads (three
// scoped counters) at most bound+2. last returns the repositories' last
// call (a runtime.WithHook the caller gave them); prefix keeps the
// threads apart from other tests'. It checks that the items get distinct
// numbers in slice order, that a number given explicitly before is
// skipped and one given in the batch raises the counter, as the single
// Create does.
func BatchCounterTrips(t *testing.T, journals model.JournalRepository, replies model.ReplyRepository, last func() *runtime.Call, prefix string, bound int) {
	t.Helper()
	ctx := context.Background()
	create := func(n int) []*model.Journal {
		t.Helper()
		js := make([]*model.Journal, n)
		for i := range js {
			js[i] = &model.Journal{Owner: fmt.Sprintf("%s-owner-%d", prefix, i%4), Title: fmt.Sprint("j", i), Lines: []model.Line{{Kind: "k", Text: "t"}}}
		}
		if err := journals.CreateMany(ctx, js); err != nil {
			t.Fatal(err)
		}
		for i, j := range js {
			if j.ID == 0 || j.Version != 1 || i > 0 && j.ID <= js[i-1].ID {
				t.Fatalf("CreateMany of %d journals: item %d got id %d, version %d (item before: %d)", n, i, j.ID, j.Version, js[max(i-1, 0)].ID)
			}
		}
		return js
	}
	var trips []int
	var all []*model.Journal
	for _, n := range []int{5, 50} {
		all = append(all, create(n)...)
		trips = append(trips, last().RoundTrips)
	}
	if trips[1] > bound {
		t.Errorf("CreateMany with a counter: %d round trips for 5 items, %d for 50: want at most %d", trips[0], trips[1], bound)
	}
	t.Logf("round trips of CreateMany with a counter: %v", trips)
	for _, j := range []*model.Journal{all[0], all[len(all)-1]} {
		got, err := journals.Get(ctx, j.ID)
		if err != nil || got.Title != j.Title || got.Owner != j.Owner {
			t.Fatalf("Get %d after CreateMany: %+v, %v", j.ID, got, err)
		}
	}
	page, err := journals.ListByOwner(ctx, prefix+"-owner-1", runtime.PageRequest{Limit: 100})
	if err != nil || len(page.Items) != 1+13 {
		t.Errorf("ListByOwner after CreateMany: %d journals, %v; want 14", len(page.Items), err)
	}

	// Scoped counters: one allocation per thread.
	var rs []*model.Reply
	for i := range 30 {
		rs = append(rs, &model.Reply{Key: model.ReplyKey{Thread: fmt.Sprintf("%s-thread-%d", prefix, i%3)}, Author: "a", Body: fmt.Sprint(i)})
	}
	if err := replies.CreateMany(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if got := last().RoundTrips; got > bound+2 {
		t.Errorf("CreateMany of replies in 3 threads: %d round trips, want at most %d", got, bound+2)
	}
	for i, r := range rs {
		if r.Key.Seq != int64(i/3+1) {
			t.Errorf("reply %d (thread %s) got number %d, want %d", i, r.Key.Thread, r.Key.Seq, i/3+1)
		}
	}

	// A number given explicitly before: the item it falls to takes the
	// next free one.
	top := all[len(all)-1].ID
	taken := &model.Journal{ID: top + 2, Owner: prefix + "-taken"}
	if err := journals.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	js := []*model.Journal{{Owner: prefix + "-a"}, {Owner: prefix + "-b"}, {Owner: prefix + "-c"}}
	if err := journals.CreateMany(ctx, js); err != nil {
		t.Fatalf("CreateMany over a number given explicitly: %v", err)
	}
	seen := map[model.JournalID]bool{taken.ID: true}
	for i, j := range js {
		if j.ID <= top || seen[j.ID] {
			t.Errorf("CreateMany over number %d given explicitly: item %d got %d", taken.ID, i, j.ID)
		}
		seen[j.ID] = true
		if got, err := journals.Get(ctx, j.ID); err != nil || got.Owner != j.Owner {
			t.Errorf("Get %d: %+v, %v", j.ID, got, err)
		}
	}
	if got, err := journals.Get(ctx, taken.ID); err != nil || got.Owner != taken.Owner {
		t.Errorf("the journal given number %d: %+v, %v", taken.ID, got, err)
	}

	// A number given explicitly in the batch raises the counter; an item
	// refused keeps its key, its number allocated is a gap.
	high := top + 1000
	mixed := []*model.Journal{{Owner: prefix + "-d"}, {ID: high, Owner: prefix + "-high"}, {ID: taken.ID, Owner: prefix + "-dup"}, {Owner: prefix + "-e"}}
	err = journals.CreateMany(ctx, mixed)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 2 || !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("CreateMany with a number in use: %v", err)
	}
	if mixed[0].ID == 0 || mixed[3].ID == 0 || mixed[0].ID == mixed[3].ID || mixed[1].ID != high || mixed[2].ID != taken.ID {
		t.Errorf("CreateMany with explicit numbers: ids %d, %d, %d, %d", mixed[0].ID, mixed[1].ID, mixed[2].ID, mixed[3].ID)
	}
	next := &model.Journal{Owner: prefix + "-next"}
	if err := journals.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	if next.ID <= high {
		t.Errorf("Create after a CreateMany gave number %d: got %d, want more", high, next.ID)
	}
}

// BatchPutCounterTrips checks that a store numbers the items of a PutMany
// with a counter whose numbers are zero once per counter scope, and
// writes those given explicitly with one raise per batch, as
// BatchCounterTrips checks CreateMany: a PutMany of 50 new journals takes
// at most bound round trips, one of 30 new replies over 3 threads at most
// bound+2. The items get
// distinct numbers in slice order and the versions of the single Put; a
// stale version fails that item alone with runtime.ErrConflict.
func BatchPutCounterTrips(t *testing.T, journals model.JournalRepository, replies model.ReplyRepository, last func() *runtime.Call, prefix string, bound int) {
	t.Helper()
	ctx := context.Background()
	var trips []int
	var all []*model.Journal
	for _, n := range []int{5, 50} {
		js := make([]*model.Journal, n)
		for i := range js {
			js[i] = &model.Journal{Owner: fmt.Sprintf("%s-put-%d", prefix, i%4), Title: fmt.Sprint("p", i)}
		}
		if err := journals.PutMany(ctx, js); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, last().RoundTrips)
		for i, j := range js {
			if j.ID == 0 || j.Version != 1 || i > 0 && j.ID <= js[i-1].ID {
				t.Fatalf("PutMany of %d new journals: item %d got id %d, version %d", n, i, j.ID, j.Version)
			}
		}
		all = append(all, js...)
	}
	if trips[1] > bound {
		t.Errorf("PutMany with a counter: %d round trips for 5 new items, %d for 50: want at most %d", trips[0], trips[1], bound)
	}
	t.Logf("round trips of PutMany of new journals: %v", trips)

	// The same journals again, numbers and versions given; one stale.
	js := all[5:]
	for _, j := range js {
		j.Title += "-again"
	}
	stale := *js[7]
	stale.Version = 9
	js[7] = &stale
	err := journals.PutMany(ctx, js)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 7 || !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("PutMany of 50 journals, item 7 stale: %v", err)
	}
	t.Logf("round trips of PutMany of 50 journals with their numbers: %d", last().RoundTrips)
	for i, j := range js {
		got, err := journals.Get(ctx, j.ID)
		switch {
		case err != nil:
			t.Fatalf("Get %d: %v", j.ID, err)
		case i == 7 && (got.Version != 1 || got.Title != "p7"):
			t.Errorf("the stale item's journal: %+v", got)
		case i != 7 && (got.Version != 2 || j.Version != 2 || got.Title != j.Title):
			t.Errorf("journal %d after PutMany: %+v (item version %d)", j.ID, got, j.Version)
		}
	}
	if stale.Version != 9 {
		t.Errorf("the stale item's version became %d", stale.Version)
	}

	// Scoped counters: one allocation per thread.
	var rs []*model.Reply
	for i := range 30 {
		rs = append(rs, &model.Reply{Key: model.ReplyKey{Thread: fmt.Sprintf("%s-put-thread-%d", prefix, i%3)}, Author: "a", Body: fmt.Sprint(i)})
	}
	if err := replies.PutMany(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if got := last().RoundTrips; got > bound+2 {
		t.Errorf("PutMany of new replies in 3 threads: %d round trips, want at most %d", got, bound+2)
	}
	for i, r := range rs {
		if r.Key.Seq != int64(i/3+1) {
			t.Errorf("reply %d (thread %s) got number %d, want %d", i, r.Key.Thread, r.Key.Seq, i/3+1)
		}
	}
	// A number given explicitly in the batch raises the counter.
	high := all[len(all)-1].ID + 1000
	mixed := []*model.Journal{{Owner: prefix + "-m1"}, {ID: high, Owner: prefix + "-high"}, {Owner: prefix + "-m2"}}
	if err := journals.PutMany(ctx, mixed); err != nil {
		t.Fatalf("PutMany with a number given: %v", err)
	}
	if mixed[0].ID == 0 || mixed[2].ID == 0 || mixed[0].ID == mixed[2].ID || mixed[1].ID != high || mixed[1].Version != 1 {
		t.Errorf("PutMany with a number given: ids %d, %d, %d", mixed[0].ID, mixed[1].ID, mixed[2].ID)
	}
	next := &model.Journal{Owner: prefix + "-next"}
	if err := journals.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if next.ID <= high {
		t.Errorf("Put after a PutMany gave number %d: got %d, want more", high, next.ID)
	}
}
