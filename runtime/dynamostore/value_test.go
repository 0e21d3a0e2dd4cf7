package dynamostore

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

type inner struct {
	N    int64             `bson:"n"`
	F    float64           `bson:"f"`
	S    string            `bson:"s,omitempty"`
	P    *inner            `bson:"p"`
	M    map[string]string `bson:"m"`
	B    []byte            `bson:"b"`
	When time.Time         `bson:"when"`
}

// TestValueRoundTrip: values come back as they were, also those DynamoDB
// has no attribute type for (kept as {"$bson": B}).
func TestValueRoundTrip(t *testing.T) {
	when := time.Date(2012, 1, 2, 3, 4, 5, 678e6, time.UTC)
	for _, v := range []any{
		"", "ü\x00x", int64(math.MaxInt64), int64(math.MinInt64), int32(-7), 3.0, 0.1, -2.5e300,
		math.NaN(), math.Inf(1), math.Inf(-1), 1e-200, math.MaxFloat64, 1e125, true, false,
		[]string{}, []string{"a", ""}, map[string]int{"": 1, "a.b": 2, "$x": 3}, map[string]int{"$bson": 1}, map[string]int{"$bson": 1, "x": 2},
		inner{N: 1, F: 2, P: &inner{S: "deep"}, M: map[string]string{"k": "v"}, B: []byte{0, 1}, When: when},
		bson.NewObjectID(), when,
	} {
		av, err := Encode(v)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", v, err)
		}
		p := reflect.New(reflect.TypeOf(v))
		if err := (&decoder{av: av}).Decode(p.Interface()); err != nil {
			t.Fatalf("Decode(%#v) from %#v: %v", v, av, err)
		}
		got := p.Elem().Interface()
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			if g := got.(float64); !math.IsNaN(g) {
				t.Fatalf("NaN came back as %v", g)
			}
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("round trip of %#v: got %#v (stored %#v)", v, got, av)
		}
	}
}

// TestValueShape: values are native attribute values.
func TestValueShape(t *testing.T) {
	av, err := Encode(inner{N: 3, F: 1.5, S: "x", When: time.Date(2012, 1, 2, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	m := av.(*types.AttributeValueMemberM).Value
	if m["n"].(*types.AttributeValueMemberN).Value != "3" || m["f"].(*types.AttributeValueMemberN).Value != "1.5" ||
		m["s"].(*types.AttributeValueMemberS).Value != "x" || m["when"].(*types.AttributeValueMemberS).Value != "2012-01-02T00:00:00.000Z" {
		t.Fatalf("attributes: %#v", m)
	}
	if _, ok := m["p"].(*types.AttributeValueMemberNULL); !ok {
		t.Fatalf("a nil pointer: %#v", m["p"])
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), 2.5e300, -1e200, 1e-200, math.SmallestNonzeroFloat64} {
		av, _ := Encode(f)
		if m, ok := av.(*types.AttributeValueMemberM); !ok || m.Value[rawKey] == nil {
			t.Fatalf("%v is no N value, but stored as %#v", f, av)
		}
	}
}

// TestEnsureRefusesBadTableNames: a collection DynamoDB cannot name a
// table after (here shorter than 3 characters, which the generator lets
// through because a table-name prefix may lengthen it) fails
// EnsureIndexes with ErrInvalid before any request; with a prefix it is a
// valid name.
func TestEnsureRefusesBadTableNames(t *testing.T) {
	d := &runtime.Desc[struct{}, string]{Aggregate: "K", Collection: "K"}
	err := Open[struct{}, string](nil, d).Ensure(context.Background())
	if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), `table "K"`) || !strings.Contains(err.Error(), "TablePrefix") {
		t.Fatalf("Ensure of table K: %v", err)
	}
	if s := Open[struct{}, string](nil, d, Options{TablePrefix: "app_"}); CheckTableName(s.Table()) != "" {
		t.Fatalf("table %q refused: %s", s.Table(), CheckTableName(s.Table()))
	}
	for name, ok := range map[string]bool{"Game": true, "Game__index": true, "a.b-c_d": true, "ab": false, "sessions:v2": false, strings.Repeat("x", 256): false} {
		if got := CheckTableName(name) == ""; got != ok {
			t.Errorf("CheckTableName(%.20q) accepts: %v, want %v", name, got, ok)
		}
	}
}

type round struct {
	Moves    []string `bson:"moves"`
	Comments []string `bson:"comments,omitempty"`
	Actions  []string `bson:"actions,omitempty"`
	Spell    string   `bson:"spell,omitempty"`
}

// Decoding reads the attribute values straight into the Go value
// (decodeAV): a round costs its slices, its strings are the attribute
// values'. (The way through BSON made 28 allocations, 13 with one
// buffer.)
func TestDecodeAllocations(t *testing.T) {
	v := []round{{Moves: []string{"a", "b"}, Comments: []string{"c"}, Actions: []string{"d"}, Spell: "e"}}
	av, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	var got []round
	allocs := testing.AllocsPerRun(100, func() {
		got = nil
		if err := Decode(av, &got); err != nil {
			t.Fatal(err)
		}
	})
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("got %#v", got)
	}
	// 4 slices.
	if allocs > 4 {
		t.Errorf("decoding a round: %v allocations, want at most 4", allocs)
	}
}
