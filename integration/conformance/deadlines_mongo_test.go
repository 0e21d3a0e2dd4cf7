package conformance

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/integration/faults"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// deadlines runs the deadline test on MongoDB (FerretDB in-process, or
// NOAM_MONGO_URI) behind a proxy that stops forwarding (faults.Pauser):
// the driver takes its timeouts from the context, and the index-table
// protocol's read-back, undo and cleanup end runtime.CleanupTimeout after
// the caller's deadline.
func deadlines(t *testing.T, name string, opts ...mongostore.Option) {
	p := faults.NewPauser()
	storetest.Deadlines(t, storetest.Harness{
		Name: name,
		Open: func(t *testing.T) storetest.Repos {
			db := mongotest.StartWithOptions(t, options.Client().SetDialer(p))
			return storetest.Repos{
				Matches:  model.NewMatchMongoRepository(db, opts...),
				Journals: model.NewJournalMongoRepository(db, opts...),
				Cards:    model.NewCardMongoRepository(db, opts...),
				Replies:  model.NewReplyMongoRepository(db, opts...),
			}
		},
		Pause: func(*testing.T) func() { return p.Pause() },
	})
}

// TestDeadlines: native lookups (the default mapping).
func TestDeadlines(t *testing.T) { deadlines(t, "mongo", mongotest.NativeOptions()...) }

// TestDeadlinesIndexTables: every lookup in an index table.
func TestDeadlinesIndexTables(t *testing.T) { deadlines(t, "mongo-tables", mongostore.IndexTables()) }
