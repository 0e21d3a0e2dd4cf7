// Package redistest starts real Redis servers for tests: a single node
// and a 3-master Redis Cluster, on 127.0.0.1 with free ports and no
// persistence, in a temporary directory, stopped when the tests end (call
// Main from TestMain). They are started once per test binary, on first
// use, and flushed before each use.
//
// NOAM_REDIS_URL points the single-node tests at another server instead
// (redis://host:port/db), and NOAM_REDIS_CLUSTER (host:port,host:port,...)
// the cluster tests at another cluster: the tests flush them, so they
// refuse one that holds keys when a test process first connects (and
// flush it when the process ends).
//
// Without redis-server on the PATH (Debian package redis-server), the tests
// that need a server are skipped with that reason.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type server struct {
	cmd  *exec.Cmd
	port int
}

var (
	mu       sync.Mutex
	dir      string
	servers  []*server
	single   *redis.Client
	cluster  *redis.ClusterClient
	startErr = map[string]error{}
	// externalSingle and externalCluster: the servers come from
	// NOAM_REDIS_URL and NOAM_REDIS_CLUSTER.
	externalSingle, externalCluster bool
)

// notEmpty is the refusal to flush a server that holds keys: the tests
// flush the server they are given, so it must be one for tests (empty at
// the start of a test process; the tests leave it empty).
func notEmpty(env, where string, keys int64, err error) error {
	if err != nil {
		return fmt.Errorf("%s %s: %w", env, where, err)
	}
	return fmt.Errorf("%s %s holds %d keys: the tests flush the server they use, so they only start on an empty one (a database for tests; flush it yourself if it is one)", env, where, keys)
}

// Main runs the tests and stops the servers they started.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops every server this package started and removes their files;
// the servers of NOAM_REDIS_URL and NOAM_REDIS_CLUSTER are flushed, so
// that the next test process finds them empty.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if single != nil {
		if externalSingle {
			_ = single.FlushDB(bg).Err()
		}
		single.Close()
		single = nil
	}
	if cluster != nil {
		if externalCluster {
			_ = cluster.ForEachMaster(bg, func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() })
		}
		cluster.Close()
		cluster = nil
	}
	for _, s := range servers {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	servers = nil
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
	}
}

var bg = context.Background()

// Server returns a client of a flushed single Redis node (FLUSHDB: with
// NOAM_REDIS_URL, only the database the URL selects).
func Server(t testing.TB) *redis.Client {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if single == nil {
		if err, failed := startErr["single"]; failed {
			t.Fatal(err)
		}
		c, err := startSingle(t)
		if err != nil {
			startErr["single"] = err
			t.Fatal(err)
		}
		single = c
	}
	if err := single.FlushDB(bg).Err(); err != nil {
		t.Fatal(err)
	}
	return single
}

// Cluster returns a client of a flushed 3-master Redis Cluster.
func Cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		if err, failed := startErr["cluster"]; failed {
			t.Fatal(err)
		}
		c, err := startCluster(t)
		if err != nil {
			startErr["cluster"] = err
			t.Fatal(err)
		}
		cluster = c
	}
	err := cluster.ForEachMaster(bg, func(ctx context.Context, c *redis.Client) error {
		return c.FlushAll(ctx).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return cluster
}

// need skips t when redis-server is not installed.
func need(t testing.TB, bin string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Skipf("%s is not installed (Debian package redis-server; scripts/test-all.sh installs it), and NOAM_REDIS_URL / NOAM_REDIS_CLUSTER are not set: %v", bin, err)
	}
	return p
}

func startSingle(t testing.TB) (*redis.Client, error) {
	if url := os.Getenv("NOAM_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("NOAM_REDIS_URL: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		c := redis.NewClient(opt)
		if err := c.Ping(bg).Err(); err != nil {
			return nil, fmt.Errorf("NOAM_REDIS_URL %s: %w", url, err)
		}
		if n, err := c.DBSize(bg).Result(); err != nil || n > 0 {
			c.Close()
			return nil, notEmpty("NOAM_REDIS_URL", url, n, err)
		}
		externalSingle = true
		return c, nil
	}
	bin := need(t, "redis-server")
	port, err := freePort(false)
	if err != nil {
		return nil, err
	}
	if _, err := start(bin, port); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr(port), ContextTimeoutEnabled: true})
	return c, nil
}

func startCluster(t testing.TB) (*redis.ClusterClient, error) {
	if addrs := os.Getenv("NOAM_REDIS_CLUSTER"); addrs != "" {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true})
		if err := c.Ping(bg).Err(); err != nil {
			return nil, fmt.Errorf("NOAM_REDIS_CLUSTER %s: %w", addrs, err)
		}
		var total atomic.Int64
		err := c.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error {
			n, err := m.DBSize(ctx).Result()
			total.Add(n)
			return err
		})
		if err != nil || total.Load() > 0 {
			c.Close()
			return nil, notEmpty("NOAM_REDIS_CLUSTER", addrs, total.Load(), err)
		}
		externalCluster = true
		return c, nil
	}
	bin := need(t, "redis-server")
	cli := need(t, "redis-cli")
	var ports []int
	for range 3 {
		port, err := freePort(true)
		if err != nil {
			return nil, err
		}
		if _, err := start(bin, port, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
			"--cluster-node-timeout", "5000"); err != nil {
			return nil, err
		}
		ports = append(ports, port)
	}
	return formCluster(cli, ports)
}

// formCluster makes the redis-server nodes on ports (started with
// --cluster-enabled) one cluster of masters, and returns its client once
// every node sees the cluster as ok and the client knows every master.
func formCluster(cli string, ports []int) (*redis.ClusterClient, error) {
	args := []string{"--cluster", "create"}
	for _, p := range ports {
		args = append(args, addr(p))
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Wait until every node sees the cluster as ok.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range ports {
		c := redis.NewClient(&redis.Options{Addr: addr(p)})
		for {
			info, err := c.ClusterInfo(bg).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, fmt.Errorf("cluster node %d not ok after 30s: %v %s", p, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, addr(p))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	// Wait until the client knows every master.
	for {
		var n atomic.Int32
		err := c.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error {
			n.Add(1)
			return m.Ping(ctx).Err()
		})
		if err == nil && int(n.Load()) == len(ports) {
			break
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, fmt.Errorf("the cluster client sees %d masters: %v", n.Load(), err)
		}
		c.ReloadState(bg)
		time.Sleep(50 * time.Millisecond)
	}
	return c, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// start starts redis-server on port without persistence and waits until
// it answers.
func start(bin string, port int, extra ...string) (*server, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "noam-redis-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	nodeDir := filepath.Join(dir, strconv.Itoa(port))
	if err := os.MkdirAll(nodeDir, 0o700); err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", nodeDir}, extra...)
	cmd := exec.Command(bin, args...)
	dieWithParent(cmd)
	log, err := os.Create(filepath.Join(nodeDir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	log.Close()
	s := &server{cmd: cmd, port: port}
	servers = append(servers, s)
	c := redis.NewClient(&redis.Options{Addr: addr(port)})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(bg).Err(); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(nodeDir, "server.log"))
			return nil, fmt.Errorf("redis-server on port %d does not answer after 10s:\n%s", port, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort finds a free loopback port (and, for a cluster node, a free
// cluster bus port, port+10000).
func freePort(bus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		b, err := net.Listen("tcp", addr(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		b.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair for a cluster node")
}
