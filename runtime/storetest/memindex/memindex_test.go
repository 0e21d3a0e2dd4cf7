package memindex_test

import (
	"context"
	"testing"

	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/indextest"
	"github.com/noamgen/noamgen/runtime/storetest/memindex"
)

func TestPrimitives(t *testing.T) {
	indextest.Primitives(t, func(t *testing.T) indextest.Harness[indextest.Doc] {
		s := memindex.New[indextest.Doc](2)
		return indextest.Harness[indextest.Doc]{
			P: s,
			Write: func(_ context.Context, d indextest.Doc, st index.Stamp) error {
				s.Set(d.Key(), st, d)
				return nil
			},
			View: func(d indextest.Doc) indextest.Doc { return d },
		}
	})
}
