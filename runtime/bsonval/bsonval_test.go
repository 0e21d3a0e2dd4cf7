package bsonval

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

type inner struct {
	A string   `bson:"a"`
	B []string `bson:"b,omitempty"`
}

type outer struct {
	Name  string         `bson:"name"`
	N     int            `bson:"n"`
	F     float64        `bson:"f"`
	In    inner          `bson:"in"`
	Ptr   *inner         `bson:"ptr"`
	Ins   []inner        `bson:"ins"`
	M     map[string]int `bson:"m"`
	At    time.Time      `bson:"at"`
	Bytes []byte         `bson:"bytes"`
}

type named string

// values covers the kinds of values entries hold: the fast paths (string,
// int64, bool) and everything the driver's codec encodes.
func values() []any {
	s := "héllo\x00world"
	return []any{
		"", "x", s, string([]byte{0xff, 0xfe}),
		int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64),
		true, false,
		0, 1 << 40, int32(-7), uint8(3), 1.5, math.NaN(),
		named("n"), &s, (*string)(nil),
		[]string(nil), []string{}, []string{"a", "b"},
		[]int{1, 2}, map[string]string{"k": "v"},
		inner{A: "a"}, &inner{A: "p", B: []string{"q"}},
		outer{Name: "o", N: 3, In: inner{A: "i"}, Ins: []inner{{A: "1"}, {A: "2", B: []string{"x"}}}, M: map[string]int{"z": 1}, At: time.Unix(1700000000, 0).UTC(), Bytes: []byte{1, 2}},
		bson.D{{Key: "a", Value: 1}}, bson.M{"b": "c"},
		time.Unix(0, 0).UTC(),
	}
}

func marshalValue(t *testing.T, v any) []byte {
	t.Helper()
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatalf("MarshalValue(%#v): %v", v, err)
	}
	return append([]byte{byte(typ)}, data...)
}

// The stored format must not change: Encode and Append make exactly the
// bytes of bson.MarshalValue.
func TestEncodeIsMarshalValue(t *testing.T) {
	for range 2 { // the second round reuses pooled encoders
		for _, v := range values() {
			want := marshalValue(t, v)
			got, err := Encode(v)
			if err != nil {
				t.Fatalf("Encode(%#v): %v", v, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Encode(%#v) = %x, want %x", v, got, want)
			}
			prefix := []byte("pre")
			app, err := Append(prefix, v)
			if err != nil {
				t.Fatalf("Append(%#v): %v", v, err)
			}
			if !bytes.Equal(app[:3], prefix) || !bytes.Equal(app[3:], want) {
				t.Errorf("Append(%#v) = %x, want pre+%x", v, app, want)
			}
		}
	}
}

// EncodeString makes Encode's bytes as a string.
func TestEncodeString(t *testing.T) {
	for _, v := range append(values(), strings.Repeat("long", 40), int64(7), []round{{Moves: []string{"m"}}}) {
		want, wantErr := Encode(v)
		got, err := EncodeString(v)
		if (err == nil) != (wantErr == nil) || got != string(want) {
			t.Errorf("EncodeString(%#v) = %x, %v; Encode %x, %v", v, got, err, want, wantErr)
		}
	}
}

func TestEncodeError(t *testing.T) {
	if _, err := Encode(nil); err == nil {
		t.Fatal("Encode(nil) succeeded")
	}
	if _, err := Encode(make(chan int)); err == nil {
		t.Fatal("Encode(chan) succeeded")
	}
	if _, err := Append(nil, func() {}); err == nil {
		t.Fatal("Append(func) succeeded")
	}
	// The encoders keep working after a failure.
	got, err := Encode(inner{A: "after"})
	if err != nil || !bytes.Equal(got, marshalValue(t, inner{A: "after"})) {
		t.Fatalf("Encode after a failure = %x, %v", got, err)
	}
}

// Decode reads every value back as bson.UnmarshalValue does, the fast paths
// included.
func TestDecodeRoundTrip(t *testing.T) {
	for _, v := range values() {
		data := marshalValue(t, v)
		rt := reflect.TypeOf(v)
		got, want := reflect.New(rt), reflect.New(rt)
		if err := Decode(data, got.Interface()); err != nil {
			t.Fatalf("Decode(%x) into %s: %v", data, rt, err)
		}
		if err := bson.UnmarshalValue(bson.Type(data[0]), data[1:], want.Interface()); err != nil {
			t.Fatalf("UnmarshalValue: %v", err)
		}
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			continue
		}
		if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
			t.Errorf("Decode(%x) = %#v, UnmarshalValue %#v", data, got.Elem(), want.Elem())
		}
	}
}

// Malformed values and values of another BSON type fail or convert as the
// driver decides, not as the fast paths would.
func TestDecodeFallsBack(t *testing.T) {
	var s string
	for _, bad := range [][]byte{
		{byte(bson.TypeString), 5, 0, 0, 0, 'a', 'b', 0},   // length too long
		{byte(bson.TypeString), 2, 0, 0, 0, 'a', 'b', 0},   // length too short
		{byte(bson.TypeString), 3, 0, 0, 0, 'a', 'b', 'c'}, // no terminator
		{byte(bson.TypeString), 0, 0, 0, 0},                // zero length
		{byte(bson.TypeString), 0xff, 0xff, 0xff, 0xff, 0}, // negative length
		{byte(bson.TypeInt64), 1, 0, 0, 0, 0, 0, 0, 0},     // int64 into a string
		{},
	} {
		if err := Decode(bad, &s); err == nil {
			t.Errorf("Decode(%x) into a string succeeded: %q", bad, s)
		}
	}
	var n int64
	if err := Decode([]byte{byte(bson.TypeInt64), 1, 2}, &n); err == nil {
		t.Error("Decode of a short int64 succeeded")
	}
	// An int32 decodes into an int64 through the driver.
	if err := Decode(append([]byte{byte(bson.TypeInt32)}, 7, 0, 0, 0), &n); err != nil || n != 7 {
		t.Errorf("Decode(int32 7) into an int64 = %d, %v", n, err)
	}
	var b bool
	if err := Decode([]byte{byte(bson.TypeBoolean), 2}, &b); err == nil {
		t.Error("Decode of boolean byte 2 succeeded")
	}
	// Null decodes into the zero value through the driver.
	s = "x"
	if err := Decode([]byte{byte(bson.TypeNull)}, &s); err != nil || s != "" {
		t.Errorf("Decode(null) into a string = %q, %v", s, err)
	}
}

func FuzzString(f *testing.F) {
	f.Add("")
	f.Add("a\x00b")
	f.Fuzz(func(t *testing.T, s string) {
		want := marshalValue(t, s)
		got, err := Encode(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Encode(%q) = %x, %v; want %x", s, got, err, want)
		}
		var back string
		if err := Decode(got, &back); err != nil || back != s {
			t.Fatalf("Decode = %q, %v", back, err)
		}
	})
}

// nestedArrays is n arrays, one inside the other: depth n.
func nestedArrays(n int) any {
	var v any = bson.A{}
	for range n - 1 {
		v = bson.A{v}
	}
	return v
}

// node is a recursive type: one Go level is two BSON levels (a document
// and the array of its kids).
type node struct {
	Kids []node `bson:"kids"`
}

func chain(n int) node {
	var v node
	for range n - 1 {
		v = node{Kids: []node{v}}
	}
	return v
}

// A value at MaxDepth is encoded and reads back; one level more is refused
// by the encoder (a *DepthError, runtime.ErrTooLarge), and by the reader
// (ErrMalformed) when such bytes come from elsewhere.
func TestDepthLimit(t *testing.T) {
	b, err := Encode(nestedArrays(MaxDepth))
	if err != nil {
		t.Fatalf("Encode at MaxDepth: %v", err)
	}
	var out any
	if err := Decode(b, &out); err != nil {
		t.Fatalf("Decode at MaxDepth: %v", err)
	}
	_, err = Encode(nestedArrays(MaxDepth + 1))
	var de *DepthError
	if !errors.As(err, &de) || de.Max != MaxDepth || !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("Encode at MaxDepth+1: %v, want a *DepthError of MaxDepth wrapping runtime.ErrTooLarge", err)
	}
	for _, f := range []func(any) error{
		func(v any) error { _, err := Append(nil, v); return err },
		func(v any) error { _, err := EncodeString(v); return err },
	} {
		if err := f(nestedArrays(MaxDepth + 1)); !errors.As(err, &de) {
			t.Fatalf("Append/EncodeString at MaxDepth+1: %v", err)
		}
	}
	// Bytes one level deeper than the limit, made by the driver.
	deep, data, err := bson.MarshalValue(nestedArrays(MaxDepth + 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeValue(deep, data, &out); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Decode at MaxDepth+1: %v, want ErrMalformed", err)
	}
	// A recursive struct: 500 Go levels are 999 BSON levels, 501 are 1001.
	if _, err := Encode(chain(500)); err != nil {
		t.Fatalf("Encode of 500 nested nodes: %v", err)
	}
	if _, err := Encode(chain(501)); !errors.As(err, &de) {
		t.Fatalf("Encode of 501 nested nodes: %v, want a *DepthError", err)
	}
	// A store's own limit.
	e := NewValueEncoder(true)
	e.SetMaxDepth(5)
	if _, _, err := e.Encode(nestedArrays(5)); err != nil {
		t.Fatalf("depth 5 with a limit of 5: %v", err)
	}
	e = NewValueEncoder(true)
	e.SetMaxDepth(5)
	if _, _, err := e.Encode(nestedArrays(6)); !errors.As(err, &de) || de.Max != 5 {
		t.Fatalf("depth 6 with a limit of 5: %v", err)
	}
	// Types of the fast codec: checked only when the type can be too deep.
	type l3 struct{ A [][]string }
	e = NewValueEncoder(true)
	e.SetMaxDepth(2)
	if _, _, err := e.Encode(l3{A: [][]string{{"x"}}}); !errors.As(err, &de) {
		t.Fatalf("depth 3 of a planned type with a limit of 2: %v", err)
	}
	e = NewValueEncoder(true)
	e.SetMaxDepth(2)
	if _, _, err := e.Encode(l3{A: [][]string{}}); err != nil {
		t.Fatalf("depth 2 of a planned type of depth 3 with a limit of 2: %v", err)
	}
	if p, _ := PlanOf(reflect.TypeFor[l3]()); p.Depth() != 3 {
		t.Fatalf("plan depth of struct{ [][]string }: %d, want 3", p.Depth())
	}
}
