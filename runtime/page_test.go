package runtime

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// listing serves ints 0..n-1 in pages, with integer positions as cursors.
func listing(n int, failAt int) func(context.Context, PageRequest) (Page[int], error) {
	return func(_ context.Context, req PageRequest) (Page[int], error) {
		start := 0
		if req.Cursor != "" {
			start, _ = strconv.Atoi(req.Cursor)
		}
		if failAt >= 0 && start >= failAt {
			return Page[int]{}, errors.New("store down")
		}
		end := min(start+req.Size(), n)
		p := Page[int]{}
		for i := start; i < end; i++ {
			p.Items = append(p.Items, i)
		}
		if end < n {
			p.Next = strconv.Itoa(end)
		}
		return p, nil
	}
}

func TestPages(t *testing.T) {
	var got []int
	for v, err := range Pages(context.Background(), 3, listing(10, -1)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("Pages: %v", got)
	}
	// Breaking out early stops asking for pages.
	calls := 0
	counting := func(ctx context.Context, req PageRequest) (Page[int], error) {
		calls++
		return listing(100, -1)(ctx, req)
	}
	for v := range Pages(context.Background(), 5, counting) {
		if v == 6 {
			break
		}
	}
	if calls != 2 {
		t.Fatalf("%d pages asked for after breaking at item 6 of pages of 5", calls)
	}
	// An error ends the iteration after the items before it.
	got = nil
	var gotErr error
	for v, err := range Pages(context.Background(), 4, listing(10, 4)) {
		if err != nil {
			gotErr = err
			continue
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3}) || gotErr == nil {
		t.Fatalf("items %v, error %v", got, gotErr)
	}
}
