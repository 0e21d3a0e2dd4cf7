package bsonval

import (
	"encoding/binary"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The fast decoder reads the values entries mostly hold (structs of
// strings, numbers, booleans, and slices and structs of those, such as a
// game's rounds) straight from their BSON bytes, where the driver's codec
// goes through its value reader and boxes every value it decodes: about
// three allocations per string where one is needed.
//
// It is a shortcut, never a second codec. A plan is built only for types
// whose every part the driver decodes by kind alone (no Unmarshaler, no
// type of the driver's own or of the standard library the driver treats
// specially, no inline, pointer, map, interface or array); it decodes only
// well-formed values of exactly the BSON types the driver maps without
// conversion choices, and only into a zero value (an empty slice for a
// slice). Anything else, a malformed value included, makes it give up
// before the driver decodes the value from the start: the result, the
// error and what the target holds are the driver's. FuzzFastAgreesWithDriver
// checks that whatever the fast decoder accepts, the driver decodes to the
// same value.

// planKind is what a plan decodes into.
type planKind uint8

const (
	planString planKind = iota + 1
	planBool
	planInt   // int, int8 ... int64
	planUint  // uint, uint8 ... uint64, uintptr
	planFloat // float64
	planFloat32
	planSlice
	planStruct
)

// plan decodes one BSON value into a Go value of one type.
type plan struct {
	kind   planKind
	bits   int   // size of an int, uint or float kind in bits
	depth  int   // the deepest nesting of documents and arrays of a value
	elem   *plan // planSlice: the element's plan
	typ    reflect.Type
	fields []fieldPlan // planStruct: the decoded fields, in declaration order
}

// fieldPlan is one field of a struct plan: its BSON key, its index, and
// its tag's options that encoding follows.
type fieldPlan struct {
	name      string
	index     int
	plan      *plan
	omitEmpty bool
	minSize   bool
}

// plans caches a *plan, or nil for an unsupported type, per reflect.Type.
var plans sync.Map

// planOf returns the plan of type t, or nil when t is not one the fast
// decoder reads.
func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := buildPlan(t, map[reflect.Type]bool{})
	plans.Store(t, p)
	return p
}

var (
	tUnmarshaler      = reflect.TypeFor[bson.Unmarshaler]()
	tValueUnmarshaler = reflect.TypeFor[bson.ValueUnmarshaler]()
	tMarshaler        = reflect.TypeFor[bson.Marshaler]()
	tValueMarshaler   = reflect.TypeFor[bson.ValueMarshaler]()
	tZeroer           = reflect.TypeFor[bson.Zeroer]()
	// Packages whose types the driver's default registry decodes by type,
	// not by kind (bson.DateTime is an int64, json.Number a string).
	specialPkgs = map[string]bool{
		reflect.TypeFor[bson.D]().PkgPath(): true,
		"time":                              true,
		"net/url":                           true,
		"encoding/json":                     true,
		"reflect":                           true,
	}
)

// buildPlan builds the plan of t; seen holds the struct types being built,
// so that a recursive type (which needs a pointer, unsupported anyway)
// ends.
func buildPlan(t reflect.Type, seen map[reflect.Type]bool) *plan {
	if specialPkgs[t.PkgPath()] {
		return nil
	}
	for _, i := range []reflect.Type{tUnmarshaler, tValueUnmarshaler, tMarshaler, tValueMarshaler, tZeroer} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return nil
		}
	}
	switch t.Kind() {
	case reflect.String:
		return &plan{kind: planString, typ: t}
	case reflect.Bool:
		return &plan{kind: planBool, typ: t}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &plan{kind: planInt, typ: t, bits: t.Bits()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &plan{kind: planUint, typ: t, bits: t.Bits()}
	case reflect.Float64:
		return &plan{kind: planFloat, typ: t, bits: 64}
	case reflect.Float32:
		return &plan{kind: planFloat32, typ: t, bits: 32}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte: the driver reads it from a binary value
		}
		elem := buildPlan(t.Elem(), seen)
		if elem == nil {
			return nil
		}
		return &plan{kind: planSlice, typ: t, elem: elem, depth: 1 + elem.depth}
	case reflect.Struct:
		if seen[t] {
			return nil
		}
		seen[t] = true
		defer delete(seen, t)
		p := &plan{kind: planStruct, typ: t, depth: 1}
		names := map[string]bool{}
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue // the driver ignores unexported fields
			}
			if sf.Anonymous {
				return nil
			}
			name, opts, skip, ok := structKey(sf)
			if !ok || strings.IndexByte(name, 0) >= 0 {
				return nil
			}
			if skip {
				continue
			}
			if names[name] {
				return nil // the driver refuses duplicated keys
			}
			names[name] = true
			fp := buildPlan(sf.Type, seen)
			if fp == nil {
				return nil
			}
			p.fields = append(p.fields, fieldPlan{name: name, index: i, plan: fp,
				omitEmpty: opts["omitempty"], minSize: opts["minsize"]})
			p.depth = max(p.depth, 1+fp.depth)
		}
		return p
	}
	return nil
}

// structKey returns the BSON key of struct field sf as the driver's default
// struct tag parser makes it, the tag's options, whether the field is
// skipped, and false for an inline field (not supported).
func structKey(sf reflect.StructField) (name string, opts map[string]bool, skip, ok bool) {
	name = strings.ToLower(sf.Name)
	tag, found := sf.Tag.Lookup("bson")
	if !found && !strings.Contains(string(sf.Tag), ":") && len(sf.Tag) > 0 {
		tag = string(sf.Tag)
	}
	if tag == "-" {
		return "", nil, true, true
	}
	opts = map[string]bool{}
	for i, opt := range strings.Split(tag, ",") {
		if i == 0 && opt != "" {
			name = opt
		}
		if opt == "inline" {
			return "", nil, false, false
		}
		opts[opt] = true
	}
	return name, opts, false, true
}

// decodeFast decodes value data of BSON type t into v, a pointer, and
// reports whether it did. When it did not, v is as it was.
func decodeFast(t bson.Type, data []byte, v any) bool {
	return DecodeInto(v, func(p Plan, target reflect.Value) bool { return p.p.decode(t, data, target) })
}

// DecodeInto runs decode with the plan of v's type and the value v points
// to, when v is a non-nil pointer to a type with a plan and that value is
// zero (an empty slice for a slice: the driver merges into anything else),
// and reports whether decode did. When it did not, the value is set back
// as it was.
func DecodeInto(v any, decode func(Plan, reflect.Value) bool) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	p := planOf(rv.Type().Elem())
	if p == nil {
		return false
	}
	target := rv.Elem()
	if p.kind == planSlice {
		if target.Len() != 0 {
			return false
		}
		wasNil := target.IsNil()
		if decode(Plan{p}, target) {
			return true
		}
		if wasNil {
			target.SetZero()
		} else {
			target.SetLen(0)
		}
		return false
	}
	if !target.IsZero() {
		return false
	}
	if decode(Plan{p}, target) {
		return true
	}
	target.SetZero()
	return false
}

// decode decodes value b of BSON type t, exactly the value's bytes, into v.
func (p *plan) decode(t bson.Type, b []byte, v reflect.Value) bool {
	if t == bson.TypeNull && p.kind != planStruct {
		// The driver sets every kind but a struct to its zero value.
		if len(b) != 0 {
			return false
		}
		v.SetZero()
		return true
	}
	switch p.kind {
	case planString:
		s, ok := readString(t, b)
		if !ok {
			return false
		}
		v.SetString(s)
		return true
	case planBool:
		if t != bson.TypeBoolean || len(b) != 1 || b[0] > 1 {
			return false
		}
		v.SetBool(b[0] == 1)
		return true
	case planInt:
		n, ok := readInt(t, b)
		if !ok || (p.bits < 64 && (n < -1<<(p.bits-1) || n >= 1<<(p.bits-1))) {
			return false
		}
		v.SetInt(n)
		return true
	case planUint:
		n, ok := readInt(t, b)
		if !ok || n < 0 || (p.bits < 64 && n >= 1<<p.bits) {
			return false
		}
		v.SetUint(uint64(n))
		return true
	case planFloat, planFloat32:
		if t != bson.TypeDouble || len(b) != 8 {
			return false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		if p.kind == planFloat32 && float64(float32(f)) != f {
			return false // the driver refuses a lossy float32 (and NaN)
		}
		v.SetFloat(f)
		return true
	case planSlice:
		return p.decodeSlice(t, b, v)
	case planStruct:
		return p.decodeStruct(t, b, v)
	}
	return false
}

// readInt reads a BSON int32 or int64.
func readInt(t bson.Type, b []byte) (int64, bool) {
	switch {
	case t == bson.TypeInt32 && len(b) == 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case t == bson.TypeInt64 && len(b) == 8:
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}

// decodeSlice decodes a BSON array into slice v, reusing its backing array
// as the driver does; a nil slice becomes a new one, also for no elements.
func (p *plan) decodeSlice(t bson.Type, b []byte, v reflect.Value) bool {
	if t != bson.TypeArray {
		return false
	}
	n := 0
	if !elements(b, func(bson.Type, []byte, []byte) bool { n++; return true }) {
		return false
	}
	SetLen(v, n)
	i := 0
	return elements(b, func(et bson.Type, _, val []byte) bool {
		e := v.Index(i)
		e.SetZero()
		i++
		return p.elem.decode(et, val, e)
	})
}

// SetLen makes slice v n long, reusing its backing array when it has room,
// as the driver does; a nil slice becomes a new one, also for n = 0. (The
// new array is v.Grow's: reflect.MakeSlice allocates a slice header too.)
func SetLen(v reflect.Value, n int) {
	switch {
	case v.IsNil() && n == 0:
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	case v.Cap() < n:
		v.SetLen(0)
		v.Grow(n)
		v.SetLen(n)
	default:
		v.SetLen(n)
	}
}

// decodeStruct decodes a BSON document into struct v field by field, as
// the driver does: fields the document does not hold are left alone. A key
// that is not exactly a field's gives up (the driver may match it
// ignoring case).
func (p *plan) decodeStruct(t bson.Type, b []byte, v reflect.Value) bool {
	if t != bson.TypeEmbeddedDocument {
		return false
	}
	next := 0 // documents mostly hold the fields in declaration order
	return elements(b, func(et bson.Type, name, val []byte) bool {
		f := -1
		if next < len(p.fields) && p.fields[next].name == string(name) {
			f = next
		} else {
			for i := range p.fields {
				if p.fields[i].name == string(name) {
					f = i
					break
				}
			}
		}
		if f < 0 {
			return false
		}
		next = f + 1
		fp := &p.fields[f]
		return fp.plan.decode(et, val, v.Field(fp.index))
	})
}

// elements calls fn with the type, key and value bytes of every element of
// document (or array) doc, and reports whether doc is well-formed, its
// values of types whose length it knows, and every fn call returned true.
func elements(doc []byte, fn func(t bson.Type, name, val []byte) bool) bool {
	if len(doc) < 5 || int(binary.LittleEndian.Uint32(doc)) != len(doc) || doc[len(doc)-1] != 0 {
		return false
	}
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		t := bson.Type(rest[0])
		end := -1
		for i := 1; i < len(rest); i++ {
			if rest[i] == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			return false
		}
		name, after := rest[1:end], rest[end+1:]
		n, ok := valueLen(t, after)
		if !ok {
			return false
		}
		if !fn(t, name, after[:n]) {
			return false
		}
		rest = after[n:]
	}
	return true
}

// valueLen returns the length of the value of BSON type t at the start of
// b, for the types the plans read (others give up).
func valueLen(t bson.Type, b []byte) (int, bool) {
	n := 0
	switch t {
	case bson.TypeNull:
		return 0, true
	case bson.TypeBoolean:
		n = 1
	case bson.TypeInt32:
		n = 4
	case bson.TypeInt64, bson.TypeDouble:
		n = 8
	case bson.TypeString:
		if len(b) < 4 {
			return 0, false
		}
		l := int64(int32(binary.LittleEndian.Uint32(b)))
		if l < 1 {
			return 0, false
		}
		n = 4 + int(l)
		if int64(n) != 4+l {
			return 0, false
		}
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		if len(b) < 4 {
			return 0, false
		}
		l := int64(int32(binary.LittleEndian.Uint32(b)))
		if l < 5 {
			return 0, false
		}
		n = int(l)
	default:
		return 0, false
	}
	if n > len(b) {
		return 0, false
	}
	return n, true
}

// appendFast appends the bytes of v's BSON value (without the type byte) to
// dst as the driver's encoder makes them, and returns the value's type and
// the deepest nesting its type allows; ok is false when v's type has no
// plan or the driver would refuse v (a uint over the int64 range), and dst
// is then unchanged. nilAsEmpty is the encoder's NilSliceAsEmpty.
func appendFast(dst []byte, v any, nilAsEmpty bool) (out []byte, t bson.Type, depth int, ok bool) {
	if v == nil {
		return dst, 0, 0, false
	}
	p := planOf(reflect.TypeOf(v))
	if p == nil {
		return dst, 0, 0, false
	}
	out, t, ok = p.encode(dst, reflect.ValueOf(v), false, nilAsEmpty)
	if !ok {
		return dst, 0, 0, false
	}
	return out, t, p.depth, true
}

// encode appends the value bytes of v; minSize is the driver's minsize
// option, which a field's tag sets for everything under the field.
func (p *plan) encode(dst []byte, v reflect.Value, minSize, nilAsEmpty bool) ([]byte, bson.Type, bool) {
	switch p.kind {
	case planString:
		s := v.String()
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)+1))
		return append(append(dst, s...), 0), bson.TypeString, true
	case planBool:
		if v.Bool() {
			return append(dst, 1), bson.TypeBoolean, true
		}
		return append(dst, 0), bson.TypeBoolean, true
	case planInt:
		n := v.Int()
		// int8 to int32 are int32s; an int is one when it fits; an int64
		// with minsize.
		if p.bits <= 32 || ((v.Kind() == reflect.Int || minSize) && n >= math.MinInt32 && n <= math.MaxInt32) {
			return binary.LittleEndian.AppendUint32(dst, uint32(int32(n))), bson.TypeInt32, true
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(n)), bson.TypeInt64, true
	case planUint:
		n := v.Uint()
		if p.bits <= 16 || (minSize && n <= math.MaxInt32) {
			return binary.LittleEndian.AppendUint32(dst, uint32(n)), bson.TypeInt32, true
		}
		if n > math.MaxInt64 {
			return dst, 0, false // the driver's error
		}
		return binary.LittleEndian.AppendUint64(dst, n), bson.TypeInt64, true
	case planFloat, planFloat32:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float())), bson.TypeDouble, true
	case planSlice:
		if v.IsNil() && !nilAsEmpty {
			return dst, bson.TypeNull, true
		}
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		for i := range v.Len() {
			at := len(dst)
			dst = append(dst, 0)
			dst = append(strconv.AppendInt(dst, int64(i), 10), 0)
			var t bson.Type
			var ok bool
			if dst, t, ok = p.elem.encode(dst, v.Index(i), minSize, nilAsEmpty); !ok {
				return dst, 0, false
			}
			dst[at] = byte(t)
		}
		dst = append(dst, 0)
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		return dst, bson.TypeArray, true
	case planStruct:
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		for i := range p.fields {
			f := &p.fields[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(f.plan, fv) {
				continue
			}
			at := len(dst)
			dst = append(append(append(dst, 0), f.name...), 0)
			var t bson.Type
			var ok bool
			if dst, t, ok = f.plan.encode(dst, fv, minSize || f.minSize, nilAsEmpty); !ok {
				return dst, 0, false
			}
			dst[at] = byte(t)
		}
		dst = append(dst, 0)
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		return dst, bson.TypeEmbeddedDocument, true
	}
	return dst, 0, false
}

// isEmpty is the driver's omitempty test for the kinds plans hold: no
// struct is empty (without the encoder's OmitZeroStruct).
func isEmpty(p *plan, v reflect.Value) bool {
	switch p.kind {
	case planString, planSlice:
		return v.Len() == 0
	case planStruct:
		return false
	}
	return v.IsZero()
}

// wellFormed reports whether data is exactly one well-formed BSON value of
// type t: every length inside it is consistent, every string and key
// terminated, every type known. The driver's decoder is given only such
// values: on some malformed ones (a string of negative length under a key
// the target does not have) it loops forever.
func wellFormed(t bson.Type, data []byte) bool {
	n, ok := fullLen(t, data, 0, MaxDepth)
	return ok && n == len(data)
}

// MaxDepth is the deepest nesting of documents and arrays a value may
// have: Decode refuses deeper values (ErrMalformed) and Encode refuses to
// make them (a *DepthError), so that every value written reads back. A
// scalar has depth 0, a struct of scalars 1, a slice of such structs 2
// (one Go level of a recursive type such as struct{ Kids []Node } is two
// BSON levels).
const MaxDepth = 1000

// fullLen returns the length of the well-formed value of type t at the
// start of b, checking documents, arrays and code with scope inside;
// depth is the number of documents and arrays around it, and a document
// or an array at depth max (nested max+1 deep) is refused.
func fullLen(t bson.Type, b []byte, depth, max int) (int, bool) {
	if depth >= max && (t == bson.TypeEmbeddedDocument || t == bson.TypeArray) {
		return 0, false
	}
	length := func() (int, bool) { // an int32 length, not negative
		if len(b) < 4 {
			return 0, false
		}
		l := int32(binary.LittleEndian.Uint32(b))
		return int(l), l >= 0
	}
	cstring := func(from int) (int, bool) { // the end of a cstring, after its 0
		for i := from; i < len(b); i++ {
			if b[i] == 0 {
				return i + 1, true
			}
		}
		return 0, false
	}
	str := func(from int) (int, bool) { // a string at b[from:]: its end
		if len(b)-from < 5 {
			return 0, false
		}
		l := int64(int32(binary.LittleEndian.Uint32(b[from:])))
		if l < 1 || int64(len(b)-from-4) < l || b[from+4+int(l)-1] != 0 {
			return 0, false
		}
		return from + 4 + int(l), true
	}
	var n int
	switch t {
	case bson.TypeNull, bson.TypeUndefined, bson.TypeMinKey, bson.TypeMaxKey:
		return 0, true
	case bson.TypeBoolean:
		n = 1
	case bson.TypeInt32:
		n = 4
	case bson.TypeInt64, bson.TypeDouble, bson.TypeDateTime, bson.TypeTimestamp:
		n = 8
	case bson.TypeObjectID:
		n = 12
	case bson.TypeDecimal128:
		n = 16
	case bson.TypeString, bson.TypeJavaScript, bson.TypeSymbol:
		return str(0)
	case bson.TypeBinary:
		l, ok := length()
		if !ok {
			return 0, false
		}
		n = 5 + l
	case bson.TypeRegex:
		end, ok := cstring(0)
		if !ok {
			return 0, false
		}
		return cstring(end)
	case bson.TypeDBPointer:
		end, ok := str(0)
		if !ok || len(b)-end < 12 {
			return 0, false
		}
		return end + 12, true
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		l, ok := length()
		if !ok || l < 5 || l > len(b) || b[l-1] != 0 {
			return 0, false
		}
		for at := 4; at < l-1; {
			end, ok := cstring(at + 1)
			if !ok || end >= l {
				return 0, false
			}
			vl, ok := fullLen(bson.Type(b[at]), b[end:l-1], depth+1, max)
			if !ok {
				return 0, false
			}
			at = end + vl
		}
		return l, true
	case bson.TypeCodeWithScope:
		l, ok := length()
		if !ok || l < 14 || l > len(b) {
			return 0, false
		}
		end, ok := str(4)
		if !ok || end > l {
			return 0, false
		}
		dl, ok := fullLen(bson.TypeEmbeddedDocument, b[end:l], depth+1, max)
		if !ok || end+dl != l {
			return 0, false
		}
		return l, true
	default:
		return 0, false
	}
	if n > len(b) {
		return 0, false
	}
	return n, true
}

// Plan is the fast codec's view of a Go type, for a store whose values are
// not BSON but follow the same rules (runtime/dynamostore decodes its
// attribute values with it): which kind of value it is, its struct fields
// by BSON key, its element. A type without a plan is one the driver must
// handle.
type Plan struct{ p *plan }

// PlanKind is what a Plan decodes into.
type PlanKind uint8

// The kinds of plans.
const (
	PlanString  = PlanKind(planString)
	PlanBool    = PlanKind(planBool)
	PlanInt     = PlanKind(planInt)
	PlanUint    = PlanKind(planUint)
	PlanFloat   = PlanKind(planFloat)
	PlanFloat32 = PlanKind(planFloat32)
	PlanSlice   = PlanKind(planSlice)
	PlanStruct  = PlanKind(planStruct)
)

// PlanOf returns the plan of type t, and false when t has none.
func PlanOf(t reflect.Type) (Plan, bool) {
	p := planOf(t)
	return Plan{p}, p != nil
}

// Kind is the plan's kind.
func (p Plan) Kind() PlanKind { return PlanKind(p.p.kind) }

// Depth is the deepest nesting of documents and arrays a value of the
// plan's type can have (plans are of types that are not recursive).
func (p Plan) Depth() int { return p.p.depth }

// Bits is the size of an int, uint or float kind in bits.
func (p Plan) Bits() int { return p.p.bits }

// Type is the Go type.
func (p Plan) Type() reflect.Type { return p.p.typ }

// Elem is a slice's element plan.
func (p Plan) Elem() Plan { return Plan{p.p.elem} }

// Field returns the index of the struct field with BSON key name (exactly)
// and its plan, or false.
func (p Plan) Field(name string) (int, Plan, bool) {
	for i := range p.p.fields {
		if f := &p.p.fields[i]; f.name == name {
			return f.index, Plan{f.plan}, true
		}
	}
	return 0, Plan{}, false
}

// NumFields is the number of a struct plan's encoded fields.
func (p Plan) NumFields() int { return len(p.p.fields) }

// FieldAt returns the i-th encoded field of a struct plan, in the driver's
// order: its BSON key, its index in the struct, its plan, and whether its
// tag has omitempty.
func (p Plan) FieldAt(i int) (name string, index int, fp Plan, omitEmpty bool) {
	f := &p.p.fields[i]
	return f.name, f.index, Plan{f.plan}, f.omitEmpty
}

// Empty reports whether v, of p's type, is empty for omitempty, as the
// driver decides.
func (p Plan) Empty(v reflect.Value) bool { return isEmpty(p.p, v) }
