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

// TestPaginateDirection: paginate binds a cursor to its direction (a
// cursor of an ascending page is refused by a descending one, and the
// reverse, with ErrBadCursor) and passes the direction's position on.
func TestPaginateDirection(t *testing.T) {
	const n = 7
	wrap := func(err error) error { return Fail("List", "Thing", nil, nil, err) }
	page := func(req PageRequest) (Page[int64], error) {
		return paginate("Thing.List", req, func(after []byte, size int) ([]int64, []byte, bool, error) {
			// Items 1..n; a position is the last item's number.
			next, step := int64(1), int64(1)
			if req.Desc {
				next, step = n, -1
			}
			if after != nil {
				p, err := positionIn(after, 1, n)
				if err != nil {
					return nil, nil, false, err
				}
				next = p + step
			}
			var items []int64
			for ; next >= 1 && next <= n && len(items) < size; next += step {
				items = append(items, next)
			}
			if len(items) == 0 {
				return nil, nil, false, nil
			}
			return items, AppendInt(nil, items[len(items)-1]), next >= 1 && next <= n, nil
		}, wrap)
	}
	all := func(desc bool) []int64 {
		var out []int64
		req := PageRequest{Limit: 3, Desc: desc}
		for {
			p, err := page(req)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Items...)
			if p.Next == "" {
				return out
			}
			req.Cursor = p.Next
		}
	}
	if got := all(false); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("ascending: %v", got)
	}
	if got := all(true); !slices.Equal(got, []int64{7, 6, 5, 4, 3, 2, 1}) {
		t.Fatalf("descending: %v", got)
	}
	for _, desc := range []bool{false, true} {
		first, err := page(PageRequest{Limit: 2, Desc: desc})
		if err != nil || first.Next == "" {
			t.Fatalf("first page (desc %v): %v %v", desc, first, err)
		}
		if _, err := page(PageRequest{Limit: 2, Desc: desc, Cursor: first.Next}); err != nil {
			t.Fatalf("the cursor in its own direction (desc %v): %v", desc, err)
		}
		_, err = page(PageRequest{Limit: 2, Desc: !desc, Cursor: first.Next})
		var e *Error
		if !errors.Is(err, ErrBadCursor) || !errors.As(err, &e) {
			t.Fatalf("a cursor of a page with desc %v, passed with desc %v: %v, want an *Error of ErrBadCursor", desc, !desc, err)
		}
		if _, err := DecodeCursor(DescQuery("Thing.List", !desc), first.Next); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("DecodeCursor in the other direction (desc %v): %v", !desc, err)
		}
	}
	if DescQuery("q", false) != "q" || DescQuery("q", true) == "q" {
		t.Fatal("DescQuery: an ascending query keeps its name, a descending one gets another")
	}
}

func TestElemWindow(t *testing.T) {
	for _, c := range []struct {
		count, start, n int
		desc            bool
		want            []int
		more            bool
	}{
		{5, 0, 2, false, []int{0, 1}, true},
		{5, 3, 2, false, []int{3, 4}, false},
		{5, 5, 2, false, nil, false},
		{5, -1, 2, true, []int{4, 3}, true},
		{5, 2, 2, true, []int{2, 1}, true},
		{5, 1, 2, true, []int{1, 0}, false},
		{5, 9, 3, true, []int{4, 3, 2}, true},
		{0, -1, 3, true, nil, false},
		{3, 0, 3, true, []int{0}, false},
	} {
		got, more := ElemWindow(c.count, c.start, c.n, c.desc)
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("ElemWindow(%d, %d, %d, %v) = %v %v, want %v %v", c.count, c.start, c.n, c.desc, got, more, c.want, c.more)
		}
	}
}
