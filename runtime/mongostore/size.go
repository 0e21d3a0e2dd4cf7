package mongostore

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"

	"github.com/noamgen/noamgen/runtime"
)

// MaxDocumentBytes is the largest document MongoDB stores (16 MiB). The
// adapter checks every document it inserts or replaces, and every update
// command, against it before sending, so that a write over the limit
// fails with runtime.ErrTooLarge and changes nothing also on servers that
// do not enforce the limit (FerretDB v1 stores larger documents). An update
// whose own values fit but which makes the stored document grow past the
// limit is refused by MongoDB (mapped to runtime.ErrTooLarge, nothing
// changed); FerretDB v1 stores it.
const MaxDocumentBytes = 16 << 20

// encode marshals v as the driver would for a collection opened by
// Collection (nil slices as empty arrays) and fails with
// runtime.ErrTooLarge when the result is over MaxDocumentBytes. Passing
// the result to the driver saves it marshalling v again.
func encode(op, agg string, id any, v any) (bson.Raw, error) {
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.NilSliceAsEmpty()
	if err := enc.Encode(v); err != nil {
		return nil, runtime.Fail(op, agg, id, runtime.ErrInvalid, err)
	}
	if buf.Len() > MaxDocumentBytes {
		return nil, tooLarge(op, agg, id, buf.Len(), nil)
	}
	return buf.Bytes(), nil
}

func tooLarge(op, agg string, id any, n int, cause error) error {
	detail := fmt.Sprintf("(MongoDB documents hold at most %d bytes)", MaxDocumentBytes)
	if n > 0 {
		detail = fmt.Sprintf("(%d bytes; MongoDB documents hold at most %d)", n, MaxDocumentBytes)
	}
	return runtime.FailAt(op, agg, id, detail, runtime.ErrTooLarge, cause)
}

// overLimit reports a write the server or the driver refused because a
// document would exceed the limit: BSONObjectTooLarge (10334), a document
// grown too large by an update (17419, 17420), or the driver's own check.
func overLimit(err error) bool {
	if errors.Is(err, driver.ErrDocumentTooLarge) {
		return true
	}
	var se mongo.ServerError
	return errors.As(err, &se) && (se.HasErrorCode(10334) || se.HasErrorCode(17419) || se.HasErrorCode(17420))
}

// fits reports whether v (a document or an update command) encodes to at
// most MaxDocumentBytes. An upper bound of the encoded size, computed
// without encoding or allocating, settles the usual case; only a value
// that may be too large is encoded to be sure.
func fits(v any) bool {
	if n, ok := sizeBound(reflect.ValueOf(v), 0); ok && n <= MaxDocumentBytes {
		return true
	}
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.NilSliceAsEmpty()
	// A value that does not encode is left to the driver, which reports it.
	return enc.Encode(v) != nil || buf.Len() <= MaxDocumentBytes
}

// checkSize fails with runtime.ErrTooLarge when v is over MaxDocumentBytes
// (see fits); op, agg and id name the write.
func checkSize(op, agg string, id any, v any) error {
	if fits(v) {
		return nil
	}
	_, err := encode(op, agg, id, v)
	return err
}

var (
	marshalerType      = reflect.TypeFor[bson.Marshaler]()
	valueMarshalerType = reflect.TypeFor[bson.ValueMarshaler]()
	timeType           = reflect.TypeFor[time.Time]()
	elemType           = reflect.TypeFor[bson.E]()
)

// sizeBound is an upper bound of the BSON size of v as a value (its type
// byte and key are counted by the caller), and false when it cannot tell
// (a type with its own marshaller, a cycle, a kind BSON has no form for).
func sizeBound(v reflect.Value, depth int) (int, bool) {
	if depth > 64 {
		return 0, false
	}
	if !v.IsValid() {
		return 0, true
	}
	t := v.Type()
	if t != timeType && t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && (t.Implements(marshalerType) || t.Implements(valueMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(valueMarshalerType)) {
		return 0, false
	}
	const elem = 2 + 12 // type byte, key terminator, an array index as key
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return 8, true
	case reflect.String:
		return 5 + v.Len(), true
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0, true
		}
		return sizeBound(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return 5 + v.Len(), true
		}
		n := 5
		isDoc := t.Elem() == elemType // bson.D: elements with keys
		for i := range v.Len() {
			e := v.Index(i)
			if isDoc {
				e = e.Field(1)
				n += len(v.Index(i).Field(0).String())
			}
			m, ok := sizeBound(e, depth+1)
			if !ok {
				return 0, false
			}
			n += elem + m
		}
		return n, true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return 0, false
		}
		n := 5
		it := v.MapRange()
		for it.Next() {
			m, ok := sizeBound(it.Value(), depth+1)
			if !ok {
				return 0, false
			}
			n += elem + len(it.Key().String()) + m
		}
		return n, true
	case reflect.Struct:
		if t == timeType {
			return 8, true
		}
		if t.PkgPath() == elemType.PkgPath() {
			// The driver's own types (Decimal128, Timestamp, ...) encode
			// otherwise than their fields.
			return 0, false
		}
		n := 5
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			m, ok := sizeBound(v.Field(i), depth+1)
			if !ok {
				return 0, false
			}
			n += elem + len(f.Name) + len(f.Tag.Get("bson")) + m
		}
		return n, true
	}
	return 0, false
}

// docBound is sizeBound of a document given as a bson.D, without boxing it.
func docBound(d bson.D) (int, bool) {
	n := 5
	for _, e := range d {
		m, ok := sizeBound(reflect.ValueOf(e.Value), 1)
		if !ok {
			return 0, false
		}
		n += 2 + len(e.Key) + m
	}
	return n, true
}
