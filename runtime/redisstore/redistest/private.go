package redistest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Private is a Redis deployment of one test's own (not the shared servers
// of Server and Cluster), which the test may pause: its processes are
// stopped (SIGKILL) when the test ends.
type Private struct {
	servers []*server
}

// Pause stops every server of p with SIGSTOP: they keep their
// connections but answer nothing until resume (SIGCONT) is called.
func (p *Private) Pause(t testing.TB) (resume func()) {
	t.Helper()
	return p.PauseWhere(t, func(string) bool { return true })
}

// PauseWhere is Pause of the servers whose address ("127.0.0.1:port")
// pause accepts.
func (p *Private) PauseWhere(t testing.TB, pause func(addr string) bool) (resume func()) {
	t.Helper()
	if stopSignal == nil {
		t.Skip("pausing a process (SIGSTOP) is not supported on this system")
	}
	var paused []*server
	resume = func() {
		for _, s := range paused {
			_ = s.cmd.Process.Signal(contSignal)
		}
	}
	for _, s := range p.servers {
		if !pause(addr(s.port)) {
			continue
		}
		if err := s.cmd.Process.Signal(stopSignal); err != nil {
			resume()
			t.Fatalf("pausing redis-server on port %d: %v", s.port, err)
		}
		paused = append(paused, s)
	}
	return resume
}

func (p *Private) stop() {
	for _, s := range p.servers {
		if contSignal != nil {
			_ = s.cmd.Process.Signal(contSignal)
		}
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// PrivateServer starts a single redis-server for test t alone and
// returns its client (with ContextTimeoutEnabled, as the shared ones).
// It is skipped like Server when redis-server is not installed; it
// ignores NOAM_REDIS_URL (a shared server cannot be paused).
func PrivateServer(t testing.TB) (*redis.Client, *Private) {
	t.Helper()
	bin := need(t, "redis-server")
	mu.Lock()
	defer mu.Unlock()
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(bin, port)
	if err != nil {
		t.Fatal(err)
	}
	p := &Private{servers: []*server{s}}
	c := redis.NewClient(&redis.Options{Addr: addr(port), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close(); p.stop() })
	return c, p
}

// PrivateCluster starts a 3-master Redis Cluster for test t alone, as
// Cluster does, and returns its client (with ContextTimeoutEnabled).
func PrivateCluster(t testing.TB) (*redis.ClusterClient, *Private) {
	t.Helper()
	bin := need(t, "redis-server")
	cli := need(t, "redis-cli")
	mu.Lock()
	defer mu.Unlock()
	p := &Private{}
	t.Cleanup(p.stop)
	var ports []int
	for range 3 {
		port, err := freePort(true)
		if err != nil {
			t.Fatal(err)
		}
		s, err := start(bin, port, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
			"--cluster-node-timeout", "5000")
		if err != nil {
			t.Fatal(err)
		}
		p.servers = append(p.servers, s)
		ports = append(ports, port)
	}
	c, err := formCluster(cli, ports)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, p
}
