package dynamostore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/noamgen/noamgen/runtime/bsonval"
)

type avNamed string

// avKinds has a field of every kind decodeAV reads.
type avKinds struct {
	S     string   `bson:"s"`
	Named avNamed  `bson:"named"`
	B     bool     `bson:"b"`
	I     int      `bson:"i"`
	I8    int8     `bson:"i8"`
	I64   int64    `bson:"i64,omitempty"`
	U     uint     `bson:"u"`
	U16   uint16   `bson:"u16"`
	F     float64  `bson:"f"`
	F32   float32  `bson:"f32"`
	Strs  []string `bson:"strs"`
	Ints  [][]int32
	In    round   `bson:"in"`
	Ins   []round `bson:"ins"`
}

// throughBSON is Decode's way without decodeAV.
func throughBSON(av types.AttributeValue, v any) error {
	b, t, err := appendBSON(nil, av)
	if err != nil {
		return err
	}
	return bsonval.DecodeValue(bson.Type(t), b, v)
}

var numbers = []string{"0", "12", "-3", "127", "128", "-129", "65536", "-1", "1.5", "1e3", "2.5e-3",
	"9223372036854775807", "99999999999999999999", "0.0", "-0", "1e400", "3.4e38", "0.1", "x"}

// randomAV makes an attribute value for type t: mostly one of its shape,
// sometimes any other.
func randomAV(r *rand.Rand, t reflect.Type, depth int) types.AttributeValue {
	if r.IntN(8) == 0 || depth > 4 {
		switch r.IntN(7) {
		case 0:
			return &types.AttributeValueMemberNULL{Value: true}
		case 1:
			return &types.AttributeValueMemberS{Value: "s"}
		case 2:
			return &types.AttributeValueMemberN{Value: numbers[r.IntN(len(numbers))]}
		case 3:
			return &types.AttributeValueMemberBOOL{Value: true}
		case 4:
			return &types.AttributeValueMemberSS{Value: []string{"a"}}
		case 5:
			return &types.AttributeValueMemberB{Value: []byte{1}}
		}
		return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"zz": &types.AttributeValueMemberS{Value: "x"}}}
	}
	switch t.Kind() {
	case reflect.String:
		return &types.AttributeValueMemberS{Value: fmt.Sprint("v", r.IntN(100))}
	case reflect.Bool:
		return &types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return &types.AttributeValueMemberN{Value: numbers[r.IntN(len(numbers))]}
	case reflect.Slice:
		l := make([]types.AttributeValue, r.IntN(4))
		for i := range l {
			l[i] = randomAV(r, t.Elem(), depth+1)
		}
		return &types.AttributeValueMemberL{Value: l}
	case reflect.Struct:
		m := map[string]types.AttributeValue{}
		for i := range t.NumField() {
			if r.IntN(3) == 0 {
				continue
			}
			name := t.Field(i).Tag.Get("bson")
			if name == "" {
				name = "ints"
			}
			if j := len(name); j > 0 {
				for k := range name {
					if name[k] == ',' {
						j = k
						break
					}
				}
				name = name[:j]
			}
			m[name] = randomAV(r, t.Field(i).Type, depth+1)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// Whatever decodeAV decodes, the way through BSON decodes without error to
// the same value; when it gives up, the target is untouched. Random
// attribute values of the targets' shapes and of others.
func TestDecodeAVAgreesWithBSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	decoded := 0
	for range 20000 {
		for _, typ := range []reflect.Type{reflect.TypeFor[avKinds](), reflect.TypeFor[[]round](), reflect.TypeFor[round]()} {
			av := randomAV(r, typ, 0)
			p := reflect.New(typ)
			if !decodeAV(av, p.Interface()) {
				if !p.Elem().IsZero() {
					t.Fatalf("gave up on %#v but changed the target to %#v", av, p.Elem().Interface())
				}
				continue
			}
			decoded++
			q := reflect.New(typ)
			if err := throughBSON(av, q.Interface()); err != nil {
				t.Fatalf("decodeAV decoded %#v from %#v, the way through BSON fails: %v", p.Elem().Interface(), av, err)
			}
			if got, want := fmt.Sprintf("%#v", p.Elem().Interface()), fmt.Sprintf("%#v", q.Elem().Interface()); got != want {
				t.Fatalf("from %#v:\ndecodeAV %s\nBSON     %s", av, got, want)
			}
		}
	}
	if decoded < 5000 {
		t.Fatalf("decodeAV decoded only %d of 60,000 values: the test compares too little", decoded)
	}
}

// Values written by Encode decode on the fast way (floats with a fraction:
// an integral float is an N without one, which goes through BSON).
func TestDecodeAVReadsEncodedValues(t *testing.T) {
	for _, v := range []any{
		[]round{{Moves: []string{"a", ""}, Comments: []string{"c"}, Spell: "s"}, {}},
		avKinds{S: "s", Named: "n", B: true, I: -1 << 40, I8: -128, I64: 7, U: 1 << 40, U16: 65535, F: 1.5, F32: 0.25,
			Strs: []string{"x"}, Ints: [][]int32{{1}, nil, {}}, In: round{Moves: []string{"m"}}, Ins: []round{{Spell: "z"}}},
	} {
		av, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		p := reflect.New(reflect.TypeOf(v))
		if !decodeAV(av, p.Interface()) {
			t.Fatalf("decodeAV gave up on %#v", av)
		}
		if !reflect.DeepEqual(p.Elem().Interface(), v) {
			t.Fatalf("decodeAV: %#v, want %#v", p.Elem().Interface(), v)
		}
	}
}

// throughBSONAV is Encode's way without encodeAV.
func throughBSONAV(v any) (types.AttributeValue, error) {
	b, err := bsonval.Encode(v)
	if err != nil {
		return nil, err
	}
	return fromBSON(bsoncore.Value{Type: bsoncore.Type(b[0]), Data: b[1:]})
}

// randomGo makes a random value of type t, with the numbers that are
// special to attribute values (NaN, infinities, out of N's range, -0,
// uints over the int64 range) and nil, empty and full slices.
func randomGo(r *rand.Rand, t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2, 1e-200, 1e200, math.NaN(), math.Inf(1), 3.4e38, 0.1}
	switch t.Kind() {
	case reflect.String:
		v.SetString([]string{"", "a", "$bson", "ü"}[r.IntN(4)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.Uint64()) >> (64 - t.Bits()))
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64() >> (64 - t.Bits()) >> uint(r.IntN(2)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(floats[r.IntN(len(floats))])
	case reflect.Slice:
		if r.IntN(3) == 0 || depth > 3 {
			if r.IntN(2) == 0 {
				v.Set(reflect.MakeSlice(t, 0, 0))
			}
			return v
		}
		n := 1 + r.IntN(3)
		v.Set(reflect.MakeSlice(t, n, n))
		for i := range n {
			v.Index(i).Set(randomGo(r, t.Elem(), depth+1))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && r.IntN(4) != 0 {
				v.Field(i).Set(randomGo(r, t.Field(i).Type, depth+1))
			}
		}
	}
	return v
}

// rawOnly is a struct whose one field is named like a raw BSON value.
type rawOnly struct {
	X string `bson:"$bson"`
}

// encodeAV makes exactly the attribute value the way through BSON makes,
// for random values; it gives up only where that way errs or keeps raw
// BSON, and the way through BSON then decides.
func TestEncodeAVAgreesWithBSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	encoded := 0
	for range 20000 {
		for _, typ := range []reflect.Type{reflect.TypeFor[avKinds](), reflect.TypeFor[[]round](), reflect.TypeFor[rawOnly](), reflect.TypeFor[[]float32]()} {
			v := randomGo(r, typ, 0).Interface()
			want, wantErr := throughBSONAV(v)
			got, ok := encodeAV(v)
			if !ok {
				continue
			}
			encoded++
			if wantErr != nil {
				t.Fatalf("encodeAV encoded %#v, which the way through BSON refuses: %v", v, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%#v:\nencodeAV %#v\nBSON     %#v", v, got, want)
			}
		}
	}
	if encoded < 40000 {
		t.Fatalf("encodeAV encoded only %d of 80,000 values", encoded)
	}
	if _, ok := encodeAV(rawOnly{X: "x"}); ok {
		t.Error("encodeAV encoded a struct whose one key is $bson")
	}
	if av, err := Encode(rawOnly{X: "x"}); err != nil || av.(*types.AttributeValueMemberM).Value[rawKey] == nil {
		t.Errorf("Encode of a struct whose one key is $bson: %#v, %v, want raw BSON", av, err)
	}
}
