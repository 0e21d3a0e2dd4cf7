package runtime

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Openers are the stores a generated package holds repositories of one
// aggregate for, each known by the type of the handle its constructor
// takes (*bbolt.DB, redis.UniversalClient, *dynamodb.Client,
// *mongo.Database). Each store's generated file adds its constructor with
// AddOpener; the generated New<T>Repository calls Open, so that a program
// picks the store at run time from the handle it has, and its tests can
// run one suite over every store without a table of constructors per
// store. R is the aggregate's repository interface. Adding is done from
// init functions, opening from any goroutine after them.
type Openers[R any] struct {
	aggregate string
	list      []opener[R]
}

// NewOpeners returns the empty set of aggregate's stores.
func NewOpeners[R any](aggregate string) *Openers[R] {
	return &Openers[R]{aggregate: aggregate}
}

type opener[R any] struct {
	store  string
	handle string // the handle's type, for errors
	open   func(h any, opts ...Option) (R, bool)
}

// AddOpener adds to o the constructor of store's repository, which takes a
// handle of type H. No two stores take the same handle type (a store's
// registration in noamgen's templates names it, and a second store
// naming it is refused), so the order of adding does not matter.
func AddOpener[R, H, S any](o *Openers[R], store string, constructor func(H, ...Option) S) {
	o.list = append(o.list, opener[R]{store: store, handle: reflect.TypeFor[H]().String(), open: func(h any, opts ...Option) (R, bool) {
		c, ok := h.(H)
		if !ok {
			var zero R
			return zero, false
		}
		r, ok := any(constructor(c, opts...)).(R)
		return r, ok
	}})
}

// Open returns the repository over handle on the store whose constructor
// takes handle's type, with opts. It fails with ErrInvalid, and opens
// nothing, for a nil handle (untyped or a nil pointer, map or interface
// value) and for a handle of a type no store takes; the error names the
// stores and their handle types.
func (o *Openers[R]) Open(handle any, opts ...Option) (R, error) {
	var zero R
	if isNil(handle) {
		return zero, &Error{Op: "New", Aggregate: o.aggregate, Kind: ErrInvalid, Detail: fmt.Sprintf("over %T", handle), Err: errors.New("nil handle")}
	}
	for _, op := range o.list {
		if r, ok := op.open(handle, opts...); ok {
			return r, nil
		}
	}
	return zero, &Error{Op: "New", Aggregate: o.aggregate, Kind: ErrInvalid, Detail: fmt.Sprintf("over %T", handle), Err: fmt.Errorf("no store of this package takes it (%s)", o.String())}
}

// Stores lists the names of o's stores, in the order they were added.
func (o *Openers[R]) Stores() []string {
	out := make([]string, len(o.list))
	for i, op := range o.list {
		out[i] = op.store
	}
	return out
}

// String lists o's stores with their handle types: "bolt takes *bbolt.DB,
// redis takes redis.UniversalClient".
func (o *Openers[R]) String() string {
	if len(o.list) == 0 {
		return "none"
	}
	parts := make([]string, len(o.list))
	for i, op := range o.list {
		parts[i] = op.store + " takes " + op.handle
	}
	return strings.Join(parts, ", ")
}

// isNil reports whether h is nil or holds a nil pointer, map, slice,
// channel, function or interface value.
func isNil(h any) bool {
	if h == nil {
		return true
	}
	switch v := reflect.ValueOf(h); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}
