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

	scopedTrips(t, "CreateMany", replies.CreateMany, last, prefix, bound)

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

// scopedTrips checks that write (CreateMany or PutMany, named op) of 30
// new replies over 3 threads (three scoped counters) takes at most
// bound+2 round trips and numbers each thread's replies from 1 in slice
// order.
func scopedTrips(t *testing.T, op string, write func(context.Context, []*model.Reply) error, last func() *runtime.Call, prefix string, bound int) {
	t.Helper()
	var rs []*model.Reply
	for i := range 30 {
		rs = append(rs, &model.Reply{Key: model.ReplyKey{Thread: fmt.Sprintf("%s-thread-%d", prefix, i%3)}, Author: "a", Body: fmt.Sprint(i)})
	}
	if err := write(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	if got := last().RoundTrips; got > bound+2 {
		t.Errorf("%s of replies in 3 threads: %d round trips, want at most %d", op, got, bound+2)
	}
	for i, r := range rs {
		if r.Key.Seq != int64(i/3+1) {
			t.Errorf("%s: reply %d (thread %s) got number %d, want %d", op, i, r.Key.Thread, r.Key.Seq, i/3+1)
		}
	}
}

// BatchPutCounterTrips checks that a store moves the counters of a
// PutMany with a counter once per counter scope, not once per item, as
// BatchCounterTrips checks CreateMany: a PutMany of 50 new journals (zero
// numbers, allocated as the single Put allocates them) takes at most bound
// round trips, as one of 5 does, and so does the PutMany that replaces
// them (numbers given, versions checked) at most replaced (bound where
// the store batches versioned Puts); one of 30 new replies over 3
// threads (three scoped counters) at most bound+2. last returns the
// repositories' last call (a runtime.WithHook the caller gave them);
// prefix keeps the threads apart from other tests'. It checks the items'
// numbers (distinct, in slice order per scope), their versions, and, in a
// batch mixing both kinds, the single Put's errors: a zero number
// expecting a version and a stale version are runtime.ErrConflict, a
// number given in the batch raises the counter.
func BatchPutCounterTrips(t *testing.T, journals model.JournalRepository, replies model.ReplyRepository, last func() *runtime.Call, prefix string, bound, replaced int) {
	t.Helper()
	ctx := context.Background()
	var trips []int
	var all []*model.Journal
	for _, n := range []int{5, 50} {
		js := make([]*model.Journal, n)
		for i := range js {
			js[i] = &model.Journal{Owner: fmt.Sprintf("%s-put-%d", prefix, i%4), Title: fmt.Sprint("j", i), Lines: []model.Line{{Kind: "k", Text: "t"}}}
		}
		if err := journals.PutMany(ctx, js); err != nil {
			t.Fatalf("PutMany of %d new journals: %v", n, err)
		}
		trips = append(trips, last().RoundTrips)
		for i, j := range js {
			if j.ID == 0 || j.Version != 1 || i > 0 && j.ID <= js[i-1].ID {
				t.Fatalf("PutMany of %d new journals: item %d got id %d, version %d (item before: %d)", n, i, j.ID, j.Version, js[max(i-1, 0)].ID)
			}
		}
		all = append(all, js...)
	}
	if trips[1] > bound {
		t.Errorf("PutMany of new journals with a counter: %d round trips for 5 items, %d for 50: want at most %d", trips[0], trips[1], bound)
	}
	t.Logf("round trips of PutMany of new journals: %v", trips)

	// The same blocks replaced: numbers given, versions checked.
	again := all[len(all)-50:]
	for _, j := range again {
		j.Title += "-again"
	}
	if err := journals.PutMany(ctx, again); err != nil {
		t.Fatalf("PutMany of 50 journals with their numbers: %v", err)
	}
	if got := last().RoundTrips; got > replaced {
		t.Errorf("PutMany of 50 journals with their numbers: %d round trips, want at most %d", got, replaced)
	}
	for _, j := range []*model.Journal{again[0], again[49]} {
		got, err := journals.Get(ctx, j.ID)
		if err != nil || got.Title != j.Title || got.Version != 2 || j.Version != 2 {
			t.Fatalf("Get %d after PutMany: %+v, %v (version in hand %d)", j.ID, got, err, j.Version)
		}
	}
	page, err := journals.ListByOwner(ctx, prefix+"-put-1", runtime.PageRequest{Limit: 100})
	if err != nil || len(page.Items) != 1+13 {
		t.Errorf("ListByOwner after PutMany: %d journals, %v; want 14", len(page.Items), err)
	}

	scopedTrips(t, "PutMany", replies.PutMany, last, prefix+"-put", bound)

	// Both kinds in one batch, with the single Put's errors.
	top := all[len(all)-1].ID
	high := top + 1000
	kept := *again[0]
	kept.Title = "kept"
	stale := *again[1] // version 2 in the store
	stale.Version = 1
	mixed := []*model.Journal{{Owner: prefix + "-m0"}, &kept, {Owner: prefix + "-m2", Version: 3}, {ID: high, Owner: prefix + "-high"}, &stale, {Owner: prefix + "-m5"}}
	err = journals.PutMany(ctx, mixed)
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Items) != 2 || be.Items[0].Index != 2 || be.Items[1].Index != 4 ||
		!errors.Is(be.Items[0].Err, runtime.ErrConflict) || !errors.Is(be.Items[1].Err, runtime.ErrConflict) {
		t.Fatalf("PutMany of new and given numbers with two stale versions: %v", err)
	}
	m := mixed
	if m[0].ID <= top || m[5].ID <= m[0].ID || m[0].Version != 1 || m[5].Version != 1 || m[2].ID != 0 ||
		kept.Version != 3 || m[3].ID != high || m[3].Version != 1 || stale.Version != 1 {
		t.Errorf("PutMany of new and given numbers: ids %d, %d, %d, %d, %d, %d, versions %d, %d, %d, %d, %d, %d",
			m[0].ID, m[1].ID, m[2].ID, m[3].ID, m[4].ID, m[5].ID, m[0].Version, m[1].Version, m[2].Version, m[3].Version, m[4].Version, m[5].Version)
	}
	for _, j := range []*model.Journal{m[0], &kept, m[3], m[5]} {
		if got, err := journals.Get(ctx, j.ID); err != nil || got.Owner != j.Owner || got.Title != j.Title || got.Version != j.Version {
			t.Errorf("Get %d after the mixed PutMany: %+v, %v", j.ID, got, err)
		}
	}
	if got, err := journals.Get(ctx, stale.ID); err != nil || got.Version != 2 || got.Title != again[1].Title {
		t.Errorf("the block the stale item wanted to replace: %+v, %v", got, err)
	}
	next := &model.Journal{Owner: prefix + "-next"}
	if err := journals.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	if next.ID <= high {
		t.Errorf("Create after a PutMany gave number %d: got %d, want more", high, next.ID)
	}
}
