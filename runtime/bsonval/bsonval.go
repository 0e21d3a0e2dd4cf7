// Package bsonval is the project's value codec for stores that keep one
// value per entry and have no value types of their own (bbolt, Redis): a
// value is its BSON type byte followed by the BSON bytes of the value, so
// that the bson struct tags of nested types apply as they do on MongoDB and
// a value round-trips identically on every store.
//
// The bytes are those of bson.MarshalValue. Encode and Append make them
// with an encoder reused across calls (bson.MarshalValue sets one up and
// grows a new buffer for every value, then copies the result twice), and
// strings, int64s and booleans, the types of counts, versions and most
// top-level fields, without reflection; Decode reads those three directly
// too. Values of structs, slices, strings, numbers and booleans (a game's
// rounds) go through the fast codec of fast.go, which writes and reads the
// driver's bytes without its value reader and writer; every other type,
// and every value that needs one of the driver's conversions, goes through
// the driver. Bytes that are not one well-formed BSON value are refused
// with ErrMalformed and never reach the driver's decoder.
package bsonval

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Encode encodes v with the MongoDB driver's BSON codec: the BSON type
// byte, then the value's bytes.
func Encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendString(make([]byte, 0, 6+len(x)), x), nil
	case int64:
		return EncodeInt(x), nil
	case bool:
		return appendBool(make([]byte, 0, 2), x), nil
	}
	e := getEncoder()
	t, data, err := e.Encode(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+len(data))
	out[0] = byte(t)
	copy(out[1:], data)
	putEncoder(e)
	return out, nil
}

// EncodeString is Encode for stores that keep strings (Redis): the same
// bytes, copied once into the string.
func EncodeString(v any) (string, error) {
	var buf [64]byte
	switch x := v.(type) {
	case string:
		return string(appendString(buf[:0], x)), nil
	case int64:
		return string(AppendInt(buf[:0], x)), nil
	case bool:
		return string(appendBool(buf[:0], x)), nil
	}
	e := getEncoder()
	t, data, err := e.Encode(v)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(1 + len(data))
	b.WriteByte(byte(t))
	b.Write(data)
	putEncoder(e)
	return b.String(), nil
}

// Append appends the encoding of v (the bytes Encode returns) to dst.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendString(dst, x), nil
	case int64:
		return AppendInt(dst, x), nil
	case bool:
		return appendBool(dst, x), nil
	}
	e := getEncoder()
	t, data, err := e.Encode(v)
	if err != nil {
		return dst, err
	}
	dst = append(append(dst, byte(t)), data...)
	putEncoder(e)
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = append(dst, byte(bson.TypeString))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)+1))
	return append(append(dst, s...), 0)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, byte(bson.TypeBoolean), 1)
	}
	return append(dst, byte(bson.TypeBoolean), 0)
}

// ValueEncoder encodes single values with the driver's BSON encoder: it
// writes one-element documents {"": v} with a value writer and a
// bson.Encoder that are reused, and cuts the value out of them (the
// element's value is what bson.MarshalValue returns). Encode and Append
// use a pool of them; runtime/mongostore keeps its own, which encodes nil
// slices as empty arrays, as its collections do.
type ValueEncoder struct {
	doc        []byte
	vw         bson.ValueWriter
	enc        *bson.Encoder
	nilAsEmpty bool
	maxDepth   int // 0: MaxDepth
}

// SetMaxDepth makes e refuse values nested deeper than n documents and
// arrays (a store whose server allows less than MaxDepth: MongoDB,
// DynamoDB); n is at most MaxDepth.
func (e *ValueEncoder) SetMaxDepth(n int) { e.maxDepth = min(n, MaxDepth) }

func (e *ValueEncoder) limit() int {
	if e.maxDepth == 0 {
		return MaxDepth
	}
	return e.maxDepth
}

// DepthError is the error of encoding a value nested deeper than Max
// documents and arrays (MaxDepth, or a store's ValueEncoder.SetMaxDepth):
// the reader would refuse it, so it is never written. It wraps
// runtime.ErrTooLarge.
type DepthError struct{ Max int }

func (e *DepthError) Error() string {
	return fmt.Sprintf("value nested deeper than %d levels of documents and arrays (the store's Caps.MaxDepth)", e.Max)
}

// Unwrap makes the error a runtime.ErrTooLarge.
func (e *DepthError) Unwrap() error { return runtime.ErrTooLarge }

// CheckDepth fails with a *DepthError when value data of BSON type t
// (well-formed, as an encoder made it) nests deeper than max documents and
// arrays.
func CheckDepth(t bson.Type, data []byte, max int) error {
	if _, ok := fullLen(t, data, 0, max); !ok {
		return &DepthError{Max: max}
	}
	return nil
}

// NewValueEncoder returns an encoder; with nilSliceAsEmpty, nil slices
// encode as empty arrays (bson.Encoder.NilSliceAsEmpty) rather than null.
func NewValueEncoder(nilSliceAsEmpty bool) *ValueEncoder {
	e := &ValueEncoder{doc: make([]byte, 0, 512), nilAsEmpty: nilSliceAsEmpty}
	e.vw = bson.NewDocumentWriter(e)
	e.enc = bson.NewEncoder(nil)
	if nilSliceAsEmpty {
		e.enc.NilSliceAsEmpty()
	}
	return e
}

// Write receives the document when the value writer flushes it.
func (e *ValueEncoder) Write(p []byte) (int, error) {
	e.doc = append(e.doc, p...)
	return len(p), nil
}

// Large reports whether e's buffer grew past 1 MiB: a huge value's buffer
// should not stay pinned in a pool.
func (e *ValueEncoder) Large() bool { return cap(e.doc) > 1<<20 }

var encoders = sync.Pool{New: func() any { return NewValueEncoder(false) }}

func getEncoder() *ValueEncoder { return encoders.Get().(*ValueEncoder) }

// putEncoder returns e to the pool, unless its buffer grew large. An
// encoder whose encoding failed is not returned: its value writer may be
// in the middle of a document.
func putEncoder(e *ValueEncoder) {
	if !e.Large() {
		encoders.Put(e)
	}
}

// Encode encodes v: its BSON type and bytes, valid until e is used again.
// After an error e must not be used again (its value writer may be in the
// middle of a document).
func (e *ValueEncoder) Encode(v any) (bson.Type, []byte, error) {
	e.doc = e.doc[:0]
	// The fast encoder (fast.go) writes the same bytes without the
	// driver's value writer, for the types it has a plan for.
	if out, t, depth, ok := appendFast(e.doc, v, e.nilAsEmpty); ok {
		e.doc = out
		if depth > e.limit() { // a value of the type may be too deep: is this one?
			if err := CheckDepth(t, out, e.limit()); err != nil {
				return 0, nil, err
			}
		}
		return t, out, nil
	}
	dw, err := e.vw.WriteDocument()
	if err != nil {
		return 0, nil, err
	}
	ev, err := dw.WriteDocumentElement("")
	if err != nil {
		return 0, nil, err
	}
	e.enc.Reset(ev)
	if err := e.enc.Encode(v); err != nil {
		return 0, nil, err
	}
	if err := dw.WriteDocumentEnd(); err != nil {
		return 0, nil, err
	}
	// int32 length, type byte, empty name (one 0), the value, 0.
	if len(e.doc) < 7 {
		return 0, nil, fmt.Errorf("bsonval: short document %x", e.doc)
	}
	t, data := bson.Type(e.doc[4]), e.doc[6:len(e.doc)-1]
	if err := CheckDepth(t, data, e.limit()); err != nil {
		return 0, nil, err
	}
	return t, data, nil
}

// Decode decodes a value made by Encode into v, a pointer.
func Decode(data []byte, v any) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty value", ErrMalformed)
	}
	return DecodeValue(bson.Type(data[0]), data[1:], v)
}

// DecodeValue decodes the bytes data of a BSON value of type t into v, a
// pointer, as bson.UnmarshalValue does: strings, int64s and booleans of
// their own type directly, other values with the fast decoder (fast.go)
// when it reads v's type and the value, with the driver otherwise
// (everything else, and every conversion). Bytes that are not one
// well-formed value fail with ErrMalformed.
func DecodeValue(t bson.Type, data []byte, v any) error {
	switch p := v.(type) {
	case *string:
		if s, ok := readString(t, data); ok {
			*p = s
			return nil
		}
	case *int64:
		if t == bson.TypeInt64 && len(data) == 8 {
			*p = int64(binary.LittleEndian.Uint64(data))
			return nil
		}
	case *bool:
		if t == bson.TypeBoolean && len(data) == 1 && data[0] <= 1 {
			*p = data[0] == 1
			return nil
		}
	}
	if decodeFast(t, data, v) {
		return nil
	}
	if !wellFormed(t, data) {
		return fmt.Errorf("%w: %d bytes of a %s value", ErrMalformed, len(data), t)
	}
	return bson.UnmarshalValue(t, data, v)
}

// ErrMalformed is the error of decoding bytes that are not one well-formed
// BSON value (a stored value cut short or overwritten): they never reach
// the driver's decoder, which can loop forever on some of them.
var ErrMalformed = errors.New("bsonval: malformed BSON value")

// readString reads a well-formed BSON string value (int32 length with the
// terminating 0, the bytes, 0).
func readString(t bson.Type, b []byte) (string, bool) {
	if t != bson.TypeString || len(b) < 5 {
		return "", false
	}
	n := binary.LittleEndian.Uint32(b)
	if n < 1 || n > math.MaxInt32 || uint64(n) != uint64(len(b)-4) || b[len(b)-1] != 0 {
		return "", false
	}
	return string(b[4 : len(b)-1]), true
}

// EncodeInt encodes n as Encode(n) does (a BSON int64), without
// reflection: counts and versions are written on every write.
func EncodeInt(n int64) []byte { return AppendInt(make([]byte, 0, 9), n) }

// AppendInt appends the encoding of n (as EncodeInt makes it) to dst.
func AppendInt(dst []byte, n int64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, byte(bson.TypeInt64)), uint64(n))
}

// DecodeInt decodes a value made by EncodeInt.
func DecodeInt(data []byte) (int64, error) {
	if len(data) != 9 || bson.Type(data[0]) != bson.TypeInt64 {
		return 0, fmt.Errorf("want a BSON int64, have %x", data)
	}
	return int64(binary.LittleEndian.Uint64(data[1:])), nil
}
