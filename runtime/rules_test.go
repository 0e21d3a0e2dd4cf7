package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		exists       bool
		stored, want int64
		detail       string // "" for no error
	}{
		{false, 0, 0, ""},
		{true, 0, 0, ""}, // a block without a version entry is at version 0
		{true, 3, 3, ""},
		{false, 0, 2, "(no block, expected version 2)"},
		{true, 4, 0, "(the block exists, at version 4)"},
		{true, 4, 3, "(stored version 4, expected 3)"},
		{true, 0, 1, "(stored version 0, expected 1)"},
	} {
		err := CheckVersion("Put", "Match", "m1", c.exists, c.stored, c.want)
		if c.detail == "" {
			if err != nil {
				t.Errorf("%+v: %v, want nil", c, err)
			}
			continue
		}
		var re *Error
		if !errors.Is(err, ErrConflict) || !errors.As(err, &re) || re.Detail != c.detail || re.ID != "m1" || re.Op != "Put" {
			t.Errorf("%+v: %#v, want an ErrConflict of Put on m1 with detail %q", c, err, c.detail)
		}
	}
}

// counted is a counted key: a number below fits fits.
type counted struct{ n int64 }

const fits = 1 << 20

func allocation(next func() (int64, error), inUse func(int64) bool) Allocation[counted] {
	return Allocation[counted]{
		Op: "Create", Agg: "Journal", Counter: "c",
		Next: func(context.Context) (int64, error) { return next() },
		With: func(n int64) counted { return counted{n} },
		Number: func(k counted) int64 {
			if k.n >= fits {
				return -1 // does not fit
			}
			return k.n
		},
		Try: func(_ context.Context, k counted) (bool, error) { return inUse(k.n), nil },
	}
}

func TestAllocateKey(t *testing.T) {
	ctx := context.Background()
	n := int64(0)
	next := func() (int64, error) { n++; return n, nil }
	// Numbers in use (blocks with explicit numbers) are skipped.
	got, err := AllocateKey(ctx, allocation(next, func(k int64) bool { return k < 4 }))
	if err != nil || got.n != 4 {
		t.Fatalf("got %v, %v; want key 4 (1 to 3 in use)", got, err)
	}
	// A number that does not fit the block key.
	n = fits - 2
	if _, err := AllocateKey(ctx, allocation(next, func(k int64) bool { return k == fits-1 })); err == nil || !strings.Contains(err.Error(), "1048576 does not fit the block key") {
		t.Fatalf("got %v, want 1048576 does not fit", err)
	}
	// One bound: MaxAllocations numbers in use in a row.
	n = 0
	tries := 0
	_, err = AllocateKey(ctx, allocation(next, func(int64) bool { tries++; return true }))
	if !errors.Is(err, ErrDuplicate) || tries != MaxAllocations {
		t.Fatalf("got %v after %d tries, want ErrDuplicate after %d", err, tries, MaxAllocations)
	}
	// A counter at its largest number: ErrOverflow, whether the store's
	// error says so or Overflowed tells.
	refused := errors.New("increment would overflow")
	a := allocation(func() (int64, error) { return 0, refused }, func(int64) bool { return false })
	if _, err := AllocateKey(ctx, a); errors.Is(err, ErrOverflow) || !errors.Is(err, refused) {
		t.Fatalf("got %v, want the store's error, not ErrOverflow", err)
	}
	a.Overflowed = func(context.Context) bool { return true }
	if _, err := AllocateKey(ctx, a); !errors.Is(err, ErrOverflow) || !errors.Is(err, refused) || !strings.Contains(err.Error(), "counter c is at the largest number") {
		t.Fatalf("got %v, want ErrOverflow naming counter c", err)
	}
	a = allocation(func() (int64, error) { return 0, ErrOverflow }, func(int64) bool { return false })
	if _, err := AllocateKey(ctx, a); !errors.Is(err, ErrOverflow) {
		t.Fatalf("got %v, want ErrOverflow", err)
	}
	// A store's own *Error is kept as it is.
	own := Fail("Create", "Journal", nil, ErrUnavailable, nil)
	a = allocation(func() (int64, error) { return 0, own }, func(int64) bool { return false })
	if _, err := AllocateKey(ctx, a); err != own {
		t.Fatalf("got %v, want the store's error unchanged", err)
	}
	// A write that fails otherwise ends it with that error.
	boom := errors.New("boom")
	a = allocation(next, nil)
	a.Try = func(context.Context, counted) (bool, error) { return false, boom }
	if _, err := AllocateKey(ctx, a); err != boom {
		t.Fatalf("got %v, want the write's error", err)
	}
}

func TestContended(t *testing.T) {
	err := Contended("SetCode", "Match", "m1", "block")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "block changed concurrently 64 times in a row") {
		t.Fatalf("got %v", err)
	}
}
