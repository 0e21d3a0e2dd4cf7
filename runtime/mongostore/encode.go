package mongostore

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/noamgen/noamgen/runtime/bsonval"
)

// The documents of whole-block writes (Put, Create) and the filters and
// update commands of Update are built here as BSON bytes, in buffers taken
// from a pool, and handed to the driver as bson.Raw: no bson.D, no boxed
// entry values, and the driver does not encode them again (it sends an
// update command's bytes as they are and copies a document's). The bytes
// are those the driver makes of the equivalent bson.D on a collection
// opened by Collection (nil slices as empty arrays): strings, integers,
// booleans and doubles are appended here, every other value goes through
// the driver's encoder (the default registry), reused across calls.

// maxPooled is the largest buffer returned to the pool: a huge document
// should not stay pinned.
const maxPooled = 1 << 20

// docBuf is a buffer in which documents are built.
type docBuf struct {
	b   []byte
	val *bsonval.ValueEncoder // nil until a value needs the driver's encoder
}

var docBufs = sync.Pool{New: func() any { return &docBuf{b: make([]byte, 0, 1024)} }}

// getDocBuf takes an empty buffer from the pool.
func getDocBuf() *docBuf {
	w := docBufs.Get().(*docBuf)
	w.b = w.b[:0]
	return w
}

// release returns w to the pool. It must be called only once nothing
// refers to w's bytes any more: after the driver call they were given to
// has returned (the driver copies a command into its wire message during
// the call and keeps no reference after it).
func (w *docBuf) release() {
	if cap(w.b) <= maxPooled {
		docBufs.Put(w)
	}
}

// start begins a document (or an embedded one, after its header) and
// returns the position of its length.
func (w *docBuf) start() int32 {
	var i int32
	i, w.b = bsoncore.ReserveLength(w.b)
	return i
}

// end ends the document started at i.
func (w *docBuf) end(i int32) {
	w.b, _ = bsoncore.AppendDocumentEnd(w.b, i)
}

// A path is an element's key: key, or key.idx when at is set (the path
// of an array element).
type path struct {
	key string
	idx int
	at  bool
}

func pathOf(k string) path { return path{key: k} }

// header appends an element's type and key.
func (w *docBuf) header(t bsoncore.Type, p path) {
	w.b = append(w.b, byte(t))
	w.b = append(w.b, p.key...)
	if p.at {
		w.b = append(w.b, '.')
		w.b = strconv.AppendInt(w.b, int64(p.idx), 10)
	}
	w.b = append(w.b, 0)
}

// startDoc begins an embedded document element.
func (w *docBuf) startDoc(p path) int32 {
	w.header(bsoncore.TypeEmbeddedDocument, p)
	return w.start()
}

func (w *docBuf) int64(p path, n int64) {
	w.header(bsoncore.TypeInt64, p)
	w.b = bsoncore.AppendInt64(w.b, n)
}

// int appends a Go int as the driver encodes it: an int32 when it fits,
// an int64 otherwise.
func (w *docBuf) int(p path, n int) {
	if int64(n) >= math.MinInt32 && int64(n) <= math.MaxInt32 {
		w.header(bsoncore.TypeInt32, p)
		w.b = bsoncore.AppendInt32(w.b, int32(n))
		return
	}
	w.header(bsoncore.TypeInt64, p)
	w.b = bsoncore.AppendInt64(w.b, int64(n))
}

func (w *docBuf) string(p path, v string) {
	w.header(bsoncore.TypeString, p)
	w.b = bsoncore.AppendString(w.b, v)
}

func (w *docBuf) bool(p path, b bool) {
	w.header(bsoncore.TypeBoolean, p)
	w.b = bsoncore.AppendBoolean(w.b, b)
}

// value appends element p with value v, a value as a bson.D element
// would hold it.
func (w *docBuf) value(p path, v any) error {
	switch x := v.(type) {
	case nil:
		w.header(bsoncore.TypeNull, p)
	case string:
		w.string(p, x)
	case int64:
		w.header(bsoncore.TypeInt64, p)
		w.b = bsoncore.AppendInt64(w.b, x)
	case int:
		w.int(p, x)
	case bool:
		w.header(bsoncore.TypeBoolean, p)
		w.b = bsoncore.AppendBoolean(w.b, x)
	case float64:
		w.header(bsoncore.TypeDouble, p)
		w.b = bsoncore.AppendDouble(w.b, x)
	default:
		return w.encoded(p, v)
	}
	return nil
}

// addr appends element k with the value p points at (a pointer from
// runtime.Field.Addr or to a block key, never nil), encoded as the value
// itself would be: only for types whose encoding does not depend on the
// value being addressable (see byAddr).
func (w *docBuf) addr(k string, p any) error {
	switch x := p.(type) {
	case *string:
		w.string(pathOf(k), *x)
	case *int64:
		w.int64(pathOf(k), *x)
	case *int:
		w.int(pathOf(k), *x)
	case *bool:
		w.bool(pathOf(k), *x)
	case *float64:
		w.header(bsoncore.TypeDouble, pathOf(k))
		w.b = bsoncore.AppendDouble(w.b, *x)
	default:
		return w.encoded(pathOf(k), p)
	}
	return nil
}

// encoded appends element p with v encoded by the driver's encoder.
func (w *docBuf) encoded(p path, v any) error {
	e := w.val
	if e == nil {
		e = bsonval.NewValueEncoder(true) // as Collection's collections encode
	}
	w.val = nil // not reused if the encoding fails half-way
	t, data, err := e.Encode(v)
	if err != nil {
		return err
	}
	w.header(bsoncore.Type(t), p)
	w.b = append(w.b, data...)
	if !e.Large() {
		w.val = e
	}
	return nil
}

// elements appends the elements of document doc (as they are).
func (w *docBuf) elements(doc []byte) error {
	if len(doc) < 5 {
		return fmt.Errorf("short document %x", doc)
	}
	w.b = append(w.b, doc[4:len(doc)-1]...)
	return nil
}

// byAddr reports whether values of type t encode the same through a
// pointer (as docBuf.addr encodes them) as boxed in an interface (as a
// bson.D element holds them). A value reached through a pointer is
// addressable, and the driver then uses marshallers declared on *t and,
// inside a struct or an array, on the pointers to its fields' types; a
// boxed value is not addressable. Slices and maps reach their elements
// the same way in both cases, so only t itself matters for them.
func byAddr(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Array, reflect.Interface:
		return false
	}
	p := reflect.PointerTo(t)
	for _, m := range []reflect.Type{marshalerType, valueMarshalerType} {
		if p.Implements(m) && !t.Implements(m) {
			return false
		}
	}
	return true
}
