package runtime

import (
	"context"
	"errors"
	"time"
)

// CleanupTimeout bounds the work a write goes on with once its caller's
// context is done: the read-back that decides an unknown outcome, the undo
// of index entries a failed write added, the removal of stale entries
// after a write. That work runs on a context from Detach, which ends
// CleanupTimeout after the caller's context does, so that every repository
// call returns within its deadline plus CleanupTimeout (RELIABILITY.md,
// "Deadlines"). What is left undone then is what a crash would leave:
// reads verify index entries and Repair removes the stale ones.
var CleanupTimeout = time.Second

// Detach returns a context for the work a write must finish after ctx is
// done: it carries ctx's values, is not cancelled with ctx, and ends
// CleanupTimeout after ctx ends (its deadline passes or it is cancelled),
// or when cancel is called. A context that never ends gives a detached
// context that never ends either (until cancel).
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := CleanupTimeout
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		out, cancelDeadline = context.WithDeadline(out, d.Add(budget))
		c := cancel
		cancel = func() { cancelDeadline(); c() }
	}
	// A context cancelled before its deadline (or without one) ends the
	// detached one CleanupTimeout later.
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(budget, cancel)
		context.AfterFunc(out, func() { t.Stop() })
	})
	return out, func() { stop(); cancel() }
}

// CtxErr makes err, the failure of an operation whose context ctx is done,
// match ctx's error (context.DeadlineExceeded or context.Canceled) under
// errors.Is, keeping it an *Error: a store's own error for a command cut
// short by the deadline (a network timeout) does not say so. An error
// that is a definite answer (ErrNotFound, ErrDuplicate, ErrConflict,
// ErrInvalid, ErrBadCursor, ErrOverflow, ErrTooLarge) is returned as it
// is, and so is nil: a call that finished its work succeeded.
func CtxErr(ctx context.Context, err error) error {
	cerr := ctxDone(ctx)
	if err == nil || cerr == nil || errors.Is(err, cerr) {
		return err
	}
	for _, kind := range []error{ErrNotFound, ErrDuplicate, ErrConflict, ErrInvalidValue, ErrBadCursor, ErrOverflow, ErrTooLarge} {
		if errors.Is(err, kind) {
			return err
		}
	}
	if e, ok := err.(*Error); ok {
		c := *e
		if c.Err == nil {
			c.Err = cerr
		} else {
			c.Err = errors.Join(c.Err, cerr)
		}
		return &c
	}
	return errors.Join(err, cerr)
}

// ctxErr is CtxErr for operation op of r, and makes an error that is not
// an *Error one.
func (r Repo[T, K]) ctxErr(ctx context.Context, op string, err error) error {
	err = notReady(r.S, op, r.D.Aggregate, err)
	err = CtxErr(ctx, err)
	if _, ok := err.(*Error); err != nil && !ok && ctxDone(ctx) != nil {
		return Fail(op, r.D.Aggregate, nil, nil, err)
	}
	return err
}

// ctxErrAt is ctxErr on *err, for a deferred call.
func (r Repo[T, K]) ctxErrAt(ctx context.Context, op string, err *error) {
	*err = r.ctxErr(ctx, op, *err)
}

// LeftToRepair is the error of a write that is done but whose cleanup (the
// listing, the counter, the removal of its old index entries) failed with
// errs because the caller's context ended: a *Error of operation op on
// aggregate agg and block key id, matching ctx's error, whose detail says
// the write is done and the rest is left to Repair (reads verify index
// entries meanwhile). It also matches ErrUnknownOutcome, the one error
// kind of a write that does not mean "nothing was written": a caller that
// tells writes apart by errors.Is alone reads the block or retries, and
// does not take it for a write that failed. It is nil while ctx is not
// done (a cleanup failure is then best effort, as before) or when no
// cleanup step failed.
func LeftToRepair(ctx context.Context, op, agg string, id any, errs ...error) error {
	cerr := ctxDone(ctx)
	if cerr == nil {
		return nil
	}
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return FailAt(op, agg, id, "(the block write is done; the cleanup after it was cut short and is left to Repair)", errWritten{}, errors.Join(append(failed, cerr)...))
}

// errWritten is LeftToRepair's kind: the write is done, and it matches
// ErrUnknownOutcome.
type errWritten struct{}

func (errWritten) Error() string        { return "written" }
func (errWritten) Is(target error) bool { return target == ErrUnknownOutcome }

// ctxDone is ctx.Err(), and context.DeadlineExceeded once ctx's deadline
// has passed although ctx does not say so yet: a socket deadline set to
// the context's (go-redis with ContextTimeoutEnabled) can fire a moment
// before the context's own timer.
func ctxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// Unanswered is the error of write op of block id of aggregate agg that
// failed with err, a failure that is no answer of the store (a timeout,
// the caller's context ending, a broken connection): when the command
// was sent, it may have been applied, so the error is ErrUnknownOutcome
// (wrapping err, and so the context's error); when it was not (sent
// false: the context was done before it left), nothing was written and
// the error is err's plain failure. Every adapter classifies a write
// without reply through it.
func Unanswered(op, agg string, id any, sent bool, err error) error {
	if !sent {
		return Fail(op, agg, id, nil, err)
	}
	return FailAt(op, agg, id, "(outcome unknown: the write was sent and no reply came)", ErrUnknownOutcome, err)
}
