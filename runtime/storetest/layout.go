package storetest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// Layouter is what the layout check asks of a store adapter: the entry
// keys it physically holds for block id, in the model's notation (the
// root entry "", "code", the element count "rounds", "rounds[3]",
// "version"), leaving out what is no entry of the model (a block marker,
// hidden bookkeeping fields). The contract (runtime.Store) does not have
// this method yet; the check skips stores without it.
type Layouter[K any] interface {
	Layout(ctx context.Context, id K) ([]string, error)
}

// repoOf finds the runtime.Repo behind a generated repository: through a
// Repo() method if it has one, otherwise (generated code keeps it in an
// unexported field) by reflection, which is good enough for a test.
func repoOf[T any, K comparable](repo any) (runtime.Repo[T, K], bool) {
	if r, ok := repo.(interface{ Repo() runtime.Repo[T, K] }); ok {
		return r.Repo(), true
	}
	want := reflect.TypeFor[runtime.Repo[T, K]]()
	var find func(v reflect.Value, depth int) (runtime.Repo[T, K], bool)
	find = func(v reflect.Value, depth int) (runtime.Repo[T, K], bool) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return runtime.Repo[T, K]{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || depth > 3 {
			return runtime.Repo[T, K]{}, false
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Type() == want && f.CanAddr() {
				return reflect.NewAt(want, unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(runtime.Repo[T, K]), true
			}
			if f.Kind() == reflect.Struct {
				if r, ok := find(f, depth+1); ok {
					return r, true
				}
			}
		}
		return runtime.Repo[T, K]{}, false
	}
	return find(reflect.ValueOf(repo), 0)
}

// checkLayout checks that the store wrote exactly the entries the model
// says (Desc.Entries) for block id after each step.
func checkLayout[T any, K comparable](t *testing.T, e *env, repo any, steps []func() (K, error)) {
	t.Helper()
	r, ok := repoOf[T, K](repo)
	if !ok {
		t.Skipf("the %T repository does not reveal its runtime.Repo (descriptor and adapter)", repo)
	}
	c := r.S.Caps()
	if e.h.AtomicLookupsPerAggregate {
		c.AtomicLookups = e.h.Caps.AtomicLookups
	}
	c.LookupForms = nil // per aggregate, not per store
	if !reflect.DeepEqual(c, e.h.Caps) {
		t.Errorf("the adapter declares %+v, the harness %+v", c, e.h.Caps)
	}
	l, ok := r.S.(Layouter[K])
	if !ok {
		t.Skipf("the %s adapter (%T) has no Layout(ctx, id) ([]string, error): the store contract needs it to check that a store writes exactly the model's entries (issue 8 item 1)", e.h.Name, r.S)
	}
	for i, step := range steps {
		id, err := step()
		must(t, err)
		stored, err := r.S.Get(bg, id)
		must(t, err)
		want := r.D.Entries(stored)
		got, err := l.Layout(bg, id)
		must(t, err)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: block %v holds entries %q, the model says %q", i, id, got, want)
		}
	}
}

func testLayout(t *testing.T, e *env) {
	t.Run("Match", func(t *testing.T) {
		checkLayout[model.Match, string](t, e, e.Matches, []func() (string, error){
			func() (string, error) { return "m", e.Matches.Create(bg, richMatch("m")) },
			func() (string, error) { _, err := e.Matches.AppendRounds(bg, "m", newRound("m", 9)); return "m", err },
			func() (string, error) {
				m, err := e.Matches.Get(bg, "m")
				if err == nil {
					m.Rounds = m.Rounds[:1]
					err = e.Matches.Put(bg, m)
				}
				return "m", err
			},
			func() (string, error) { return "e", e.Matches.Create(bg, &model.Match{ID: "e"}) },
		})
	})
	t.Run("Journal", func(t *testing.T) {
		checkLayout[model.Journal, model.JournalID](t, e, e.Journals, []func() (model.JournalID, error){
			func() (model.JournalID, error) {
				j := &model.Journal{Owner: "o", Lines: []model.Line{{Kind: "k"}, {}}}
				err := e.Journals.Create(bg, j)
				return j.ID, err
			},
			func() (model.JournalID, error) { _, err := e.Journals.AppendLines(bg, 1, model.Line{}); return 1, err },
			func() (model.JournalID, error) {
				return 1, e.Journals.Update(bg, 1, model.JournalUpdate{Root: &model.Journal{Owner: "p"}})
			},
		})
	})
	t.Run("Card", func(t *testing.T) {
		checkLayout[model.Card, int32](t, e, e.Cards, []func() (int32, error){
			func() (int32, error) { return -1, e.Cards.Create(bg, &model.Card{ID: -1, Labels: []string{"l"}}) },
		})
	})
	t.Run("Reply", func(t *testing.T) {
		checkLayout[model.Reply, model.ReplyKey](t, e, e.Replies, []func() (model.ReplyKey, error){
			func() (model.ReplyKey, error) {
				r := &model.Reply{Key: model.ReplyKey{Thread: "t"}, Body: "b"}
				err := e.Replies.Create(bg, r)
				return r.Key, err
			},
		})
	})
}
