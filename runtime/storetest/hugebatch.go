package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// HugeBatch writes batches of n items on the store of h and checks that
// each succeeds whole, however large: a CreateMany of n matches (with
// unique values and lookups), a PutMany of them all, a DeleteMany of them
// all, and a CreateMany of n replies numbered by the counters of two
// threads. It is a load test bounded by n, which each store's suite picks
// so that its server takes a reasonable time; it asserts no timing.
func HugeBatch(t *testing.T, h Harness, n int) {
	e := open(t, h, true)
	ms := make([]*model.Match, n)
	ids := make([]string, n)
	for i := range ms {
		ids[i] = fmt.Sprintf("hb%06d", i)
		ms[i] = &model.Match{ID: ids[i], Code: "code-" + ids[i], Region: "north", Level: i % 7, Tags: []string{fmt.Sprint("t", i%11)}}
	}
	whole := func(op string, err error) {
		t.Helper()
		var be *runtime.BatchError
		if errors.As(err, &be) {
			t.Fatalf("%s of %d items: %d failed: %v", op, n, len(be.Items), err)
		}
		if err != nil {
			t.Fatalf("%s of %d items: %v", op, n, err)
		}
	}
	count := func(op string, want int64) {
		t.Helper()
		got, err := e.Matches.Count(bg)
		must(t, err)
		if got != want {
			t.Fatalf("after %s of %d items: Count %d, want %d", op, n, got, want)
		}
	}

	whole("CreateMany", e.Matches.CreateMany(bg, ms))
	count("CreateMany", int64(n))
	for _, i := range []int{0, n / 2, n - 1} {
		got, err := e.Matches.GetByCode(bg, ms[i].Code)
		if err != nil || got.ID != ids[i] || got.Version != 1 {
			t.Fatalf("GetByCode %s after CreateMany: %+v, %v", ms[i].Code, got, err)
		}
	}

	for i, m := range ms {
		m.Region = "south"
		m.Code = fmt.Sprint("put-", ids[i])
	}
	whole("PutMany", e.Matches.PutMany(bg, ms))
	for _, i := range []int{0, n / 2, n - 1} {
		got, err := e.Matches.GetByCode(bg, ms[i].Code)
		if err != nil || got.ID != ids[i] || got.Region != "south" || got.Version != 2 {
			t.Fatalf("GetByCode %s after PutMany: %+v, %v", ms[i].Code, got, err)
		}
	}
	south, err := e.Matches.CountByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq("south")})
	must(t, err)
	if south != int64(n) {
		t.Fatalf("after PutMany of %d items: CountByRegionLevel(south) %d", n, south)
	}

	whole("DeleteMany", e.Matches.DeleteMany(bg, ids))
	count("DeleteMany", 0)

	rs := make([]*model.Reply, n)
	for i := range rs {
		rs[i] = &model.Reply{Key: model.ReplyKey{Thread: fmt.Sprint("th", i%2)}, Author: "a"}
	}
	whole("Reply CreateMany", e.Replies.CreateMany(bg, rs))
	seen := map[model.ReplyKey]bool{}
	for _, r := range rs {
		if r.Key.Seq == 0 || seen[r.Key] {
			t.Fatalf("Reply CreateMany of %d items: key %+v zero or given twice", n, r.Key)
		}
		seen[r.Key] = true
	}
	replies, err := e.Replies.Count(bg)
	must(t, err)
	if replies != int64(n) {
		t.Fatalf("after Reply CreateMany of %d items: Count %d", n, replies)
	}
}
