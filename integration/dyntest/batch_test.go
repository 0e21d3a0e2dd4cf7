package dyntest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// batchErrs returns the errors of a batch write's failed items by index
// (none: nil error).
func batchErrs(t *testing.T, err error) map[int]error {
	t.Helper()
	out := map[int]error{}
	if err == nil {
		return out
	}
	var be *runtime.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("batch write failed as a whole: %v", err)
	}
	for _, it := range be.Items {
		out[it.Index] = it.Err
	}
	return out
}

// matches returns n Matches m<from>.. with unique codes c<i>, with one
// tag each if tagged.
func matches(from, n int, tagged bool) []*model.Match {
	var ms []*model.Match
	for i := from; i < from+n; i++ {
		m := &model.Match{ID: fmt.Sprintf("m%d", i), Code: fmt.Sprintf("c%d", i)}
		if tagged {
			m.Tags = []string{"t"}
		}
		ms = append(ms, m)
	}
	return ms
}

// TestBatchTransactions checks that with transactions a batch of writes
// that claim or release unique values is packed into TransactWriteItems
// of up to 100 actions, and that its items fail as the single calls do:
// a value taken already, two items claiming one value (the first wins), a
// version conflict, a key twice, a missing block.
func TestBatchTransactions(t *testing.T) {
	ctx := context.Background()
	repo, counts, index := open(t, dynamostore.TxAuto)
	c := repo.Client()
	code := func(s string) string { return runtime.FormatKey(runtime.AppendString(nil, s)) }

	// 50 Matches: a block and its code claim each, 100 actions.
	ms := matches(0, 50, false)
	if err := repo.CreateMany(ctx, ms); err != nil {
		t.Fatal(err)
	}
	want(t, "CreateMany of 50", counts.take(), map[string]int{"TransactWriteItems": 1})
	for _, m := range ms {
		if m.Version != 1 {
			t.Fatalf("CreateMany left %s at version %d, want 1", m.ID, m.Version)
		}
	}
	// With a tag item each, 120 actions: two transactions.
	if err := repo.CreateMany(ctx, matches(50, 40, true)); err != nil {
		t.Fatal(err)
	}
	want(t, "CreateMany of 40 with tags", counts.take(), map[string]int{"TransactWriteItems": 2})
	if got, err := repo.GetByCode(ctx, "c80"); err != nil || got.ID != "m80" {
		t.Fatalf("GetByCode c80 after CreateMany: %v, %v", got, err)
	}

	// One value taken already, two items claiming one new value: the taken
	// one and the second claimant fail with ErrDuplicate naming the value,
	// the others are written.
	batch := []*model.Match{
		{ID: "n0", Code: "d0"},
		{ID: "n1", Code: "c5"}, // m5's
		{ID: "n2", Code: "d2"},
		{ID: "n3", Code: "d2"}, // n2's, of this batch
		{ID: "n4", Code: "d4"},
	}
	errs := batchErrs(t, repo.CreateMany(ctx, batch))
	if len(errs) != 2 {
		t.Fatalf("CreateMany with two duplicates: failed items %v, want 1 and 3", errs)
	}
	for i, v := range map[int]string{1: "c5", 3: "d2"} {
		if err := errs[i]; !errors.Is(err, runtime.ErrDuplicate) || !strings.Contains(err.Error(), v) {
			t.Errorf("item %d: %v, want ErrDuplicate naming %s", i, err, v)
		}
	}
	got := counts.take()
	if got["TransactWriteItems"] > 4 || got["PutItem"]+got["UpdateItem"]+got["DeleteItem"] != 0 {
		t.Errorf("CreateMany with duplicates sent %v, want a few TransactWriteItems and reads", got)
	}
	claims := holders(t, c, index)
	for v, id := range map[string]string{"c5": "m5", "d0": "n0", "d2": "n2", "d4": "n4"} {
		if claims[code(v)] != code(id) {
			t.Errorf("claim of %s is %s's, want %s's", v, claims[code(v)], code(id))
		}
	}
	for _, id := range []string{"n1", "n3"} {
		if _, err := repo.Get(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("the refused item %s was written: %v", id, err)
		}
	}

	// PutMany: moves of unique values (m0 frees c0, which m1 then takes in
	// the same batch), a version conflict, a duplicate.
	load := func(id string) *model.Match {
		t.Helper()
		m, err := repo.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m0, m1, m2, m3 := load("m0"), load("m1"), load("m2"), load("m3")
	m0.Code, m1.Code = "e0", "c0"
	m2.Version = 7  // stored: 1
	m3.Code = "c10" // m10's
	counts.take()
	errs = batchErrs(t, repo.PutMany(ctx, []*model.Match{m0, m1, m2, m3}))
	if len(errs) != 2 || !errors.Is(errs[2], runtime.ErrConflict) || !errors.Is(errs[3], runtime.ErrDuplicate) || !strings.Contains(errs[3].Error(), "c10") {
		t.Fatalf("PutMany: failed items %v, want 2 ErrConflict and 3 ErrDuplicate naming c10", errs)
	}
	got = counts.take()
	if got["BatchGetItem"] != 1 || got["TransactWriteItems"] > 3 || got["PutItem"]+got["UpdateItem"]+got["DeleteItem"] != 0 {
		t.Errorf("PutMany sent %v, want one BatchGetItem, a few TransactWriteItems and reads", got)
	}
	if m0.Version != 2 || m1.Version != 2 {
		t.Errorf("PutMany left versions %d, %d, want 2", m0.Version, m1.Version)
	}
	claims = holders(t, c, index)
	for v, id := range map[string]string{"e0": "m0", "c0": "m1", "c3": "m3", "c10": "m10"} {
		if claims[code(v)] != code(id) {
			t.Errorf("after PutMany the claim of %s is %s's, want %s's", v, claims[code(v)], code(id))
		}
	}
	if _, ok := claims[code("c1")]; ok {
		t.Errorf("PutMany left m1's old claim c1")
	}

	// A key twice: the second Put of m4 expects the version the first
	// wrote; a second Create of a key is ErrDuplicate.
	m4 := load("m4")
	m4b := *m4
	m4.Code, m4b.Code, m4b.Version = "f4", "g4", 2
	counts.take()
	if err := repo.PutMany(ctx, []*model.Match{m4, &m4b}); err != nil {
		t.Fatalf("PutMany of one key twice, versions in order: %v", err)
	}
	if got := counts.take(); got["TransactWriteItems"] != 2 {
		t.Errorf("PutMany of a key twice sent %v, want two TransactWriteItems", got)
	}
	if got := load("m4"); got.Code != "g4" || got.Version != 3 {
		t.Errorf("m4 after PutMany twice: code %s version %d, want g4 3", got.Code, got.Version)
	}
	claims = holders(t, c, index)
	if claims[code("g4")] != code("m4") || claims[code("f4")] != "" || claims[code("c4")] != "" {
		t.Errorf("m4's claims after PutMany twice: g4 %q, f4 %q, c4 %q", claims[code("g4")], claims[code("f4")], claims[code("c4")])
	}
	errs = batchErrs(t, repo.CreateMany(ctx, []*model.Match{{ID: "k1", Code: "k1"}, {ID: "k1", Code: "k2"}}))
	if len(errs) != 1 || !errors.Is(errs[1], runtime.ErrDuplicate) {
		t.Fatalf("CreateMany of one key twice: %v, want the second ErrDuplicate", errs)
	}
	if claims := holders(t, c, index); claims[code("k2")] != "" {
		t.Errorf("the refused second Create of k1 claimed k2")
	}

	// DeleteMany: releases the claims in one transaction; a missing block
	// and a key twice are ErrNotFound.
	counts.take()
	errs = batchErrs(t, repo.DeleteMany(ctx, []string{"m20", "m21", "nope", "m20"}))
	if len(errs) != 2 || !errors.Is(errs[2], runtime.ErrNotFound) || !errors.Is(errs[3], runtime.ErrNotFound) {
		t.Fatalf("DeleteMany: failed items %v, want 2 and 3 ErrNotFound", errs)
	}
	if got := counts.take(); got["TransactWriteItems"] != 1 || got["DeleteItem"] != 0 {
		t.Errorf("DeleteMany sent %v, want one TransactWriteItems for the two blocks", got)
	}
	claims = holders(t, c, index)
	if claims[code("c20")] != "" || claims[code("c21")] != "" {
		t.Errorf("DeleteMany left the claims of m20, m21")
	}
	if err := repo.Create(ctx, &model.Match{ID: "x", Code: "c20"}); err != nil {
		t.Errorf("Create of a value DeleteMany freed: %v", err)
	}
}
