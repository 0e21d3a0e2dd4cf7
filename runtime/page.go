package runtime

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
