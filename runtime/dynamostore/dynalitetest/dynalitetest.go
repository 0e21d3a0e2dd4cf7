// Package dynalitetest starts a DynamoDB-compatible test server for the
// DynamoDB tests: dynalite (npm package, installed into tools/dynalite by
// scripts/test-all.sh or `npm ci --prefix tools/dynalite`), in memory, on
// 127.0.0.1 with a free port, stopped (its process group killed) when the
// test ends. NOAM_DYNAMO_ENDPOINT points the tests at another endpoint
// (e.g. DynamoDB Local) instead. Tests share a server and keep apart by
// table-name prefix (Prefix).
package dynalitetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EnvEndpoint names the environment variable of an endpoint to use
// instead of starting dynalite.
const EnvEndpoint = "NOAM_DYNAMO_ENDPOINT"

// Server is a running test server.
type Server struct {
	// Endpoint is its URL, e.g. http://127.0.0.1:40123.
	Endpoint string
	// external is set for NOAM_DYNAMO_ENDPOINT: tables outlive the
	// process there, so Prefix removes them after the test.
	external bool
	// pgid is the process group of the dynalite this package started.
	pgid int
}

// Pause stops the dynalite this package started (SIGSTOP to its process
// group): it keeps its connections but answers nothing until resume
// (SIGCONT) is called. It skips t on NOAM_DYNAMO_ENDPOINT, which it cannot
// pause.
func (s *Server) Pause(t testing.TB) (resume func()) {
	t.Helper()
	if s.pgid == 0 {
		t.Skipf("cannot pause the server of %s", EnvEndpoint)
	}
	if err := syscall.Kill(-s.pgid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing dynalite: %v", err)
	}
	return func() { _ = syscall.Kill(-s.pgid, syscall.SIGCONT) }
}

// Start starts dynalite for t (or uses NOAM_DYNAMO_ENDPOINT) and stops it
// when t ends. It skips t, with the reason, only when node or dynalite is
// not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return &Server{Endpoint: ep, external: true}
	}
	s, stop := launch(t)
	t.Cleanup(stop)
	return s
}

var (
	sharedMu   sync.Mutex
	shared     *Server
	sharedStop func()
)

// Shared returns a server that lives until Stop (call Main from
// TestMain): for benchmarks that load their data once per process. It
// starts dynalite on first use (or uses NOAM_DYNAMO_ENDPOINT), skipping t
// like Start.
func Shared(t testing.TB) *Server {
	t.Helper()
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return &Server{Endpoint: ep, external: true}
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		shared, sharedStop = launch(t)
	}
	return shared
}

// Stop stops the server Shared started, if any.
func Stop() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedStop != nil {
		sharedStop()
	}
	shared, sharedStop = nil, nil
}

// Main runs the tests and stops the server Shared started.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// launch starts dynalite and returns it with the function that stops it
// (t fails or skips if it cannot; a half-started server is stopped).
func launch(t testing.TB) (*Server, func()) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("DynamoDB tests need node (for dynalite) or %s: %v", EnvEndpoint, err)
	}
	dir, err := moduleDir()
	if err != nil {
		t.Skipf("DynamoDB tests need dynalite: %v (run npm ci --prefix tools/dynalite, or set %s)", err, EnvEndpoint)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	// Started through node rather than dynalite's CLI so that it listens
	// on 127.0.0.1 only; tables are ACTIVE at once.
	script := fmt.Sprintf(`require(%q)({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0}).listen(%d, "127.0.0.1", function() { console.log("ready") })`, dir, port)
	cmd := exec.Command(node, "-e", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dynalite: %v", err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	started := false
	defer func() {
		if !started {
			stop()
		}
	}()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- nil
				for sc.Scan() {
				}
				return
			}
		}
		ready <- errors.New("dynalite exited before it listened")
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dynalite did not start within a minute")
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), pgid: cmd.Process.Pid}
	// Wait until it answers a request.
	c := s.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
		cancel()
		if err == nil {
			started = true
			return s, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("dynalite does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client returns a client of the server with static dummy credentials and
// region us-east-1; opts change its options (e.g. to add middleware).
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	o := dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("noam", "noam", ""),
		BaseEndpoint: aws.String(s.Endpoint),
	}
	return dynamodb.New(o, opts...)
}

var seq atomic.Int64

// Prefix returns a table-name prefix no other test of this process (or,
// on a shared endpoint, of an earlier run) uses: tables under it start
// empty. On an external endpoint (NOAM_DYNAMO_ENDPOINT) the tables under
// it are deleted when t ends; dynalite keeps them in memory until it
// stops.
func (s *Server) Prefix(t testing.TB) string {
	p := fmt.Sprintf("t%x_%d_", time.Now().UnixNano()&0xffffffff, seq.Add(1))
	if s.external {
		t.Cleanup(func() { s.dropTables(t, p) })
	}
	return p
}

// dropTables deletes the tables whose names start with prefix.
func (s *Server) dropTables(t testing.TB, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.Client()
	in := &dynamodb.ListTablesInput{ExclusiveStartTableName: aws.String(prefix)}
	for {
		out, err := c.ListTables(ctx, in)
		if err != nil {
			t.Logf("listing the test's tables: %v", err)
			return
		}
		for _, name := range out.TableNames {
			if !strings.HasPrefix(name, prefix) {
				return
			}
			if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				t.Logf("deleting table %s: %v", name, err)
			}
		}
		if out.LastEvaluatedTableName == nil {
			return
		}
		in.ExclusiveStartTableName = out.LastEvaluatedTableName
	}
}

// moduleDir finds the dynalite module in tools/dynalite/node_modules of
// the project (looked up from the working directory).
func moduleDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		m := filepath.Join(dir, "tools", "dynalite", "node_modules", "dynalite")
		if _, err := os.Stat(filepath.Join(m, "package.json")); err == nil {
			return m, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "tools", "dynalite", "package.json")); err == nil {
			return "", fmt.Errorf("%s is not installed", m)
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no tools/dynalite folder above " + wd)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
