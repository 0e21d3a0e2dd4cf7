package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// Fill sets every exported field of the struct *v, recursively, to a
// non-zero value derived from seed, and gives every slice n elements (so a
// partitioned field holds n element entries). Interfaces, channels and
// functions are left alone; maps get one entry when their key is a string.
// It is for tests that need a sample aggregate of a type they do not know,
// such as the layout check of every golden input.
func Fill(v any, seed, n int) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("storetest.Fill: want a non-nil pointer, have %T", v))
	}
	fill(rv.Elem(), seed, n, 0)
}

func fill(v reflect.Value, seed, n, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2024, 1, 1+seed%28, 12, 0, 0, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed%100 + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(seed%100 + 1))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed, n, depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(s.Index(i), seed*10+i, n, depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), seed*10+i, n, depth+1)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, seed, n, depth+1)
		m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", seed)).Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed+i, n, depth+1)
			}
		}
	}
}

// CheckSampleLayout writes sample blocks of aggregate class d to store s
// and checks that the entry keys s physically holds (Store.Layout) are
// exactly the ones the model says, want[n] for a block whose partitions
// hold n elements, and that the descriptor agrees (Desc.Entries). It
// checks blocks with 0 and 2 elements per partition, and, for an
// aggregate with partitions, the block of 2 after one Append to each
// partition (want[3]); an expires field is set to a time far ahead.
// noamgen's golden layout test calls it for every
// golden input and every store, with want computed from the parsed model.
func CheckSampleLayout[T any, K comparable](t *testing.T, d *runtime.Desc[T, K], s runtime.Store[T, K], want map[int][]string) {
	t.Helper()
	ctx := context.Background()
	repo := runtime.NewRepo(d, s)
	if err := repo.Ensure(ctx); err != nil {
		t.Fatalf("%s: Ensure: %v", d.Aggregate, err)
	}
	check := func(what string, id K, n int, v *T) {
		t.Helper()
		w := slices.Clone(want[n])
		if w == nil {
			t.Fatalf("%s: no expected layout for %d elements per partition", d.Aggregate, n)
		}
		slices.Sort(w)
		desc := d.Entries(v)
		slices.Sort(desc)
		if !slices.Equal(desc, w) {
			t.Errorf("%s %s: the descriptor says entries %q, the model %q", d.Aggregate, what, desc, w)
		}
		got, err := s.Layout(ctx, id)
		if err != nil {
			t.Fatalf("%s %s: Layout: %v", d.Aggregate, what, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s %s: the %s store holds entries %q, the model says %q", d.Aggregate, what, s.Caps().Name, got, w)
		}
	}
	for i, n := range []int{0, 2} {
		v := new(T)
		Fill(v, 1+i, n)
		d.SetVersion(v, 0)
		if d.Expires != nil {
			// Fill's times have passed: a sample that expires later
			// stays readable (and Redis keeps its hash).
			if err := d.Expires.Assign(v, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
		}
		if err := repo.Create(ctx, v); err != nil {
			t.Fatalf("%s: Create of a sample with %d elements per partition: %v", d.Aggregate, n, err)
		}
		id := *d.ID(v)
		stored, err := repo.Get(ctx, id)
		if err != nil {
			t.Fatalf("%s: Get %v: %v", d.Aggregate, id, err)
		}
		check(fmt.Sprintf("block %v (%d elements per partition)", id, n), id, n, stored)
		if n == 0 || len(d.Partitions()) == 0 {
			continue
		}
		for _, f := range d.Partitions() {
			if _, err := repo.Append(ctx, "Append"+f.Name, id, f, f.Elem(v, 0)); err != nil {
				t.Fatalf("%s: append to %s: %v", d.Aggregate, f.Key, err)
			}
		}
		if stored, err = repo.Get(ctx, id); err != nil {
			t.Fatalf("%s: Get %v: %v", d.Aggregate, id, err)
		}
		check(fmt.Sprintf("block %v after one append per partition", id), id, n+1, stored)
	}
}
