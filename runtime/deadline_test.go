package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestDetach: the detached context outlives its parent by CleanupTimeout,
// after a deadline and after a cancel, and not more.
func TestDetach(t *testing.T) {
	defer func(d time.Duration) { CleanupTimeout = d }(CleanupTimeout)
	CleanupTimeout = 150 * time.Millisecond
	const hang = 2 * time.Second

	t.Run("deadline", func(t *testing.T) {
		parent, cancelParent := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancelParent()
		start := time.Now()
		ctx, cancel := Detach(parent)
		defer cancel()
		<-parent.Done()
		if ctx.Err() != nil {
			t.Fatalf("the detached context ended with its parent: %v", ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(hang):
			t.Fatal("the detached context did not end CleanupTimeout after the parent's deadline")
		}
		if el := time.Since(start); el < 200*time.Millisecond-5*time.Millisecond {
			t.Fatalf("the detached context ended after %v, before the parent's deadline plus CleanupTimeout", el)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := Detach(parent)
		defer cancel()
		cancelParent()
		if ctx.Err() != nil {
			t.Fatal("the detached context ended with its parent")
		}
		select {
		case <-ctx.Done():
		case <-time.After(hang):
			t.Fatal("the detached context did not end CleanupTimeout after its parent was cancelled")
		}
	})
	t.Run("values and cancel", func(t *testing.T) {
		type key struct{}
		ctx, cancel := Detach(context.WithValue(context.Background(), key{}, 1))
		if ctx.Value(key{}) != 1 {
			t.Fatal("the detached context lost its parent's values")
		}
		if _, ok := ctx.Deadline(); ok {
			t.Fatal("a context without deadline gave a detached context with one")
		}
		cancel()
		if ctx.Err() == nil {
			t.Fatal("cancel did not end the detached context")
		}
	})
}

// TestCtxErr: a failure of a call whose context is done matches the
// context's error and stays an *Error; definite answers and nil do not
// change.
func TestCtxErr(t *testing.T) {
	done, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	timeout := errors.New("i/o timeout")

	err := CtxErr(done, Fail("Put", "Hotel", 1, ErrUnknownOutcome, timeout))
	var e *Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, timeout) || !errors.As(err, &e) {
		t.Fatalf("got %v, want an *Error matching DeadlineExceeded, ErrUnknownOutcome and the cause", err)
	}
	if err := CtxErr(done, Fail("Get", "Hotel", 1, ErrNotFound, nil)); errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a definite answer got the context's error: %v", err)
	}
	if CtxErr(done, nil) != nil {
		t.Fatal("nil became an error")
	}
	if err := CtxErr(context.Background(), timeout); err != timeout {
		t.Fatalf("a live context changed the error: %v", err)
	}
	r := Repo[struct{}, string]{D: &Desc[struct{}, string]{Aggregate: "Hotel"}}
	err = r.ctxErr(done, "List", fmt.Errorf("wrapped: %w", timeout))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.Op != "List" {
		t.Fatalf("got %v, want an *Error of List matching DeadlineExceeded", err)
	}
}

// TestCtxErrAtTheDeadline: a failure returned once the deadline has
// passed matches DeadlineExceeded even before the context's own timer
// has fired (a socket deadline set to the context's fires first).
func TestCtxErrAtTheDeadline(t *testing.T) {
	ctx := deadlineOnly{d: time.Now().Add(-time.Millisecond)}
	if err := CtxErr(ctx, Fail("EnsureIndexes", "Match", nil, nil, errors.New("i/o timeout"))); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want it to match DeadlineExceeded", err)
	}
	if err := LeftToRepair(ctx, "Delete", "Match", "m", errors.New("i/o timeout")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LeftToRepair: got %v, want it to match DeadlineExceeded", err)
	} else if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("LeftToRepair: got %v, want it to match ErrUnknownOutcome (the write is done: not a write that failed)", err)
	}
}

// deadlineOnly is a context whose deadline has passed but whose Err does
// not say so yet.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }
func (c deadlineOnly) Err() error                  { return nil }
func (c deadlineOnly) Done() <-chan struct{}       { return nil }
func (c deadlineOnly) Value(any) any               { return nil }
