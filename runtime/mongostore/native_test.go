package mongostore

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

type hotelT struct {
	ID    string
	City  string
	Stars int
}

// TestNativeQuery: key ranges of a composite lookup, and cursor positions
// in them, become the filter and sort of one find on the native index.
func TestNativeQuery(t *testing.T) {
	l := &runtime.Lookup[hotelT]{Name: "cityStars", Parts: 2, Paths: []runtime.LookupPath{{Path: "city"}, {Path: "stars", Kind: runtime.PartInt}}}
	s := &Store[hotelT, string]{d: &runtime.Desc[hotelT, string]{Keys: runtime.StringKeys[string]()}}
	str := func(b []byte, v string) []byte { return runtime.AppendString(b, v) }
	num := func(b []byte, v int) []byte { return runtime.AppendInt(b, int64(v)) }
	rng := func(city runtime.Cond[string], stars runtime.Cond[int]) *runtime.KeyRange {
		return runtime.Narrow(runtime.Narrow(runtime.NewKeyRange(nil), "city", city, str), "stars", stars, num)
	}
	after := num(str(nil, "Dortmund"), 4)
	after = runtime.AppendString(after, "h1")
	for _, c := range []struct {
		what         string
		rng          *runtime.KeyRange
		after        []byte
		filter, sort string
		empty        bool
		desc         bool
	}{
		{"Eq, Gte", rng(runtime.Eq("Dortmund"), runtime.Gte(3)), nil,
			`{"city": "Dortmund","stars": {"$gte": {"$numberLong":"3"}}}`, `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"Eq, Gt", rng(runtime.Eq("Dortmund"), runtime.Gt(3)), nil,
			`{"city": "Dortmund","stars": {"$gt": {"$numberLong":"3"}}}`, `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"Eq, Between", rng(runtime.Eq("Dortmund"), runtime.Between(2, 4)), nil,
			`{"city": "Dortmund","stars": {"$gte": {"$numberLong":"2"},"$lt": {"$numberLong":"4"}}}`, `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"Eq, Eq", rng(runtime.Eq("Dortmund"), runtime.Eq(4)), nil,
			`{"city": "Dortmund","stars": {"$numberLong":"4"}}`, `{"_id": {"$numberInt":"1"}}`, false, false},
		{"Eq", rng(runtime.Eq("Dortmund"), runtime.Cond[int]{}), nil,
			`{"city": "Dortmund","stars": {"$gte": {"$numberLong":"-9223372036854775808"}}}`, `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"everything", rng(runtime.Cond[string]{}, runtime.Cond[int]{}), nil,
			`{"city": {"$gte": ""},"stars": {"$gte": {"$numberLong":"-9223372036854775808"}}}`, `{"city": {"$numberInt":"1"},"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"Lt on the first part", rng(runtime.Lt("D"), runtime.Cond[int]{}), nil,
			`{"city": {"$lt": "D"},"stars": {"$gte": {"$numberLong":"-9223372036854775808"}}}`, `{"city": {"$numberInt":"1"},"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"Eq, Gte after a position", rng(runtime.Eq("Dortmund"), runtime.Gte(3)), after,
			`{"city": "Dortmund","$or": [{"stars": {"$gt": {"$numberLong":"4"}}},{"stars": {"$numberLong":"4"},"_id": {"$gt": "h1"}}]}`, `{"stars": {"$numberInt":"1"},"_id": {"$numberInt":"1"}}`, false, false},
		{"an empty range", rng(runtime.Eq("Dortmund"), runtime.Between(4, 2)), nil, "", "", true, false},
		{"Eq, Gte, descending", rng(runtime.Eq("Dortmund"), runtime.Gte(3)), nil,
			`{"city": "Dortmund","stars": {"$gte": {"$numberLong":"3"}}}`, `{"stars": {"$numberInt":"-1"},"_id": {"$numberInt":"-1"}}`, false, true},
		{"Eq, Gte before a position, descending", rng(runtime.Eq("Dortmund"), runtime.Gte(3)), after,
			`{"city": "Dortmund","stars": {"$gte": {"$numberLong":"3"}},"$or": [{"stars": {"$lt": {"$numberLong":"4"}}},{"stars": {"$numberLong":"4"},"_id": {"$lt": "h1"}}]}`, `{"stars": {"$numberInt":"-1"},"_id": {"$numberInt":"-1"}}`, false, true},
		{"Eq, Gt 4 before a position at 4, descending", rng(runtime.Eq("Dortmund"), runtime.Gt(4)), after, "", "", true, true},
	} {
		filter, sort, empty, err := s.nativeQuery(l, c.rng, c.after, c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if empty != c.empty {
			t.Fatalf("%s: empty %v, want %v", c.what, empty, c.empty)
		}
		if empty {
			continue
		}
		if got := ext(t, filter); got != c.filter {
			t.Errorf("%s: filter %s, want %s", c.what, got, c.filter)
		}
		if got := ext(t, sort); got != c.sort {
			t.Errorf("%s: sort %s, want %s", c.what, got, c.sort)
		}
	}
}

func ext(t *testing.T, d bson.D) string {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(raw).String()
}
