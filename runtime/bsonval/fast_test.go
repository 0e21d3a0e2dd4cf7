package bsonval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// kinds holds a field of every kind the fast decoder reads, with the tag
// forms of the driver's default struct tag parser.
type kinds struct {
	S        string
	Named    named   `bson:"named"`
	B        bool    `bson:"b,omitempty"`
	I        int     `bson:"i,minsize"`
	I8       int8    `bson:"i8"`
	I16      int16   `bson:"i16"`
	I32      int32   `bson:"i32"`
	I64      int64   `bson:"i64"`
	U        uint    `bson:"u"`
	U8       uint8   `bson:"u8"`
	U16      uint16  `bson:"u16"`
	U32      uint32  `bson:"u32"`
	U64      uint64  `bson:"u64"`
	F        float64 `bson:"f"`
	F32      float32 `bson:"f32,truncate"`
	Skipped  string  `bson:"-"`
	NoTag    int64   `json:"x"`
	hidden   string
	In       inner   `bson:"in"`
	Ins      []inner `bson:"ins"`
	Strs     []string
	Nested   [][]int32 `bson:"nested"`
	Empty    []string  `bson:"empty"`
	NilSlice []string  `bson:"nil"`
}

// round is the shape of a game's round (example/game).
type round struct {
	Moves    []string `bson:"moves"`
	Comments []string `bson:"comments,omitempty"`
	Actions  []string `bson:"actions,omitempty"`
	Spell    string   `bson:"spell,omitempty"`
}

func sampleKinds() kinds {
	return kinds{
		S: "héllo\x00world", Named: "n", B: true,
		I: math.MinInt64, I8: math.MinInt8, I16: math.MaxInt16, I32: math.MinInt32, I64: math.MaxInt64,
		U: 1 << 40, U8: math.MaxUint8, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxInt64,
		F: math.Inf(-1), F32: 1.5, NoTag: -3,
		In:     inner{A: "a", B: []string{"x", ""}},
		Ins:    []inner{{A: "1"}, {B: []string{}}},
		Strs:   []string{"s", "t"},
		Nested: [][]int32{{1, 2}, nil, {}},
		Empty:  []string{},
	}
}

// driverValue decodes data of type t into a new value of v's type with the
// driver alone.
func driverValue(t bson.Type, data []byte, typ reflect.Type) (reflect.Value, error) {
	p := reflect.New(typ)
	err := bson.UnmarshalValue(t, data, p.Interface())
	return p.Elem(), err
}

// Values of every supported kind decode on the fast path, to exactly what
// the driver decodes.
func TestFastDecodesLikeTheDriver(t *testing.T) {
	for _, v := range []any{
		sampleKinds(), kinds{}, kinds{Ins: []inner{}, Strs: []string{}},
		inner{}, []inner{{A: "a"}}, []inner{}, []string{"a"}, []int{-1, 1 << 50},
		[]float64{1.25, math.MaxFloat64}, []bool{true, false}, []named{"a"},
		round{Moves: []string{"m1", "m2"}, Spell: "s"},
		[]round{{Moves: []string{"m"}}, {Comments: []string{"c"}, Actions: []string{"a"}}},
	} {
		typ, data, err := bson.MarshalValue(v)
		if err != nil {
			t.Fatal(err)
		}
		p := reflect.New(reflect.TypeOf(v))
		if !decodeFast(typ, data, p.Interface()) {
			t.Errorf("%T %+v: the fast decoder gave up", v, v)
			continue
		}
		want, err := driverValue(typ, data, reflect.TypeOf(v))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Elem().Interface(), want.Interface()) {
			t.Errorf("%T: fast decoded\n%#v\nthe driver\n%#v", v, p.Elem().Interface(), want.Interface())
		}
		if !reflect.DeepEqual(want.Interface(), v) && reflect.TypeOf(v) != reflect.TypeOf(kinds{}) {
			t.Errorf("%T: does not round-trip: %#v", v, want.Interface())
		}
	}
}

type unmarshaler struct{ A string }

func (u *unmarshaler) UnmarshalBSON([]byte) error { u.A = "custom"; return nil }

type valueUnmarshaler string

func (u *valueUnmarshaler) UnmarshalBSONValue(byte, []byte) error { *u = "custom"; return nil }

// Exported is embedded in embedded.
type Exported struct{ A string }

type embedded struct {
	Exported
	C string
}

// Types the driver decodes by type, or with options the fast decoder does
// not follow, have no plan: the driver decodes them whole.
func TestFastHasNoPlanFor(t *testing.T) {
	for _, v := range []any{
		time.Time{}, bson.DateTime(0), json.Number(""), bson.D{}, bson.M{}, bson.ObjectID{},
		[]byte{}, [2]string{}, map[string]string{}, new(string), any(nil), outer{},
		unmarshaler{}, []unmarshaler{}, valueUnmarshaler(""), embedded{},
		struct {
			In inner `bson:",inline"`
		}{},
		struct {
			A string `bson:"k"`
			B string `bson:"k"`
		}{},
		struct{ At time.Time }{},
		uintptr(0), complex(1, 1),
	} {
		typ := reflect.TypeOf(&v).Elem()
		if v != nil {
			typ = reflect.TypeOf(v)
		}
		if p := planOf(typ); p != nil {
			t.Errorf("%v has a fast plan", typ)
		}
	}
	// The driver's custom decoding is what such a value gets.
	var u unmarshaler
	if err := Decode(marshalValue(t, inner{A: "a"}), &u); err != nil || u.A != "custom" {
		t.Errorf("Decode into an Unmarshaler = %+v, %v", u, err)
	}
}

// bsonDoc builds a document value from elements (type, key, value bytes).
func bsonDoc(elems ...any) []byte {
	doc := []byte{0, 0, 0, 0}
	for i := 0; i < len(elems); i += 3 {
		doc = append(doc, byte(elems[i].(bson.Type)))
		doc = append(append(doc, elems[i+1].(string)...), 0)
		doc = append(doc, elems[i+2].([]byte)...)
	}
	doc = append(doc, 0)
	doc[0], doc[1], doc[2], doc[3] = byte(len(doc)), byte(len(doc)>>8), byte(len(doc)>>16), byte(len(doc)>>24)
	return doc
}

func i32(n int32) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }

func str(s string) []byte { return append(append(i32(int32(len(s)+1)), s...), 0) }

// Values that need one of the driver's conversion choices, and malformed
// values, make the fast decoder give up and leave the target as it was;
// Decode then returns what the driver returns.
func TestFastGivesUp(t *testing.T) {
	type target struct {
		S  string  `bson:"s"`
		F  float64 `bson:"f"`
		N  int8    `bson:"n"`
		U  uint32  `bson:"u"`
		L  []int32 `bson:"l"`
		In inner   `bson:"in"`
	}
	double := func(f float64) []byte {
		_, b, _ := bson.MarshalValue(f)
		return b
	}
	cases := map[string][]byte{
		"int32 into a float":      bsonDoc(bson.TypeInt32, "f", i32(2)),
		"double into an int":      bsonDoc(bson.TypeDouble, "n", double(2)),
		"int32 out of int8 range": bsonDoc(bson.TypeInt32, "n", i32(128)),
		"negative into a uint":    bsonDoc(bson.TypeInt32, "u", i32(-1)),
		"key of another case":     bsonDoc(bson.TypeString, "S", str("x")),
		"unknown key":             bsonDoc(bson.TypeString, "zz", str("x")),
		"null into a struct":      bsonDoc(bson.TypeNull, "in", []byte{}),
		"undefined into a string": bsonDoc(bson.TypeUndefined, "s", []byte{}),
		"symbol into a string":    bsonDoc(bson.TypeSymbol, "s", str("x")),
		"boolean into an int":     bsonDoc(bson.TypeBoolean, "n", []byte{1}),
		"document into a slice":   bsonDoc(bson.TypeEmbeddedDocument, "l", bsonDoc()),
		"string of length 0":      bsonDoc(bson.TypeString, "s", i32(0)),
		"string not terminated":   bsonDoc(bson.TypeString, "s", []byte{2, 0, 0, 0, 'x', 'y'}),
		"later field malformed":   bsonDoc(bson.TypeString, "s", str("x"), bson.TypeInt32, "l", i32(1)),
		"element of another type": bsonDoc(bson.TypeArray, "l", bsonDoc(bson.TypeInt32, "0", i32(1), bson.TypeString, "1", str("x"))),
		"boolean byte 2":          bsonDoc(bson.TypeBoolean, "b", []byte{2}),
	}
	for name, doc := range cases {
		var got target
		if decodeFast(bson.TypeEmbeddedDocument, doc, &got) {
			t.Errorf("%s: the fast decoder decoded %x", name, doc)
		}
		if !reflect.ValueOf(got).IsZero() {
			t.Errorf("%s: the target changed to %+v", name, got)
		}
		want, wantErr := driverValue(bson.TypeEmbeddedDocument, doc, reflect.TypeOf(got))
		err := DecodeValue(bson.TypeEmbeddedDocument, doc, &got)
		if (err == nil) != (wantErr == nil) || (err == nil && !reflect.DeepEqual(got, want.Interface())) {
			t.Errorf("%s: DecodeValue = %+v, %v; the driver %+v, %v", name, got, err, want.Interface(), wantErr)
		}
	}
	// Truncated and overlong documents.
	doc := bsonDoc(bson.TypeString, "s", str("x"))
	for _, bad := range [][]byte{doc[:len(doc)-1], append(doc[:len(doc):len(doc)], 0), doc[:4], nil} {
		var got target
		if decodeFast(bson.TypeEmbeddedDocument, bad, &got) {
			t.Errorf("decoded malformed %x", bad)
		}
	}
}

// A target that is not a zero value (or an empty slice) goes to the driver,
// which keeps what the document does not overwrite.
func TestFastOnlyIntoZeroValues(t *testing.T) {
	data := marshalValue(t, inner{A: "a"})
	got := inner{B: []string{"kept"}}
	if decodeFast(bson.Type(data[0]), data[1:], &got) {
		t.Fatal("the fast decoder decoded into a set value")
	}
	if err := Decode(data, &got); err != nil || got.A != "a" || len(got.B) != 1 {
		t.Errorf("Decode = %+v, %v: want the driver's merge", got, err)
	}
	s := make([]string, 0, 4)
	data = marshalValue(t, []string{"x"})
	if !decodeFast(bson.Type(data[0]), data[1:], &s) || len(s) != 1 || cap(s) != 4 {
		t.Errorf("decoding into an empty slice with room: %q (cap %d)", s, cap(s))
	}
	full := []string{"old"}
	if decodeFast(bson.Type(data[0]), data[1:], &full) {
		t.Error("the fast decoder decoded into a non-empty slice")
	}
	// A failed decode leaves an empty slice empty, and a nil one nil.
	bad := bsonDoc(bson.TypeString, "0", str("a"), bson.TypeInt32, "1", i32(1))
	s = s[:0]
	if decodeFast(bson.TypeArray, bad, &s) || len(s) != 0 || s == nil {
		t.Errorf("after a failed decode: %q (nil %v)", s, s == nil)
	}
	var nilSlice []string
	if decodeFast(bson.TypeArray, bad, &nilSlice) || nilSlice != nil {
		t.Errorf("after a failed decode: %q", nilSlice)
	}
}

// The point of the fast decoder: one allocation per string and per slice.
// (The driver makes about three per string.)
func TestFastAllocations(t *testing.T) {
	data := marshalValue(t, []round{{Moves: []string{"a", "b"}, Comments: []string{"c"}, Actions: []string{"d"}, Spell: "e"}})
	var s []round
	allocs := testing.AllocsPerRun(100, func() {
		s = s[:0]
		if err := Decode(data, &s); err != nil {
			t.Fatal(err)
		}
	})
	// 5 strings, 3 slices of strings; the slice of rounds is reused.
	if allocs > 8 {
		t.Errorf("decoding a round: %v allocations, want at most 8", allocs)
	}
}

// FuzzFastAgreesWithDriver: whatever value the fast decoder decodes, the
// driver decodes without error to the same Go value.
func FuzzFastAgreesWithDriver(f *testing.F) {
	for _, v := range []any{sampleKinds(), kinds{}, []round{{Moves: []string{"m"}}}, inner{A: "a"}} {
		typ, data, _ := bson.MarshalValue(v)
		f.Add(byte(typ), data, uint8(0))
		f.Add(byte(typ), data, uint8(1))
		f.Add(byte(typ), data, uint8(2))
	}
	targets := []reflect.Type{reflect.TypeFor[kinds](), reflect.TypeFor[[]round](), reflect.TypeFor[inner]()}
	f.Fuzz(func(t *testing.T, typ byte, data []byte, which uint8) {
		rt := targets[int(which)%len(targets)]
		p := reflect.New(rt)
		if !decodeFast(bson.Type(typ), data, p.Interface()) {
			if !p.Elem().IsZero() {
				t.Fatalf("gave up but changed the target to %#v", p.Elem().Interface())
			}
			return
		}
		want, err := driverValue(bson.Type(typ), data, rt)
		if err != nil {
			t.Fatalf("fast decoded %#v where the driver fails: %v", p.Elem().Interface(), err)
		}
		// Compared as Go syntax: NaN equals NaN there, and a nil slice
		// differs from an empty one.
		if got, want := fmt.Sprintf("%#v", p.Elem().Interface()), fmt.Sprintf("%#v", want.Interface()); got != want {
			t.Fatalf("fast decoded\n%s\nthe driver\n%s", got, want)
		}
	})
}

// omits has omitempty and minsize on every kind the fast encoder writes.
type omits struct {
	S    string    `bson:"s,omitempty"`
	B    bool      `bson:"b,omitempty"`
	I    int       `bson:"i,omitempty"`
	I64  int64     `bson:"i64,omitempty"`
	Min  int64     `bson:"min,minsize"`
	MinU uint64    `bson:"minu,minsize"`
	U32  uint32    `bson:"u32,omitempty"`
	F    float64   `bson:"f,omitempty"`
	L    []string  `bson:"l,omitempty"`
	In   inner     `bson:"in,omitempty"`
	Deep minSized  `bson:"deep,minsize"`
	Ks   []kinds   `bson:"ks"`
	Fs   []float32 `bson:"fs"`
}

// minSized is written under a minsize field: its int64 and uints become
// int32s where they fit.
type minSized struct {
	N  int64   `bson:"n"`
	U  uint    `bson:"u"`
	Ns []int64 `bson:"ns"`
}

// randomValue fills a value of one of the encoder's test types.
func randomValue(r *rand.Rand) any {
	str := func() string {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	strs := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Int64N(1<<31) - 1<<30
		case 2:
			return math.MaxInt32 + r.Int64N(2)
		}
		return int64(r.Uint64())
	}
	k := kinds{
		S: str(), Named: named(str()), B: r.IntN(2) == 0,
		I: int(num()), I8: int8(num()), I16: int16(num()), I32: int32(num()), I64: num(),
		U: uint(num()) >> 1, U8: uint8(num()), U16: uint16(num()), U32: uint32(num()), U64: uint64(num()) >> 1,
		F: float64(num()) / 3, F32: float32(num()), NoTag: num(),
		In: inner{A: str(), B: strs()}, Strs: strs(), Empty: strs(), NilSlice: strs(),
	}
	if r.IntN(2) == 0 {
		k.Ins = []inner{{A: str(), B: strs()}}
		k.Nested = [][]int32{{int32(num())}, nil}
	}
	o := omits{
		S: str(), B: r.IntN(2) == 0, I: int(num()), I64: num(), Min: num(), MinU: uint64(num()) >> 1,
		U32: uint32(num()), F: float64(num()), L: strs(), In: inner{B: strs()},
		Deep: minSized{N: num(), U: uint(num()) >> 1, Ns: []int64{num(), num()}},
	}
	if r.IntN(3) == 0 {
		o.F = math.Copysign(0, -1) // not empty: the driver's IsZero
	}
	if r.IntN(2) == 0 {
		o.Ks = []kinds{k}
		o.Fs = []float32{float32(num()), 0}
	}
	switch r.IntN(4) {
	case 0:
		return k
	case 1:
		return []round{{Moves: strs(), Comments: strs(), Spell: str()}}
	case 2:
		return strs()
	}
	return o
}

// driverBytes is what the driver's encoder writes for v.
func driverBytes(t *testing.T, v any, nilAsEmpty bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	vw := bson.NewDocumentWriter(&buf)
	enc := bson.NewEncoder(vw)
	if nilAsEmpty {
		enc.NilSliceAsEmpty()
	}
	if err := enc.Encode(bson.D{{Key: "v", Value: v}}); err != nil {
		t.Fatalf("driver: %v", err)
	}
	doc := bson.Raw(buf.Bytes())
	rv := doc.Lookup("v")
	return append([]byte{byte(rv.Type)}, rv.Value...)
}

// The fast encoder writes exactly the driver's bytes, with and without
// NilSliceAsEmpty, for random values of every kind and tag option.
func TestFastEncodesLikeTheDriver(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		v := randomValue(r)
		for _, nilAsEmpty := range []bool{false, true} {
			out, typ, _, ok := appendFast(nil, v, nilAsEmpty)
			if !ok {
				t.Fatalf("%T: the fast encoder gave up", v)
			}
			got := append([]byte{byte(typ)}, out...)
			if want := driverBytes(t, v, nilAsEmpty); !bytes.Equal(got, want) {
				t.Fatalf("%#v (nilAsEmpty %v):\nfast   %x\ndriver %x", v, nilAsEmpty, got, want)
			}
		}
	}
	// A uint over the int64 range is the driver's error.
	if _, _, _, ok := appendFast(nil, kinds{U64: math.MaxUint64}, false); ok {
		t.Error("the fast encoder wrote a uint64 over the int64 range")
	}
	if _, err := Encode(kinds{U64: math.MaxUint64}); err == nil {
		t.Error("Encode of a uint64 over the int64 range succeeded")
	}
}

// FuzzFastEncodeAgrees: any value the driver decodes from the fuzzed bytes
// encodes to the same bytes on both encoders.
func FuzzFastEncodeAgrees(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		typ, data, _ := bson.MarshalValue(randomValue(r))
		f.Add(byte(typ), data)
	}
	types := []reflect.Type{reflect.TypeFor[kinds](), reflect.TypeFor[omits](), reflect.TypeFor[[]round]()}
	f.Fuzz(func(t *testing.T, typ byte, data []byte) {
		for _, rt := range types {
			p := reflect.New(rt)
			// DecodeValue: the driver alone may loop forever on malformed
			// input (TestMalformedDoesNotHang).
			if DecodeValue(bson.Type(typ), data, p.Interface()) != nil {
				continue
			}
			v := p.Elem().Interface()
			for _, nilAsEmpty := range []bool{false, true} {
				out, et, _, ok := appendFast(nil, v, nilAsEmpty)
				if !ok {
					if _, _, err := bson.MarshalValue(v); err == nil && !nilAsEmpty {
						t.Fatalf("%#v: the fast encoder gave up where the driver encodes", v)
					}
					continue
				}
				if want := driverBytes(t, v, nilAsEmpty); !bytes.Equal(append([]byte{byte(et)}, out...), want) {
					t.Fatalf("%#v (nilAsEmpty %v):\nfast   %x\ndriver %x", v, nilAsEmpty, out, want)
				}
			}
		}
	})
}

// Encoding a round allocates nothing but the output. (The encoder itself,
// not Append's pool: under -race a sync.Pool drops items at random.)
func TestFastEncodeAllocations(t *testing.T) {
	var v any = round{Moves: []string{"a", "b"}, Comments: []string{"c"}, Spell: "e"}
	dst := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		var ok bool
		if dst, _, _, ok = appendFast(dst[:0], v, false); !ok {
			t.Fatal("the fast encoder gave up")
		}
	})
	if allocs > 0 {
		t.Errorf("encoding a round: %v allocations, want 0", allocs)
	}
}

// The driver's decoder loops forever on a document holding, under a key the
// target does not have, a string of negative length (it skips the value
// backwards); the fuzzer found it. Decode refuses malformed values before
// they reach the driver. Without that check this test hangs.
func TestMalformedDoesNotHang(t *testing.T) {
	// Found by FuzzFastEncodeAgrees: key "\x10" holds a string of length
	// -18, and the driver skips back into the document again and again.
	doc := []byte("\xf6\x00\x00\x00\x02s\x00\x04\x00\x00\x00\xa5\xbc2\x00\x02\x10\x00\xee\xff\xff\xff\x10\x00\x87\xfc\xff\xff\x10\x00\xff\xff\xff\x7f\x12i64\x00\xff\xff\xff\x7f\x00\x00\x00\x00\x12u\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\xff\x00\x00\x00\x10\x00\x7f\xef\x00\x00\x12u32\x00\x95\x98\xae\x1c\x00\x00\x00\x00\x12u64\x00\x00\x00\x00@\x00\x00\x00\x00\x01f\x00UUUE\xf1\xc7{\xc1\x01f32\x00\x00\x00\x00\x00\x00\x00ptyE")
	done := make(chan error, 1)
	go func() {
		var k kinds
		done <- Decode(append([]byte{byte(bson.TypeEmbeddedDocument)}, doc...), &k)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode = %v, want ErrMalformed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Decode of a malformed document did not return")
	}
}

// wellFormed accepts every value the driver writes and refuses every cut
// or overlong one.
func TestWellFormed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vals := append(values(), bson.Regex{Pattern: "a", Options: "i"}, bson.Binary{Subtype: 2, Data: []byte{1}},
		bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "a", Value: 1}}}, bson.DBPointer{DB: "d"},
		bson.Symbol("s"), bson.JavaScript("j"), bson.MinKey{}, bson.MaxKey{}, bson.Undefined{},
		bson.Timestamp{T: 1}, bson.NewObjectID(), bson.NewDecimal128(1, 2), bson.DateTime(3))
	for range 200 {
		vals = append(vals, randomValue(r))
	}
	var deep any = "bottom" // deeper than MongoDB allows, as the driver writes it
	for range 300 {
		deep = bson.A{deep}
	}
	vals = append(vals, deep)
	for _, v := range vals {
		typ, data, err := bson.MarshalValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if !wellFormed(typ, data) {
			t.Errorf("%T %x: not well-formed", v, data)
		}
		if len(data) > 0 && wellFormed(typ, data[:len(data)-1]) {
			t.Errorf("%T: a cut value is well-formed", v)
		}
		if wellFormed(typ, append(data[:len(data):len(data)], 0)) {
			t.Errorf("%T: an overlong value is well-formed", v)
		}
	}
}
