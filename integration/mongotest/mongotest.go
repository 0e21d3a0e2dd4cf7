// Package mongotest provides a MongoDB-compatible server for integration tests.
//
// By default it runs FerretDB v1 in-process (SQLite backend, data in a
// temporary directory), so tests need no external services. If the
// NOAM_MONGO_URI environment variable is set, tests run against that real
// MongoDB deployment instead.
//
// Starting FerretDB takes a little while; to share one server among all tests
// of a package, call [Main] from TestMain:
//
//	func TestMain(m *testing.M) { mongotest.Main(m) }
//
// Each call to [Start] then only creates a fresh, uniquely named database.
package mongotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const (
	// EnvURI names the environment variable holding the URI of a real
	// MongoDB deployment to test against instead of FerretDB.
	EnvURI = "NOAM_MONGO_URI"

	// EnvFerretDBURI names the environment variable holding the URI of a
	// FerretDB already running out of process (cmd mongotest/ferretdb):
	// tests use it instead of starting one in-process, and Real stays
	// false. scripts/test-all.sh uses it for the -race run, whose binary
	// is built with -tags noferret: without FerretDB in it, the race
	// build is a fraction of the size.
	EnvFerretDBURI = "NOAM_FERRETDB_URI"

	// EnvFerretDBLog names the environment variable enabling FerretDB's
	// logging to stderr: "1" for info level, "debug" for debug level.
	// FerretDB's logging is discarded otherwise.
	EnvFerretDBLog = "NOAM_FERRETDB_LOG"
)

// opTimeout bounds set-up and clean-up operations.
const opTimeout = 30 * time.Second

// Real reports whether tests run against a real MongoDB (NOAM_MONGO_URI is
// set) rather than FerretDB. Tests needing features FerretDB lacks (e.g.
// transactions) should skip when it returns false.
func Real() bool {
	return os.Getenv(EnvURI) != ""
}

// envURI is the server the environment names: a real MongoDB, or else a
// FerretDB running out of process; "" for none.
func envURI() string {
	if uri := os.Getenv(EnvURI); uri != "" {
		return uri
	}
	return os.Getenv(EnvFerretDBURI)
}

// shared is the server and client set up by Main, if any.
var shared struct {
	mu     sync.Mutex
	uri    string
	client *mongo.Client
}

// Main is meant to be called from TestMain. It starts one server (FerretDB
// unless [Real]) shared by all tests of the package, runs the tests, stops the
// server and exits with the tests' exit code.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	uri := envURI()
	if uri == "" {
		dir, err := os.MkdirTemp("", "noam-ferretdb-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest:", err)
			return 1
		}
		defer os.RemoveAll(dir)

		srv, err := startFerretDB(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest:", err)
			return 1
		}
		defer srv.stop()
		uri = srv.uri
	}

	client, err := connect(uri, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mongotest:", err)
		return 1
	}
	defer disconnect(client)

	shared.mu.Lock()
	shared.uri, shared.client = uri, client
	shared.mu.Unlock()

	defer func() {
		shared.mu.Lock()
		shared.uri, shared.client = "", nil
		shared.mu.Unlock()
	}()

	return m.Run()
}

// Start returns a fresh, uniquely named database for tb, on a connected
// client (mongo-driver v2; see [mongo.Database.Client]).
//
// If NOAM_MONGO_URI is set, it connects there (a real MongoDB). Otherwise it
// uses FerretDB v1.24.0 running in-process with the SQLite backend: the
// server started by [Main] if the package's TestMain calls it, or else a
// server started for tb alone (data in a temporary directory removed on
// cleanup, listening on 127.0.0.1:0).
//
// Cleanup (dropping the database, disconnecting a client and stopping a
// server created for tb) is registered with tb.Cleanup.
func Start(tb testing.TB) *mongo.Database {
	tb.Helper()
	return start(tb, nil)
}

// StartWithOptions is like [Start], but the returned database always uses a
// new client dedicated to tb, configured by the URI and then by opts (which
// may be nil), e.g. opts = options.Client().SetMonitor(monitor). The client is
// disconnected on cleanup.
func StartWithOptions(tb testing.TB, opts *options.ClientOptions) *mongo.Database {
	tb.Helper()
	if opts == nil {
		opts = options.Client()
	}
	return start(tb, opts)
}

func start(tb testing.TB, opts *options.ClientOptions) *mongo.Database {
	tb.Helper()

	shared.mu.Lock()
	uri, client := shared.uri, shared.client
	shared.mu.Unlock()

	if uri == "" {
		uri = envURI()
	}
	if uri == "" {
		// Not tb.TempDir(): subtest names put characters such as '#' in
		// its path, which FerretDB's SQLite URI handling does not escape.
		dir, err := os.MkdirTemp("", "noam-ferretdb-")
		if err != nil {
			tb.Fatalf("mongotest: %v", err)
		}
		tb.Cleanup(func() { _ = os.RemoveAll(dir) })
		srv, err := startFerretDB(dir)
		if err != nil {
			tb.Fatalf("mongotest: %v", err)
		}
		tb.Cleanup(srv.stop)
		uri = srv.uri
		client = nil
	}

	if client == nil || opts != nil {
		c, err := connect(uri, opts)
		if err != nil {
			tb.Fatalf("mongotest: %v", err)
		}
		tb.Cleanup(func() { disconnect(c) })
		client = c
	}

	db := client.Database(dbName(tb))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			tb.Errorf("mongotest: dropping database %s: %v", db.Name(), err)
		}
	})
	return db
}

var dbCounter atomic.Int64

// dbName returns a database name unique across tests and processes (tests of
// several packages may share one real MongoDB). FerretDB allows at most 63
// characters from [a-zA-Z0-9_-].
func dbName(tb testing.TB) string {
	var b strings.Builder
	for _, r := range tb.Name() {
		if b.Len() >= 32 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("t_%s_%d_%s", b.String(), dbCounter.Add(1), hex.EncodeToString(rnd[:]))
}

func connect(uri string, opts *options.ClientOptions) (*mongo.Client, error) {
	all := []*options.ClientOptions{options.Client().ApplyURI(uri)}
	if opts != nil {
		all = append(all, opts)
	}
	client, err := mongo.Connect(all...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", uri, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := client.Ping(ctx, nil); err != nil {
		disconnect(client)
		return nil, fmt.Errorf("pinging %s: %w", uri, err)
	}
	return client, nil
}

func disconnect(client *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_ = client.Disconnect(ctx)
}

func ferretLogger() *slog.Logger {
	switch os.Getenv(EnvFerretDBLog) {
	case "", "0":
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	case "debug":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
}

// URI is the connection string of the server started by Main (FerretDB, or
// the MongoDB at NOAM_MONGO_URI), for tests that run programs against it.
// It is empty outside a package whose TestMain calls Main.
func URI() string { return shared.uri }

// NativeOptions are the mongostore options of the native lookup mapping
// on the server under test: FerretDB v1 has no partial indexes and does not
// make a unique index on an array path unique per element, so there unique
// lookups keep their index tables (mongostore.UniqueTables); a real
// MongoDB serves every lookup with a native index.
func NativeOptions() []runtime.Option {
	if Real() {
		return nil
	}
	return []runtime.Option{mongostore.UniqueTables()}
}
