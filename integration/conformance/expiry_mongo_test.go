package conformance

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
)

// TestExpiryIndexMongo: EnsureIndexes makes the TTL index on the expires
// field, with the partial filter that leaves the zero time out, on a
// server with partial indexes (MongoDB); a server without them (FerretDB
// v1) gets none and EnsureIndexes succeeds (Sweep removes expired
// blocks). Run twice, it changes nothing.
func TestExpiryIndexMongo(t *testing.T) {
	ctx := context.Background()
	db := mongotest.Start(t)
	sessions := expiring.NewSessionMongoRepository(db, mongotest.NativeOptions()...)
	for range 2 {
		if err := sessions.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := db.Collection("sessions").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	var ttl bson.M
	for _, s := range specs {
		if s["name"] == mongostore.ExpiresIndex {
			ttl = s
		}
	}
	t.Logf("indexes: %v", specs)
	if !mongotest.Real() {
		if ttl != nil && ttl["partialFilterExpression"] == nil {
			t.Fatalf("a TTL index without the partial filter would delete blocks whose expires is the zero time: %v", ttl)
		}
		return
	}
	if ttl == nil {
		t.Fatalf("no index %s among %v", mongostore.ExpiresIndex, specs)
	}
	if n, _ := ttl["expireAfterSeconds"].(int32); n != 0 || ttl["partialFilterExpression"] == nil {
		t.Fatalf("index %s is %v, want expireAfterSeconds 0 and a partial filter", mongostore.ExpiresIndex, ttl)
	}
}
