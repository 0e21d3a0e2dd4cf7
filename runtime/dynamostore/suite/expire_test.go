package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynamoharness"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
)

// TestTTLAttribute: the item of a block whose expires entry is set holds
// the TTL attribute, its expires time in Unix seconds rounded up, set by
// Create, Put and a setter (SetExpires, Update), and removed when the
// entry becomes the zero time; the entries read back without it.
func TestTTLAttribute(t *testing.T) {
	ctx := context.Background()
	db := dynamoharness.Harness().Open(t)
	sessions := expiring.NewSessionDynamoRepository(db.Handle.(*dynamodb.Client), db.Options...)
	if err := sessions.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	ttl := func(what string) string {
		t.Helper()
		out, err := db.Handle.(*dynamodb.Client).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(dynamoharness.Prefix(db) + "sessions"), ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Items) != 1 {
			t.Fatalf("%s: %d items, %v", what, len(out.Items), err)
		}
		if n, ok := out.Items[0][dynamostore.TTLAttr].(*types.AttributeValueMemberN); ok {
			return n.Value
		}
		return ""
	}
	exp := time.Date(2061, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	if err := sessions.Create(ctx, &expiring.Session{ID: "s1", Token: "t1", Expires: exp}); err != nil {
		t.Fatal(err)
	}
	if got, want := ttl("Create"), "2871860646"; got != want {
		t.Fatalf("Create: %s = %q, want %q (%v rounded up)", dynamostore.TTLAttr, got, want, exp)
	}
	if err := sessions.SetExpires(ctx, "s1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := ttl("SetExpires(zero)"); got != "" {
		t.Fatalf("SetExpires(zero): %s = %q, want none", dynamostore.TTLAttr, got)
	}
	exp = time.Date(2061, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := sessions.Update(ctx, "s1", expiring.SessionUpdate{Expires: &exp}); err != nil {
		t.Fatal(err)
	}
	if got, want := ttl("Update"), "2871860645"; got != want {
		t.Fatalf("Update: %s = %q, want %q", dynamostore.TTLAttr, got, want)
	}
	s, err := sessions.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	s.Expires = time.Time{}
	if err := sessions.Put(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := ttl("Put(zero)"); got != "" {
		t.Fatalf("Put with the zero time: %s = %q, want none", dynamostore.TTLAttr, got)
	}
}
