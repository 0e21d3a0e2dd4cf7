package runtime

import (
	"reflect"
	"testing"
)

// TestCounterScopes: the items of a batch group by scope in the order of
// their first items, those to allocate in slice order, the explicit
// numbers raising to the largest; Assign numbers them up to the
// counter's last value and refuses a number the key cannot hold.
func TestCounterScopes(t *testing.T) {
	type key struct {
		scope string
		n     int8
	}
	c := &Counter[key]{
		Split: func(k key) ([]byte, int64) { return []byte(k.scope), int64(k.n) },
		With:  func(k key, n int64) key { return key{k.scope, int8(n)} },
	}
	ids := []key{{"a", 0}, {"b", 7}, {"a", 3}, {"b", 0}, {"a", 0}, {"a", 9}, {"c", 0}}
	skip := []bool{false, false, false, false, false, false, true}
	got := CounterScopes(c, ids, skip)
	want := []*CounterScope[key]{
		{Scope: []byte("a"), Key: key{"a", 0}, Alloc: []int{0, 4}, Given: []int{2, 5}, Raise: 9},
		{Scope: []byte("b"), Key: key{"b", 7}, Alloc: []int{3}, Given: []int{1}, Raise: 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CounterScopes: %+v, want %+v", got, want)
	}
	keys, ok := got[0].Assign(c, ids, 12)
	if !reflect.DeepEqual(keys, []key{{"a", 11}, {"a", 12}}) || !reflect.DeepEqual(ok, []bool{true, true}) {
		t.Errorf("Assign up to 12: %v, %v", keys, ok)
	}
	if _, ok := got[0].Assign(c, ids, 128); ok[0] != true || ok[1] != false {
		t.Errorf("Assign up to 128 of an int8 number: %v, want the second refused", ok)
	}
}

// TestKeyed: the items given a key are copied with it, in slice order;
// the caller's items keep their keys.
func TestKeyed(t *testing.T) {
	type item struct{ ID, Name string }
	d := &Desc[item, string]{ID: func(x *item) *string { return &x.ID }}
	ts := []*item{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	k0, k2 := "k0", "k2"
	at, cs := d.Keyed(ts, []*string{&k0, nil, &k2})
	if !reflect.DeepEqual(at, []int{0, 2}) || len(cs) != 2 || *cs[0] != (item{"k0", "a"}) || *cs[1] != (item{"k2", "c"}) {
		t.Fatalf("Keyed: %v, %+v %+v", at, cs[0], cs[1])
	}
	if ts[0].ID != "" || ts[2].ID != "" {
		t.Errorf("Keyed changed the caller's items: %+v, %+v", *ts[0], *ts[2])
	}
}
