package dynamostore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.mongodb.org/mongo-driver/v2/bson"

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

// avInts is avKinds without floats.
type avInts struct {
	S     string   `bson:"s"`
	Named avNamed  `bson:"named"`
	B     bool     `bson:"b"`
	I     int      `bson:"i"`
	I8    int8     `bson:"i8"`
	I64   int64    `bson:"i64,omitempty"`
	U     uint     `bson:"u"`
	U16   uint16   `bson:"u16"`
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

// Values written by Encode decode on the fast way (no float here: an
// integral float is an N without a fraction, which goes through BSON).
func TestDecodeAVReadsEncodedValues(t *testing.T) {
	for _, v := range []any{
		[]round{{Moves: []string{"a", ""}, Comments: []string{"c"}, Spell: "s"}, {}},
		avInts{S: "s", Named: "n", B: true, I: -1 << 40, I8: -128, I64: 7, U: 1 << 40, U16: 65535,
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
