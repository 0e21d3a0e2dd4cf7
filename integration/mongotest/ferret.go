//go:build !noferret

package mongotest

import (
	"context"
	"fmt"
	"strings"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// server is a running in-process FerretDB.
type server struct {
	uri    string
	cancel context.CancelFunc
	done   chan struct{}
}

// startFerretDB starts FerretDB with the SQLite backend storing its data in
// dir, an existing directory. The path must not contain characters that are
// special in URIs ('#', '?', '%'): FerretDB puts it unescaped into SQLite URIs.
//
// Telemetry needs no configuration: ferretdb.New disables and locks it, and
// the embedded package never runs the telemetry reporter.
func startFerretDB(dir string) (*server, error) {
	if strings.ContainsAny(dir, "#?%") {
		return nil, fmt.Errorf("FerretDB data directory %q: path contains '#', '?' or '%%'", dir)
	}
	if !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    ferretLogger(),
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir,
	})
	if err != nil {
		return nil, fmt.Errorf("starting FerretDB: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{
		// ferretdb.New has already bound the listener, so MongoDBURI does not block.
		uri:    f.MongoDBURI(),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = f.Run(ctx)
	}()
	return s, nil
}

// stop stops the server and waits until its connections and backend are closed.
func (s *server) stop() {
	s.cancel()
	<-s.done
}

// StartFerretDB starts FerretDB in-process with its data in dir (as the
// tests do) and returns its URI and the function that stops it: for
// cmd mongotest/ferretdb, which serves it to tests built without it.
func StartFerretDB(dir string) (uri string, stop func(), err error) {
	s, err := startFerretDB(dir)
	if err != nil {
		return "", nil, err
	}
	return s.uri, s.stop, nil
}
