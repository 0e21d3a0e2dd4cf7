package dynamostore_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// onTable reports whether a logged request body names table.
func onTable(body []byte, table string) bool {
	return bytes.Contains(body, []byte(`"TableName":"`+table+`"`))
}

// addsBeforeBlockWrite counts the index PutItem requests of log sent
// before its first write of the block table (0 if there is none).
func addsBeforeBlockWrite(log []request, index, blocks string) (int, bool) {
	n := 0
	for _, r := range log {
		switch {
		case r.op == "PutItem" && onTable(r.body, index):
			n++
		case (r.op == "PutItem" || r.op == "UpdateItem" || r.op == "DeleteItem") && onTable(r.body, blocks):
			return n, true
		}
	}
	return n, false
}

// scan reads every item of a table.
func (f *fixture) scan(t *testing.T, table string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := f.plain.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	must(t, err)
	return out.Items
}

// testCancelBeforeBlockWrite: a protocol write whose context is cancelled
// once its index items were added, before its block request is sent,
// never sends that request and so is definitely not applied: it removes
// its items before returning (both tables exactly as before, Repair finds
// nothing) and fails with the context's error, not an unknown outcome.
func testCancelBeforeBlockWrite(t *testing.T, f *fixture) {
	ms := f.matches(t)
	index, blocks := f.prefix+dynamostore.IndexTable("matches"), f.prefix+"matches"
	for _, id := range []string{"dry", "m"} {
		must(t, ms.Create(ctx, storetest.StartMatch(id)))
	}
	for _, w := range storetest.MatchWrites() {
		// A dry run on another block counts the index items added
		// before the block write.
		f.log.take()
		must(t, w.Run(ctx, ms, "dry"))
		n, ok := addsBeforeBlockWrite(f.log.take(), index, blocks)
		if !ok || n == 0 {
			t.Fatalf("%s: the dry run wrote no index item before the block (%d, %v)", w.Name, n, ok)
		}
		beforeIndex, beforeBlocks := f.scan(t, index), f.scan(t, blocks)
		c, cancel := context.WithCancel(ctx)
		seen := 0
		f.log.after = func(op string, body []byte) {
			if op == "PutItem" && onTable(body, index) {
				if seen++; seen == n {
					cancel()
				}
			}
		}
		err := w.Run(c, ms, "m")
		f.log.after = nil
		cancel()
		log := f.log.take()
		if seen < n {
			t.Fatalf("%s: %d index items added, want %d", w.Name, seen, n)
		}
		storetest.CheckNotSent(t, w.Name, err)
		for _, r := range log {
			if r.op != "GetItem" && r.op != "Query" && onTable(r.body, blocks) {
				t.Fatalf("%s: %s of the block table sent after the cancel", w.Name, r.op)
			}
		}
		if got := f.scan(t, index); !sameItems(got, beforeIndex) {
			t.Fatalf("%s: the index table changed: %d items before, %d after", w.Name, len(beforeIndex), len(got))
		}
		if got := f.scan(t, blocks); !sameItems(got, beforeBlocks) {
			t.Fatalf("%s: the block table changed", w.Name)
		}
		rep, err := ms.Repair(ctx)
		must(t, err)
		if rep.Added+rep.Removed+len(rep.Conflicts) != 0 {
			t.Fatalf("%s: Repair after the cancelled write fixed %+v", w.Name, rep)
		}
	}
}

// sameItems compares two scans, in any order.
func sameItems(a, b []map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && reflect.DeepEqual(x, y) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
