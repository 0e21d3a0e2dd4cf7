package mongotest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// Harness is the test harness of the MongoDB adapter (the store's
// runtime/storetest.Harness, which the conformance suite and the
// examples' suites take), over databases from Start, with the lookup
// mapping of opts: Native or IndexTables.
type Harness struct {
	// Name names the harness in messages and subtests.
	Name string
	// Options are the mongostore options of every repository.
	Options []runtime.Option
	// Atomic: every lookup is a native index, so AtomicLookups holds for
	// aggregates whose lookups are all native.
	Atomic bool
	// UniqueTables: unique lookups are in index tables, whose entries
	// DropClaim can remove (a native unique index refuses a second holder
	// itself).
	UniqueTables bool
	// Tables, when set, says which lookups the mapping keeps in index
	// tables whatever their table option (storetest.Harness.Tables).
	Tables func(access.Lookup) bool
	// Client, optional, are the client options of every database opened
	// (StartWithOptions: a client of the test's own), and Pause what pauses
	// it, for Deadlines (e.g. a dialer that stops forwarding).
	Client *options.ClientOptions
	Pause  func() (resume func())
	// Batches: every lookup is a native index (a real MongoDB), so the
	// batch writes of the model's Match blocks are bulkWrites, but for
	// PutMany, whose version conditions are the single Puts
	// (storetest.Harness.Batches, SinglePuts).
	Batches bool
}

// Native is the harness of the default mapping: lookups on native
// indexes (NativeOptions: on FerretDB unique lookups keep their index
// tables).
func Native() Harness {
	h := Harness{Name: "mongo", Options: NativeOptions(), Atomic: true, UniqueTables: !Real(), Batches: Real()}
	if !Real() {
		h.Tables = func(l access.Lookup) bool { return l.Unique } // mongostore.UniqueTables
	}
	return h
}

// Default is the harness of repositories opened without mapping options:
// their first EnsureIndexes probes the server and records the mapping (on
// FerretDB unique lookups keep index tables, as under UniqueTables; on a
// real MongoDB every lookup is a native index).
func Default() Harness {
	h := Native()
	h.Name, h.Options = "mongo-default", nil
	return h
}

// IndexTables is the harness of the mapping with every lookup in an index
// table (noam:"lookup,table" on every lookup), so that the index-table
// protocol stays tested.
func IndexTables() Harness {
	return Harness{Name: "mongo-tables", Options: []runtime.Option{mongostore.IndexTables()}, UniqueTables: true, Tables: func(access.Lookup) bool { return true }}
}

// Store returns the storetest harness. The concurrency subtests run only
// against a real MongoDB: FerretDB's concurrent writes are not atomic.
// Every database it opens has a client of the test's own, whose command
// monitor counts the commands sent (Requests, one per command, a
// cursor's getMore included, as the declaration runtime/mongostore/layout
// counts them).
func (m Harness) Store() storetest.Harness {
	var commands atomic.Int64
	h := storetest.Harness{
		Name:                      m.Name,
		Caps:                      runtime.Caps{Name: "mongo", System: "mongodb", OrderedScan: true, AtomicLookups: m.Atomic, MaxValueBytes: 16 << 20, MaxDepth: mongostore.MaxDepth},
		AtomicLookupsPerAggregate: m.Atomic,
		Concurrent:                Real(),
		NotConcurrent:             "FerretDB's concurrent writes are not atomic (lost updates); set NOAM_MONGO_URI to run the concurrency subtests against a real MongoDB",
		TimePrecision:             time.Millisecond,
		Declaration:               layout.Store,
		Requests:                  func() int { return int(commands.Load()) },
		Tables:                    m.Tables,
		Batches:                   m.Batches,
		SinglePuts:                m.Batches,
		// countDocuments with a filter on the expires field.
		ExpiringCounts: true,
		Open: func(t *testing.T) storetest.DB {
			db := storetest.DB{Store: "mongo", Handle: StartWithOptions(t, counting(m.Client, &commands)), Options: m.Options}
			if m.Pause != nil {
				db.Pause = func(testing.TB) func() { return m.Pause() }
			}
			return db
		},
		Corrupt: func(t *testing.T, db storetest.DB, collection, id, entry string) {
			// A document where the entry holds a string.
			res, err := db.Handle.(*mongo.Database).Collection(collection).UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: entry, Value: bson.D{{Key: "not", Value: "a string"}}}}}})
			if err != nil || res.MatchedCount != 1 {
				t.Fatalf("corrupting %s of block %s: %v, %+v", entry, id, err, res)
			}
		},
	}
	// FerretDB v1 refuses projections in findAndModify and $slice ones:
	// the adapter resends such a command without, once per client (each
	// database Open returns has a client of its own), and appends with a
	// find and an update.
	if !Real() {
		h.Facts = map[access.Term]int{access.IfProjectionRefused: 1, access.IfNoProjection: 1, access.IfSliceRefused: 1}
	}
	if m.UniqueTables {
		// The entry of a unique value is keyed by the value alone.
		h.DropClaim = func(t *testing.T, db storetest.DB, collection, lookup string, value []byte) {
			_, err := db.Handle.(*mongo.Database).Collection(mongostore.TableName(collection, lookup)).DeleteOne(context.Background(), bson.D{{Key: "_id", Value: mongostore.IndexKey(value)}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// counting returns a copy of the client options base (none: the
// defaults) whose command monitor also counts the commands started in n.
func counting(base *options.ClientOptions, n *atomic.Int64) *options.ClientOptions {
	o := options.Client()
	if base != nil {
		c := *base
		o = &c
	}
	next := o.Monitor
	o.Monitor = &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			n.Add(1)
			if next != nil && next.Started != nil {
				next.Started(ctx, e)
			}
		},
	}
	if next != nil {
		o.Monitor.Succeeded, o.Monitor.Failed = next.Succeeded, next.Failed
	}
	return o
}
