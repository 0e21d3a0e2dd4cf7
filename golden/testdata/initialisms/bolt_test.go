package initialisms

// This test is not part of the golden comparison (only the non-test files
// are inputs): templates/bolt runs it to check that lookup methods follow
// the Go field names (GetBySKU, ListByVendorID) and that the query
// methods of a composite lookup take constants for an int64 part.

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/runtime"
)

func TestBoltInitialisms(t *testing.T) {
	ctx := context.Background()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "shop.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	products := NewProductBoltRepository(db)
	if err := products.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Product{
		{ID: "p1", SKU: "A-1", URL: "/a", Vendor: Vendor{ID: "v1"}, Category: "toys", Price: 1999},
		{ID: "p2", SKU: "A-2", URL: "/b", Vendor: Vendor{ID: "v1"}, Category: "toys", Price: 4999},
		{ID: "p3", SKU: "B-1", URL: "/a", Vendor: Vendor{ID: "v2"}, Category: "books", Price: 999},
	} {
		if err := products.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(page runtime.Page[*Product], err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range page.Items {
			out = append(out, p.ID)
		}
		return out
	}
	all := runtime.PageRequest{}
	if p, err := products.GetBySKU(ctx, "A-2"); err != nil || p.ID != "p2" {
		t.Fatalf("GetBySKU(A-2) = %v, %v", p, err)
	}
	if err := products.SetSKU(ctx, "p2", "A-3"); err != nil {
		t.Fatal(err)
	}
	if _, err := products.GetBySKU(ctx, "A-2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetBySKU of a released SKU: %v", err)
	}
	for _, c := range []struct {
		what string
		got  []string
		want []string
	}{
		{"ListBySKU(A-3)", ids(products.ListBySKU(ctx, "A-3", all)), []string{"p2"}},
		{"ListByURL(/a)", ids(products.ListByURL(ctx, "/a", all)), []string{"p1", "p3"}},
		{"ListByVendorID(v1)", ids(products.ListByVendorID(ctx, "v1", all)), []string{"p1", "p2"}},
		{"toys under 3999", ids(products.ListByCategoryPrice(ctx, ProductCategoryPriceQuery{}.CategoryEq("toys").PriceLt(3999), all)), []string{"p1"}},
		{"toys in [1999, 5000)", ids(products.ListByCategoryPrice(ctx, ProductCategoryPriceQuery{}.CategoryEq("toys").PriceBetween(1999, 5000), all)), []string{"p1", "p2"}},
		{"toys over 1999", ids(products.ListByCategoryPrice(ctx, ProductCategoryPriceQuery{}.CategoryEq("toys").PriceGt(1999), all)), []string{"p2"}},
		{"books", ids(products.ListByCategoryPrice(ctx, ProductCategoryPriceQuery{Category: runtime.Eq("books")}, all)), []string{"p3"}},
		{"category from c", ids(products.ListByCategoryPrice(ctx, ProductCategoryPriceQuery{}.CategoryGte("c"), all)), []string{"p1", "p2"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
