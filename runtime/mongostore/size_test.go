package mongostore

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

type sizeRound struct {
	Moves []string          `bson:"moves"`
	Notes map[string]string `bson:"notes,omitempty"`
	At    time.Time
	Ptr   *sizeRound
	N     int64
}

// TestSizeBound: the size bound is never below the encoded size, and it
// is settled without encoding for the usual values.
func TestSizeBound(t *testing.T) {
	for _, v := range []any{
		bson.D{},
		bson.D{{Key: "a", Value: "x"}, {Key: "b", Value: int32(3)}, {Key: "c", Value: nil}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "rounds.3", Value: sizeRound{Moves: []string{"a", strings.Repeat("b", 1000)}}}}}},
		bson.D{{Key: "_id", Value: "g1"}, {Key: "rounds", Value: []sizeRound{{Notes: map[string]string{"k": "v"}, Ptr: &sizeRound{Moves: []string{"z"}}}, {}}}, {Key: "bytes", Value: []byte("abc")}},
		sizeRound{Moves: make([]string, 100)},
	} {
		n, ok := sizeBound(reflect.ValueOf(v), 0)
		if !ok {
			t.Fatalf("%v: no bound", v)
		}
		raw, err := bson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if n < len(raw) {
			t.Errorf("%v: bound %d below the encoded size %d", v, n, len(raw))
		}
		if d, isD := v.(bson.D); isD {
			if m, ok := docBound(d); !ok || m < len(raw) {
				t.Errorf("%v: docBound %d, %v below the encoded size %d", v, m, ok, len(raw))
			}
		}
	}
	if _, ok := sizeBound(reflect.ValueOf(bson.D{{Key: "d", Value: bson.Decimal128{}}}), 0); ok {
		t.Error("a Decimal128 (16 bytes, no exported field) has a bound")
	}
	if fits(bson.D{{Key: "v", Value: strings.Repeat("x", MaxDocumentBytes)}}) {
		t.Error("a 16 MiB string fits")
	}
	if !fits(bson.D{{Key: "v", Value: strings.Repeat("x", MaxDocumentBytes-100)}}) {
		t.Error("a document just under 16 MiB does not fit")
	}
}
