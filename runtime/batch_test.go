package runtime

import (
	"errors"
	"strings"
	"testing"
)

// TestBatchError: a batch with failed items is one error that names them,
// matches each item's kind with errors.Is and answers per item; a batch
// without failures is no error.
func TestBatchError(t *testing.T) {
	b := newBatch[string]("CreateMany", 5)
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		b.keys[i] = k
	}
	if err := b.result("Hotel"); err != nil {
		t.Fatalf("no item failed, got %v", err)
	}
	b.errs[1] = FailAt("Create", "Hotel", "b", "", ErrDuplicate, nil)
	b.errs[3] = FailAt("Create", "Hotel", "d", "", ErrInvalid, nil)
	err := b.result("Hotel")
	var be *BatchError
	if !errors.As(err, &be) {
		t.Fatalf("%T is not a *BatchError", err)
	}
	if be.Total != 5 || len(be.Items) != 2 || be.Items[0].Index != 1 || be.Items[0].Key != "b" || be.Items[1].Index != 3 {
		t.Fatalf("items %+v of %d", be.Items, be.Total)
	}
	if !errors.Is(err, ErrDuplicate) || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is does not match the items' kinds: %v", err)
	}
	if be.Failed(0) != nil || !errors.Is(be.Failed(1), ErrDuplicate) || !errors.Is(be.Failed(3), ErrInvalid) {
		t.Fatalf("Failed per item: %v %v %v", be.Failed(0), be.Failed(1), be.Failed(3))
	}
	msg := err.Error()
	for _, want := range []string{"CreateMany Hotel: 2 of 5 items failed", "item 1:", "item 3:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// A long list is cut after three items.
	for i := range b.errs {
		b.errs[i] = ErrNotFound
	}
	if msg := b.result("Hotel").Error(); !strings.Contains(msg, "and 2 more") || strings.Contains(msg, "item 4") {
		t.Errorf("long message %q", msg)
	}
}
