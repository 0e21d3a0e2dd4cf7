package runtime

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func encStr(b []byte, v string) []byte { return AppendString(b, v) }
func encInt(b []byte, v int) []byte    { return AppendInt(b, int64(v)) }

type hotelKey struct {
	city  string
	stars int
}

func TestKeyRangeSelectsLikeConditions(t *testing.T) {
	var keys []hotelKey
	for _, c := range []string{"", "Berlin", "Dort", "Dortmund", "Dortmund\x00", "Essen"} {
		for _, s := range []int{-1, 0, 2, 3, 4, 5} {
			keys = append(keys, hotelKey{c, s})
		}
	}
	type query struct {
		city  Cond[string]
		stars Cond[int]
		match func(k hotelKey) bool
	}
	queries := map[string]query{
		"all":                   {match: func(k hotelKey) bool { return true }},
		"Dortmund":              {city: Eq("Dortmund"), match: func(k hotelKey) bool { return k.city == "Dortmund" }},
		"Dortmund:4":            {city: Eq("Dortmund"), stars: Eq(4), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars == 4 }},
		"Dortmund >=3":          {city: Eq("Dortmund"), stars: Gte(3), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars >= 3 }},
		"Dortmund >3":           {city: Eq("Dortmund"), stars: Gt(3), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars > 3 }},
		"Dortmund <3":           {city: Eq("Dortmund"), stars: Lt(3), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars < 3 }},
		"Dortmund <=3":          {city: Eq("Dortmund"), stars: Lte(3), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars <= 3 }},
		"Dortmund [0,4)":        {city: Eq("Dortmund"), stars: Between(0, 4), match: func(k hotelKey) bool { return k.city == "Dortmund" && k.stars >= 0 && k.stars < 4 }},
		"city >= Dort":          {city: Gte("Dort"), match: func(k hotelKey) bool { return k.city >= "Dort" }},
		"city > Dort":           {city: Gt("Dort"), match: func(k hotelKey) bool { return k.city > "Dort" }},
		"city < Dortmund":       {city: Lt("Dortmund"), match: func(k hotelKey) bool { return k.city < "Dortmund" }},
		"city <= Dortmund":      {city: Lte("Dortmund"), match: func(k hotelKey) bool { return k.city <= "Dortmund" }},
		"city in [Berlin, E)":   {city: Between("Berlin", "E"), match: func(k hotelKey) bool { return k.city >= "Berlin" && k.city < "E" }},
		"empty city":            {city: Eq(""), match: func(k hotelKey) bool { return k.city == "" }},
		"empty range [5, 3)":    {city: Eq("Essen"), stars: Between(5, 3), match: func(k hotelKey) bool { return false }},
		"Dortmund\\x00 stars>0": {city: Eq("Dortmund\x00"), stars: Gt(0), match: func(k hotelKey) bool { return k.city == "Dortmund\x00" && k.stars > 0 }},
	}
	for name, q := range queries {
		r := NewKeyRange(nil)
		r = Narrow(r, "city", q.city, encStr)
		r = Narrow(r, "stars", q.stars, encInt)
		if r.Err() != nil {
			t.Fatalf("%s: %v", name, r.Err())
		}
		for _, k := range keys {
			enc := AppendString(encInt(encStr(nil, k.city), k.stars), "id")
			if got, want := r.Contains(enc), q.match(k); got != want {
				t.Errorf("%s: key %q: in range %v, want %v", name, k, got, want)
			}
		}
	}
}

func TestKeyRangeBadQueries(t *testing.T) {
	for name, build := range map[string]func() *KeyRange{
		"second part alone": func() *KeyRange {
			return Narrow(Narrow(NewKeyRange(nil), "city", Cond[string]{}, encStr), "stars", Eq(4), encInt)
		},
		"after a range": func() *KeyRange {
			return Narrow(Narrow(NewKeyRange(nil), "city", Gte("D"), encStr), "stars", Eq(4), encInt)
		},
	} {
		if err := build().Err(); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: err %v, want ErrBadQuery", name, err)
		}
	}
}

func TestKeyRangeResume(t *testing.T) {
	r := Narrow(NewKeyRange(nil), "city", Eq("Dortmund"), encStr)
	q := r.Query("Hotel.cityStars")
	last := AppendString(encInt(encStr(nil, "Dortmund"), 4), "h1")
	c := EncodeCursor(q, last)
	if err := r.Resume("Hotel.cityStars", c); err != nil {
		t.Fatal(err)
	}
	next := AppendString(encInt(encStr(nil, "Dortmund"), 4), "h2")
	if start := r.Start(); bytes.Compare(start, last) <= 0 || bytes.Compare(start, next) > 0 {
		t.Fatalf("Start %x not between the cursor's key %x and the next key %x", start, last, next)
	}
	// The query, and so the cursors it makes, do not change with the position.
	if r.Query("Hotel.cityStars") != q || r.Cursor("Hotel.cityStars", next) != EncodeCursor(q, next) {
		t.Fatal("resuming changed the query")
	}
	// A validly signed position outside the range is rejected.
	other := Narrow(NewKeyRange(nil), "city", Eq("Berlin"), encStr)
	outside := EncodeCursor(other.Query("Hotel.cityStars"), last)
	if err := other.Resume("Hotel.cityStars", outside); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("position outside the range: %v", err)
	}
	if err := Narrow(NewKeyRange(nil), "city", Eq("Berlin"), encStr).Resume("Hotel.cityStars", c); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor of another range accepted: %v", err)
	}
}

func TestSortKeys(t *testing.T) {
	keys := SortKeys([][]byte{[]byte("b"), []byte("a"), []byte("b"), []byte("")})
	if !slices.EqualFunc(keys, [][]byte{[]byte(""), []byte("a"), []byte("b")}, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("SortKeys: %q", keys)
	}
}

func TestCondString(t *testing.T) {
	for c, want := range map[string]string{Eq(3).String(): "= 3", Gte(3).String(): ">= 3", Between(1, 5).String(): ">= 1 and < 5", (Cond[int]{}).String(): "any"} {
		if c != want {
			t.Errorf("got %q, want %q", c, want)
		}
	}
}
