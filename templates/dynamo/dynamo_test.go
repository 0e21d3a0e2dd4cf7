package dynamo_test

import (
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/dynamo"
)

// A collection name is refused only when its longest table name, the
// index table's, is not a valid DynamoDB table name; the message gives
// that name's length.
func TestCollectionNameLimit(t *testing.T) {
	s, ok := templates.Lookup("dynamo")
	if !ok {
		t.Fatal("no dynamo store")
	}
	check := s.Collection
	longest := 255 - len(dynamostore.IndexTable(""))
	if why := check(strings.Repeat("a", longest)); why != "" {
		t.Errorf("a %d-character name is refused: %s", longest, why)
	}
	why := check(strings.Repeat("a", longest+1))
	if want := "this one 256"; !strings.Contains(why, want) {
		t.Errorf("a %d-character name: %q, want it refused with %q", longest+1, why, want)
	}
	if why := check("a.b-c"); why != "" {
		t.Errorf("a.b-c is refused: %s", why)
	}
	if why := check("a b"); !strings.Contains(why, "not ' '") {
		t.Errorf("a name with a space: %q", why)
	}
}
