// Package runtime is what noamgen's generated repositories call: error
// values, pages and cursors, and the order-preserving key codec. It has no
// store dependency; store adapters live in its sub-packages.
package runtime

import (
	"errors"
	"fmt"
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
