package runtime

import (
	"context"
	"iter"
	"slices"
)

// DefaultPageLimit is the page size used when a PageRequest has no Limit.
const DefaultPageLimit = 100

// MaxPageLimit caps PageRequest.Limit.
const MaxPageLimit = 10000

// PageRequest asks for one page of a keyset-paginated listing.
type PageRequest struct {
	// Limit is the most items to return; <= 0 means DefaultPageLimit.
	Limit int
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Desc asks for descending order, the last item first (newest
	// first where keys grow with time: counters, uuid v7 ids, appended
	// elements). A cursor is bound to its direction: one from a page of
	// the other direction fails with ErrBadCursor. A store that keeps no
	// key order for a listing (Caps.OrderedScan false: DynamoDB's List
	// and All) refuses it with ErrUnsupported.
	Desc bool
}

// Size is the effective page size.
func (r PageRequest) Size() int {
	switch {
	case r.Limit <= 0:
		return DefaultPageLimit
	case r.Limit > MaxPageLimit:
		return MaxPageLimit
	}
	return r.Limit
}

// Page is one page of results.
type Page[T any] struct {
	Items []T
	// Next is the cursor of the following page; empty when this page is the last.
	Next string
}

// Pages iterates over every item of a keyset-paginated listing, asking
// list for pages of limit items and following their Next cursors; it stops
// at the first error, which is yielded with a zero item. For example:
//
//	for h, err := range runtime.Pages(ctx, 100, func(ctx context.Context, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
//		return hotels.ListByTags(ctx, "spa", req)
//	}) { ... }
func Pages[T any](ctx context.Context, limit int, list func(context.Context, PageRequest) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		req := PageRequest{Limit: limit}
		for {
			page, err := list(ctx, req)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			req.Cursor = page.Next
		}
	}
}

// ElemWindow returns the indexes that a page of up to n elements of a
// partition of count elements reads (Store.ReadElems), in the page's
// order: from index start on, or with desc down from index start (start
// < 0, or past the last element: from the last) to 0; and whether
// elements follow them.
func ElemWindow(count, start, n int, desc bool) ([]int, bool) {
	lo, hi := max(start, 0), min(count, max(start, 0)+n)
	if desc {
		top := count - 1
		if start >= 0 && start < top {
			top = start
		}
		lo, hi = max(0, top-n+1), top+1
	}
	if hi <= lo {
		return nil, false
	}
	idx := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	if desc {
		slices.Reverse(idx)
		return idx, lo > 0
	}
	return idx, hi < count
}
