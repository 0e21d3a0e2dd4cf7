package faults

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// documentWrites are the commands that write a hotel document.
var documentWrites = []string{"insert", "update", "findAndModify", "delete"}

// documentCommand returns the position (from 1) of the first command of
// names (colls: the collection each names) that writes a document of the
// Hotel collection, 0 if there is none.
func documentCommand(names, colls []string) int {
	for i, n := range names {
		if colls[i] == "Hotel" && slices.Contains(documentWrites, n) {
			return i + 1
		}
	}
	return 0
}

// dump reads every document of every collection of db, by collection,
// decoded (so that the comparison does not depend on field order).
func dump(t *testing.T, db *mongo.Database) map[string][]bson.M {
	t.Helper()
	names, err := db.ListCollectionNames(bg, bson.D{})
	must(t, err)
	out := map[string][]bson.M{}
	for _, n := range names {
		cur, err := db.Collection(n).Find(bg, bson.D{})
		must(t, err)
		var docs []bson.M
		must(t, cur.All(bg, &docs))
		slices.SortFunc(docs, func(a, b bson.M) int { return strings.Compare(bsonString(a["_id"]), bsonString(b["_id"])) })
		if len(docs) > 0 {
			out[n] = docs
		}
	}
	return out
}

func bsonString(v any) string {
	b, _ := bson.Marshal(bson.D{{Key: "v", Value: v}})
	return string(b)
}

// TestMongoCancelBeforeDocument: a write with lookups on index tables
// whose context is cancelled after its index entries were added and before
// its document command is sent never sends that command, and so is
// definitely not applied: it removes its entries before returning (every
// collection exactly as before, Repair finds nothing to fix) and fails with
// the context's error, not ErrUnknownOutcome. Before the fix it returned
// "outcome unknown" and left its entries for Repair.
func TestMongoCancelBeforeDocument(t *testing.T) {
	w := &Wire{}
	client := mongotest.StartWithOptions(t, w.Options()).Client()
	n := 2000
	for _, op := range writeOps() {
		if op.failsWith != nil || op.name == "Delete" {
			// UpdateToTakenName fails at its claim; Delete removes its
			// document first and adds no entry.
			continue
		}
		t.Run(op.name, func(t *testing.T) {
			// A dry run finds the document command and the commands
			// before it.
			n++
			_, r := fixture(t, client, n)
			w.Arm(0, None, nil, func() {})
			must(t, op.run(bg, r))
			names, _ := w.Disarm()
			k := documentCommand(names, w.Collections())
			if k == 0 {
				t.Fatalf("no document command among %v", names)
			}
			if !slices.ContainsFunc(w.Collections()[:k-1], func(c string) bool { return strings.HasPrefix(c, "Hotel__") }) {
				t.Fatalf("%s adds no index entry before its document command (%v)", op.name, names)
			}
			n++
			db, r := fixture(t, client, n)
			before := dump(t, db)
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			w.Arm(k-1, CancelAfter, nil, cancel)
			start := time.Now()
			err := op.run(ctx, r)
			took := time.Since(start)
			names, fired := w.Disarm()
			if !fired {
				t.Fatalf("the context was not cancelled after command %d (commands %v)", k-1, names)
			}
			storetest.CheckNotSent(t, op.name, err)
			if took > 10*time.Second {
				t.Fatalf("the write returned %v after the cancel (a bounded undo takes far less)", took)
			}
			if after := dump(t, db); !reflect.DeepEqual(after, before) {
				t.Fatalf("the cancelled write changed the database:\nbefore %v\nafter  %v", before, after)
			}
			// The driver publishes a command's start before it checks the
			// context: the command was not even started.
			if documentCommand(names, w.Collections()) != 0 {
				t.Fatalf("the document command was started after the context was cancelled (commands %v)", names)
			}
			rep, err := r.Repair(bg)
			must(t, err)
			if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
				t.Fatalf("Repair after the cancelled write found something to fix: %v", rep)
			}
			checkInvariants(t, "after the cancelled write", r, writeOp{old: op.old, new: op.old})
			// The write itself still works.
			must(t, op.run(bg, r))
			if st := checkInvariants(t, "after the write", r, op); !reflect.DeepEqual(st, op.new) {
				t.Fatalf("after the write the state is %v", show(st))
			}

			// An undo that cannot reach the server: the error is still
			// the context's and says the entries stay for Repair; reads
			// skip them, Repair removes them.
			n++
			db, r = fixture(t, client, n)
			before = dump(t, db)
			ctx, cancel = context.WithCancel(bg)
			defer cancel()
			w.Arm(k-1, CancelAndCut, nil, cancel)
			err = op.run(ctx, r)
			names, fired = w.Disarm()
			if !fired || documentCommand(names, w.Collections()) != 0 {
				t.Fatalf("cut undo: fault %v, commands %v", fired, names)
			}
			storetest.CheckNotSent(t, op.name+" whose undo was cut", err)
			if !strings.Contains(err.Error(), "Repair") {
				t.Fatalf("the undo was cut, but the error does not say the entries stay for Repair: %v", err)
			}
			if reflect.DeepEqual(dump(t, db), before) {
				t.Fatal("the undo was cut, but the index tables are as before")
			}
			checkInvariants(t, "after the cut undo", r, writeOp{old: op.old, new: op.old})
			rep, err = r.Repair(bg)
			must(t, err)
			if rep.Removed == 0 || rep.Added != 0 {
				t.Fatalf("Repair after the cut undo: %v, want the entries left removed", rep)
			}
			if after := dump(t, db); !reflect.DeepEqual(after, before) {
				t.Fatalf("after Repair the database differs from before the write:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
