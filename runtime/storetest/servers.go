package storetest

import (
	"os"
	"sync/atomic"
	"testing"
)

// Servers are the test servers a harness package starts once and shares
// between the tests of a package (a Redis node, dynalite): Main runs the
// package's tests and then stops them, and Need fails a test that would
// start them in a package whose TestMain does not, which would leave them
// running after the tests.
type Servers struct {
	// Harness names the harness package, for Need's message.
	Harness string
	// Stop stops the shared servers.
	Stop    func()
	mainRan atomic.Bool
}

// Main runs the tests of a package, then stops the servers: call it from
// TestMain (through the harness package's Main).
func (s *Servers) Main(m *testing.M) {
	s.mainRan.Store(true)
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// Need fails t unless Main runs the package's tests.
func (s *Servers) Need(t testing.TB) {
	t.Helper()
	if !s.mainRan.Load() {
		t.Fatalf("%[1]s: call %[1]s.Main from TestMain, so that the shared servers are stopped", s.Harness)
	}
}
