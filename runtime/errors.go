// Package runtime is what noamgen's generated repositories call: error
// values, pages and cursors, and the order-preserving key codec. It has no
// store dependency; store adapters live in its sub-packages.
package runtime

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Errors returned by generated repositories. Match them with errors.Is; the
// returned error also says which aggregate and block key, and wraps the
// store's own error when there is one.
var (
	// ErrNotFound: the block (or the element of a partitioned entry) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a block with that key (or a unique value) already exists.
	ErrDuplicate = errors.New("already exists")
	// ErrConflict: the stored version differs from the expected one.
	ErrConflict = errors.New("version conflict")
	// ErrBadCursor: a page cursor is malformed, tampered with, or belongs to another query.
	ErrBadCursor = errors.New("bad cursor")
	// ErrInvalidValue: a string id, key part or lookup value is not valid
	// UTF-8. Stores keep strings as UTF-8 (BSON strings; MongoDB rejects
	// invalid UTF-8 and FerretDB replaces it with U+FFFD), so such a value
	// is refused at the call on every store rather than changed silently.
	ErrInvalidValue = errors.New("invalid value")
	// ErrInvalid is ErrInvalidValue under its short name; it also reports
	// a nil aggregate passed to Create or Put.
	ErrInvalid = ErrInvalidValue
	// ErrOverflow: a counter of enumerable keys is at math.MaxInt64 and
	// cannot allocate another number. Nothing is written.
	ErrOverflow = errors.New("counter overflow")
	// ErrOutOfRange: an Add<Field> (or a TUpdate's Add<Field>) would take
	// the field past the range of its Go type (an int8 past 127). The
	// store checks it in the same atomic write as the addition; nothing
	// is written.
	ErrOutOfRange = errors.New("out of range")
	// ErrTooLarge: the write would make a block (or an entry) larger than
	// the store accepts (Caps.MaxValueBytes: MongoDB's 16 MiB document,
	// DynamoDB's 400 KB item). Nothing is written.
	ErrTooLarge = errors.New("too large")
	// ErrUnknownOutcome: the store did not say whether the write was
	// applied (its reply was lost, the deadline passed while the command
	// was in flight, or a cluster redirect was left after the client's
	// retries once the command may have run). Read the block to find out,
	// or retry the write; the lookups stay right either way (reads verify,
	// Repair removes what a failed attempt left).
	ErrUnknownOutcome = errors.New("outcome unknown")
	// ErrUnavailable: the store refused the request before applying it (a
	// cluster slot moving or without a master, a server that is down) and
	// the client's retries did not get through. Nothing was written:
	// retry later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrUnreadable: a stored block cannot be decoded (its bytes were
	// changed behind the repository's back, or an entry holds a value of
	// another type). The *Error names the block (ID) and the entry; List
	// and All report it and go on with the next block, Repair skips it and
	// lists it in RepairReport.Unreadable.
	ErrUnreadable = errors.New("unreadable block")
	// ErrNotReady: the store lacks what the repository's EnsureIndexes
	// creates or records: call EnsureIndexes once (it is idempotent) at
	// start-up, before using the repository. The call changed nothing. On
	// every store, until EnsureIndexes has recorded the repository's
	// layout, reads through a lookup fail with it, and so do, on an
	// aggregate with a unique lookup, Create, Put, CreateMany, PutMany and
	// the entry-level writes of a looked-up field, whatever values they
	// hold; a missing DynamoDB table or MongoDB unique index too. No store
	// serves a call before EnsureIndexes with a weaker guarantee (a unique
	// value not enforced).
	ErrNotReady = errors.New("not ready: call EnsureIndexes first")
	// ErrIndexBuilding: the lookup was added to a collection that already
	// held data and EnsureIndexes is still building its index from the
	// blocks (or a build stopped: run EnsureIndexes again). Its reads
	// fail until the build is complete (never a partial answer), and, if
	// it is unique, so do the writes ErrNotReady names (Create, Put, their
	// batches, writes of a looked-up field), whatever values they hold.
	// Nothing was changed.
	ErrIndexBuilding = errors.New("lookup index being built")
	// ErrLayout: the repository's layout is not the one the data is in,
	// and nothing was written. Either a block is stored in another layout
	// than the repository's (the model's strategy or partitioning changed
	// since it was written) and the operation could not read or write it
	// right in both: the *Error names the entry and both layouts, and
	// Migrate rewrites old blocks into the current layout. Or the
	// collection's recorded layout is a newer build's (its EnsureIndexes
	// added a lookup or changed how blocks are laid out) and a write of
	// this build would leave it incomplete (a rolling deploy: see
	// RELIABILITY.md, "Rolling deploys and model changes"): the *Error
	// names what this build's model lacks; serve the write from the newer
	// build (or, to roll back, run this build's EnsureIndexes).
	ErrLayout = errors.New("stored in another layout")
	// ErrUnsupported: the store cannot answer the call as asked (a
	// descending List on a store whose listing has no key order,
	// Caps.OrderedScan false). Nothing was read or written. It is
	// errors.ErrUnsupported, so errors.Is matches either.
	ErrUnsupported = errors.ErrUnsupported
)

// Error is the error type of generated repositories.
type Error struct {
	Op        string // repository method, e.g. "Get"
	Aggregate string // aggregate type name, e.g. "Game"
	ID        any    // block key, nil when the operation has none
	Kind      error  // one of the Err values above, or nil for store failures
	Detail    string // extra words, e.g. "rounds[7]"
	Err       error  // the store's error, if any
}

func (e *Error) Error() string {
	msg := "noam: " + e.Aggregate
	if e.ID != nil {
		msg += fmt.Sprintf(" %v", e.ID)
	}
	msg += ": " + e.Op
	if e.Detail != "" {
		msg += " " + e.Detail
	}
	if e.Kind != nil {
		msg += ": " + e.Kind.Error()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the error kind and the store's error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Fail builds an *Error for operation op on aggregate agg with block key id
// (nil for none), of the given kind (nil for a plain store failure),
// wrapping cause (may be nil).
func Fail(op, agg string, id any, kind, cause error) error {
	return &Error{Op: op, Aggregate: agg, ID: id, Kind: kind, Err: cause}
}

// FailAt is Fail with a detail, such as the entry key an operation missed.
func FailAt(op, agg string, id any, detail string, kind, cause error) error {
	return &Error{Op: op, Aggregate: agg, ID: id, Kind: kind, Detail: detail, Err: cause}
}

// CheckUTF8 fails with ErrInvalidValue (as an *Error of operation op on
// aggregate agg and block key id) if one of values is not valid UTF-8.
// Repositories call it on string ids and string values that become keys
// before writing or reading anything, so that no store changes them.
func CheckUTF8(op, agg string, id any, values ...string) error {
	for _, v := range values {
		if !utf8.ValidString(v) {
			return FailAt(op, agg, printableID(id), fmt.Sprintf("%+q", v), ErrInvalidValue, errors.New("not valid UTF-8"))
		}
	}
	return nil
}

// NotSent is the error of a write of the lookup protocol (index entries
// first, then the block) whose context was done after its entries were
// added but before the block write was sent: nothing of the block was
// written. undoErr is what removing those entries (with a short budget of
// their own) failed with: nil when they are gone, so that the failed write
// changed nothing; otherwise they stay for Repair (reads skip them) and the
// error says so. The error wraps ctxErr (context.Canceled or
// context.DeadlineExceeded), not ErrUnknownOutcome: the outcome is known.
func NotSent(op, agg string, id any, ctxErr, undoErr error) error {
	detail := "(context done before the block write was sent: nothing written)"
	if undoErr != nil {
		detail = fmt.Sprintf("(context done before the block write was sent: the block is unchanged, but removing the lookup entries added before failed (%v); they stay until Repair, reads skip them)", undoErr)
	}
	return FailAt(op, agg, id, detail, nil, ctxErr)
}

// CheckKey fails with ErrInvalidValue if a string component of the encoded
// key (a block key or a lookup value made by the key codec) is not valid
// UTF-8; what names the key in the error (e.g. "lookup Hotel.name").
func CheckKey(op, agg string, id any, what string, key []byte) error {
	if s, bad := invalidString(key); bad {
		return FailAt(op, agg, printableID(id), fmt.Sprintf("%s %+q", what, s), ErrInvalidValue, errors.New("not valid UTF-8"))
	}
	return nil
}

// TooLarge fails with ErrTooLarge (as an *Error of operation op on
// aggregate agg and block key id): what (e.g. "key of 40002 bytes") is
// over limit (e.g. "bbolt's 32768-byte key limit"). A long string id is
// shortened in the error, so that the message stays readable.
func TooLarge(op, agg string, id any, what, limit string) error {
	return FailAt(op, agg, shortID(id), fmt.Sprintf("(%s over %s)", what, limit), ErrTooLarge, nil)
}

// shortID keeps an id whose text is over 64 bytes out of an error's text:
// its first 32 bytes and its length stand for it.
func shortID(id any) any {
	if s := fmt.Sprint(id); len(s) > 64 {
		return fmt.Sprintf("%+q... (%d bytes)", strings.ToValidUTF8(s[:32], ""), len(s))
	}
	return printableID(id)
}

// printableID keeps an invalid string id out of the error's text as raw
// bytes (it is quoted instead).
func printableID(id any) any {
	if s, ok := id.(string); ok && !utf8.ValidString(s) {
		return fmt.Sprintf("%+q", s)
	}
	return id
}

// ReadyChecker is implemented by stores whose driver reports, in its own
// terms, that something EnsureIndexes creates is missing (DynamoDB's
// ResourceNotFoundException for a table): NotReady returns the words
// naming what is missing (e.g. "table Hotel"), or "" when err is not such
// an error.
type ReadyChecker interface {
	NotReady(err error) string
}

// notReady makes a store failure (an *Error of no kind, or a bare error)
// that store s recognises as a missing table or index an *Error of kind
// ErrNotReady, whatever path of the adapter it came from.
func notReady(s any, op, agg string, err error) error {
	rc, ok := s.(ReadyChecker)
	if !ok || err == nil {
		return err
	}
	var e *Error
	if errors.As(err, &e) && e.Kind != nil {
		return err
	}
	what := rc.NotReady(err)
	if what == "" {
		return err
	}
	detail := "(" + what + " missing: call EnsureIndexes once before using the repository)"
	if e == nil {
		return FailAt(op, agg, nil, detail, ErrNotReady, err)
	}
	c := *e
	if c.Detail != "" {
		detail = c.Detail + " " + detail
	}
	c.Detail, c.Kind = detail, ErrNotReady
	return &c
}
