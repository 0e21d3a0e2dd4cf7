package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHasZeroPart(t *testing.T) {
	s, i, u := AppendString, AppendInt, AppendUint
	for _, c := range []struct {
		key  []byte
		want bool
	}{
		{s(nil, ""), true},
		{s(nil, "a"), false},
		{s(nil, "\x00"), false}, // an escaped 0 byte is no empty string
		{s(nil, "a\x00b"), false},
		{i(nil, 0), true},
		{i(nil, -1), false},
		{i(nil, 1), false},
		{u(nil, 0), true},
		{u(nil, 1<<63), false},
		{i(s(nil, "paris"), 4), false},
		{i(s(nil, ""), 4), true}, // any zero part
		{i(s(nil, "paris"), 0), true},
		{s(s(nil, "\x00"), ""), true},
		{u(s(nil, "x"), 7), false},
		{nil, false},
		{[]byte{tagString, 'a'}, false}, // unterminated
		{[]byte{tagInt, 0x80}, false},   // short
		{[]byte{0x09}, false},           // no component
	} {
		if got := hasZeroPart(c.key); got != c.want {
			t.Errorf("hasZeroPart(%q %x) = %v, want %v", KeyParts(c.key), c.key, got, c.want)
		}
	}
}

type named struct{ name string }

func namedValues(n *named) [][]byte { return [][]byte{AppendString(nil, n.name)} }

// TestLookupZeroRule: which values a lookup indexes is decided here,
// once; generated Values functions return every value.
func TestLookupZeroRule(t *testing.T) {
	unique := &Lookup[named]{Name: "name", Unique: true, Values: namedValues}
	zeros := &Lookup[named]{Name: "name", Unique: true, IndexZero: true, Values: namedValues}
	plain := &Lookup[named]{Name: "name", Values: namedValues}
	empty, ann := &named{}, &named{name: "ann"}
	for _, c := range []struct {
		l    *Lookup[named]
		t    *named
		want [][]byte
	}{
		{unique, empty, nil},
		{unique, ann, [][]byte{AppendString(nil, "ann")}},
		{zeros, empty, [][]byte{AppendString(nil, "")}},
		{plain, empty, [][]byte{AppendString(nil, "")}},
	} {
		if got := c.l.Keys(c.t); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("unique %v, zeros %v: Keys(%+v) = %q, want %q", c.l.Unique, c.l.IndexZero, *c.t, got, c.want)
		}
		if got, want := c.l.Indexes(AppendString(nil, "")), !c.l.SkipsZeros(); got != want {
			t.Errorf("unique %v, zeros %v: Indexes(\"\") = %v", c.l.Unique, c.l.IndexZero, got)
		}
	}
	if !unique.SkipsZeros() || zeros.SkipsZeros() || plain.SkipsZeros() {
		t.Error("SkipsZeros: only a unique lookup without zeros skips them")
	}
	if !unique.Indexes(AppendString(nil, "ann")) {
		t.Error("a unique lookup does not index a non-zero value")
	}
}

// getByStore is a Store that only answers GetBy, counting the calls.
type getByStore struct {
	Store[named, string]
	calls int
}

func (s *getByStore) GetBy(context.Context, string, *Lookup[named], []byte) (*named, error) {
	s.calls++
	return &named{name: "found"}, nil
}

func (s *getByStore) Caps() Caps { return Caps{} }

// TestGetByZeroValue: GetBy of a value the lookup does not index is
// ErrNotFound on every store, without asking the store.
func TestGetByZeroValue(t *testing.T) {
	s := &getByStore{}
	r := NewRepo(&Desc[named, string]{Aggregate: "Named"}, Store[named, string](s))
	unique := &Lookup[named]{Name: "name", Unique: true, Values: namedValues}
	_, err := r.GetBy(context.Background(), "GetByName", unique, AppendString(nil, ""))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `name "" (a zero value, which the unique lookup does not index)`) || s.calls != 0 {
		t.Fatalf("GetBy of the zero value: %v (%d store calls)", err, s.calls)
	}
	unique.IndexZero = true
	if got, err := r.GetBy(context.Background(), "GetByName", unique, AppendString(nil, "")); err != nil || got.name != "found" || s.calls != 1 {
		t.Fatalf("GetBy of an indexed zero value: %+v, %v (%d store calls)", got, err, s.calls)
	}
}
