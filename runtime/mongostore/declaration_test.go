package mongostore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
)

// TestDeclaredNames checks the names and limits the declaration shows
// against the adapter's.
func TestDeclaredNames(t *testing.T) {
	for _, c := range [][2]any{
		{layout.TableName("Hotel", "name"), mongostore.TableName("Hotel", "name")},
		{layout.Counters, mongostore.CountersCollection},
		{layout.Len, mongostore.LenKey},
		{layout.Seq, mongostore.SeqKey},
		{layout.Inc, mongostore.IncKey},
		{layout.MaxDocumentBytes, (*mongostore.Store[struct{}, string])(nil).Caps().MaxValueBytes},
	} {
		if c[0] != c[1] {
			t.Errorf("the declaration says %v, the adapter %v", c[0], c[1])
		}
	}
}
