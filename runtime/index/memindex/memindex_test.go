package memindex_test

import (
	"context"
	"testing"

	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/index/indextest"
	"github.com/noamgen/noamgen/runtime/index/memindex"
)

func TestPrimitives(t *testing.T) {
	indextest.Primitives(t, func(t *testing.T) indextest.Harness {
		s := memindex.New[indextest.Doc](2)
		return indextest.Harness{P: s, Write: func(_ context.Context, d indextest.Doc, st index.Stamp) error {
			s.Set(d.Key(), st, d)
			return nil
		}}
	})
}
