package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replicated is a Redis Cluster of 3 masters with one replica each,
// started for one test by StartReplicated and stopped when the test ends:
// for failover tests, which kill, stop and promote its nodes. Its
// cluster-node-timeout is 1 s, so that the nodes agree quickly on a node
// that is gone.
type Replicated struct {
	// Client is a cluster client of the 6 nodes.
	Client *redis.ClusterClient
	// Nodes are the 6 nodes.
	Nodes []*Node
}

// Node is one redis-server of a Replicated cluster.
type Node struct {
	Addr string
	srv  *server
	bin  string
	args []string // after the port
	// killed: by Kill, until Restart.
	killed bool
}

// Kill kills the node with SIGKILL (no shutdown, nothing saved).
func (n *Node) Kill() error {
	n.killed = true
	return n.srv.cmd.Process.Signal(syscall.SIGKILL)
}

// Pause stops the node with SIGSTOP: it keeps its connections but answers
// nothing (a replica that falls behind), until Resume.
func (n *Node) Pause() error { return n.srv.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() error { return n.srv.cmd.Process.Signal(syscall.SIGCONT) }

// Client returns a new client of the node alone (the caller closes it).
func (n *Node) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.Addr, DialerRetries: 1})
}

// StartReplicated starts a 3-master, 3-replica Redis Cluster for t, waits
// until every replica is in sync with its master and the client sees the
// 3 masters, and stops it (every node killed, files removed) when t ends.
// It skips t without redis-server. It does not use NOAM_REDIS_CLUSTER:
// the failover tests kill nodes.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	bin := need(t, "redis-server")
	cli := need(t, "redis-cli")
	r := &Replicated{}
	t.Cleanup(func() {
		if r.Client != nil {
			r.Client.Close()
		}
		for _, n := range r.Nodes {
			_ = n.srv.cmd.Process.Signal(syscall.SIGCONT)
			_ = n.srv.cmd.Process.Kill()
			_ = n.srv.cmd.Wait()
		}
	})
	var addrs []string
	for range 6 {
		port, err := freePort(true)
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{Addr: addr(port), bin: bin, args: []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			// Replicas sync at once (the default waits 5 s for more).
			"--repl-diskless-sync-delay", "0"}}
		if err := n.start(port); err != nil {
			t.Fatal(err)
		}
		r.Nodes = append(r.Nodes, n)
		addrs = append(addrs, addr(port))
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	r.ready(t, deadline)
	// One dial attempt: the tests kill nodes, whose dials fail at once.
	r.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, DialerRetries: 1})
	for {
		masters, err := r.masters()
		if err == nil && masters == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster client sees %d masters: %v", masters, err)
		}
		r.Client.ReloadState(bg)
		time.Sleep(50 * time.Millisecond)
	}
	return r
}

// start starts the node's server on port (again, after a Kill: its
// cluster configuration is kept in its directory, so it rejoins).
func (n *Node) start(port int) error {
	mu.Lock()
	defer mu.Unlock()
	srv, err := start(n.bin, port, n.args...)
	if srv != nil {
		// Stopped by the cleanup of StartReplicated, not by Stop.
		servers = servers[:len(servers)-1]
		n.srv, n.killed = srv, false
	}
	return err
}

// ready waits until every node that is running sees the cluster as ok
// and every replica is in sync with a master.
func (r *Replicated) ready(t testing.TB, deadline time.Time) {
	t.Helper()
	for _, n := range r.Nodes {
		c := n.Client()
		for {
			ok, why := nodeReady(c)
			if ok {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("cluster node %s not ready: %s", n.Addr, why)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
}

// Restart starts a killed node again on its port, with its cluster
// configuration: a master that was failed over comes back as a replica of
// the node that took its slots. It waits, up to 15 s, until every node is
// ready (replicas in sync).
func (r *Replicated) Restart(t testing.TB, n *Node) {
	t.Helper()
	_ = n.srv.cmd.Wait()
	port, _ := strconv.Atoi(n.Addr[strings.LastIndexByte(n.Addr, ':')+1:])
	if err := n.start(port); err != nil {
		t.Fatal(err)
	}
	r.ready(t, time.Now().Add(15*time.Second))
}

// nodeReady reports whether node c sees the cluster as ok and, for a
// replica, whether its link to its master is up and in sync.
func nodeReady(c *redis.Client) (bool, string) {
	info, err := c.ClusterInfo(bg).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		return false, fmt.Sprint(err, info)
	}
	repl, err := c.Info(bg, "replication").Result()
	if err != nil {
		return false, err.Error()
	}
	if strings.Contains(repl, "role:slave") && (!strings.Contains(repl, "master_link_status:up") || strings.Contains(repl, "master_sync_in_progress:1")) {
		return false, repl
	}
	if strings.Contains(repl, "role:master") && !strings.Contains(repl, "connected_slaves:1") {
		return false, repl
	}
	return true, ""
}

func (r *Replicated) masters() (int, error) {
	n := 0
	err := r.Client.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error {
		return m.Ping(ctx).Err()
	})
	if err != nil {
		return 0, err
	}
	shards, err := r.Client.ClusterShards(bg).Result()
	if err != nil {
		return 0, err
	}
	for _, s := range shards {
		for _, nd := range s.Nodes {
			if nd.Role == "master" && nd.Health != "failed" {
				n++
			}
		}
	}
	return n, nil
}

// node returns the node of address a.
func (r *Replicated) node(a string) *Node {
	for _, n := range r.Nodes {
		if n.Addr == a {
			return n
		}
	}
	return nil
}

// MasterOf returns the node that serves key, as the nodes say (CLUSTER
// SHARDS, asked of every node that answers until one does).
func (r *Replicated) MasterOf(t testing.TB, key string) *Node {
	t.Helper()
	m, _ := r.shardOf(t, key)
	return m
}

// ReplicaOf returns the replica of the shard that serves key.
func (r *Replicated) ReplicaOf(t testing.TB, key string) *Node {
	t.Helper()
	// A replica paused a moment ago, or one that has just joined, may be
	// marked failed for a while (cluster-node-timeout, longer on a loaded
	// machine): wait for the cluster to see it online again.
	deadline := time.Now().Add(replicaWait)
	for {
		_, rep := r.shardOf(t, key)
		if rep != nil {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard of %q has no online replica after %v", key, replicaWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicaWait is how long ReplicaOf waits for a shard's replica to be
// online.
const replicaWait = 30 * time.Second

func (r *Replicated) shardOf(t testing.TB, key string) (master, replica *Node) {
	t.Helper()
	slot, err := r.Client.ClusterKeySlot(bg, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := r.Client.ClusterShards(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		in := false
		for _, sr := range s.Slots {
			if int64(sr.Start) <= slot && slot <= int64(sr.End) {
				in = true
			}
		}
		if !in {
			continue
		}
		for _, nd := range s.Nodes {
			n := r.node(nd.IP + ":" + strconv.FormatInt(nd.Port, 10))
			switch {
			case n == nil || nd.Health == "failed":
				// ("loading" is also what Redis 7.0 says of a replica
				// that has received no write yet.)
			case nd.Role == "master":
				master = n
			default:
				replica = n
			}
		}
		if master != nil {
			return master, replica
		}
	}
	t.Fatalf("no online master serves slot %d of %q", slot, key)
	return nil, nil
}

// Promote forces replica to take over its master's slots (CLUSTER
// FAILOVER TAKEOVER: no agreement of the other masters needed, as after
// the master is killed), then waits, up to 15 s, until every node that
// answers sees the cluster as ok with replica serving them and the client
// routes to it.
func (r *Replicated) Promote(t testing.TB, replica *Node, key string) {
	t.Helper()
	c := replica.Client()
	defer c.Close()
	role, err := c.Do(bg, "role").Slice()
	if err != nil {
		t.Fatal(err)
	}
	// A replica may have been elected by the others already.
	if role[0] != "master" {
		if err := c.Do(bg, "cluster", "failover", "takeover").Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %v", replica.Addr, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		role, err := c.Do(bg, "role").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not master 15s after CLUSTER FAILOVER TAKEOVER: %v %v", replica.Addr, role, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		r.Client.ReloadState(bg)
		m, err := r.Client.MasterForKey(bg, key)
		okAll := true
		for _, n := range r.Nodes {
			if n.killed {
				continue
			}
			nc := n.Client()
			info, ierr := nc.ClusterInfo(bg).Result()
			nc.Close()
			if ierr == nil && !strings.Contains(info, "cluster_state:ok") {
				okAll = false
			}
		}
		if err == nil && m.Options().Addr == replica.Addr && okAll {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client does not route %q to %s 15s after the takeover: %v", key, replica.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pair is a single Redis node (no cluster) with one replica, started for
// one test by StartPair and stopped when the test ends.
type Pair struct {
	Master, Replica *Node
}

// StartPair starts a Redis node and a replica of it for t, waits until
// the replica is in sync, and stops both (killed, files removed with the
// package's directory) when t ends. It skips t without redis-server.
func StartPair(t testing.TB) *Pair {
	t.Helper()
	bin := need(t, "redis-server")
	p := &Pair{}
	t.Cleanup(func() {
		for _, n := range []*Node{p.Master, p.Replica} {
			if n != nil && n.srv != nil {
				_ = n.srv.cmd.Process.Signal(syscall.SIGCONT)
				_ = n.srv.cmd.Process.Kill()
				_ = n.srv.cmd.Wait()
			}
		}
	})
	for i := range 2 {
		port, err := freePort(false)
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{Addr: addr(port), bin: bin, args: []string{"--repl-diskless-sync-delay", "0"}}
		if i == 1 {
			n.args = append(n.args, "--replicaof", "127.0.0.1", p.Master.Addr[strings.LastIndexByte(p.Master.Addr, ':')+1:])
		}
		if err := n.start(port); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			p.Master = n
		} else {
			p.Replica = n
		}
	}
	c := p.Master.Client()
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		repl, err := c.Info(bg, "replication").Result()
		if err == nil && strings.Contains(repl, "connected_slaves:1") && strings.Contains(repl, "state=online") {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica of %s is not online after 15s: %v %s", p.Master.Addr, err, repl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MoveSlot gives the slot of key, which must hold no key, to master to
// (CLUSTER SETSLOT NODE on every master, to first), and waits, up to 15
// s, until every running node says to serves it. The cluster client is
// not told: it learns from the MOVED it gets.
func (r *Replicated) MoveSlot(t testing.TB, key string, to *Node) {
	t.Helper()
	slot, err := r.Client.ClusterKeySlot(bg, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	tc := to.Client()
	id, err := tc.Do(bg, "cluster", "myid").Text()
	tc.Close()
	if err != nil {
		t.Fatal(err)
	}
	masters := []*Node{to}
	for _, n := range r.Nodes {
		if n != to && !n.killed && n.role(t) == "master" {
			masters = append(masters, n)
		}
	}
	for _, n := range masters {
		c := n.Client()
		err := c.Do(bg, "cluster", "setslot", slot, "node", id).Err()
		c.Close()
		if err != nil {
			t.Fatalf("CLUSTER SETSLOT %d NODE on %s: %v", slot, n.Addr, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range r.Nodes {
		if n.killed {
			continue
		}
		c := n.Client()
		for {
			nodes, err := c.ClusterNodes(bg).Result()
			if err == nil && servesSlot(nodes, id, slot) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("%s does not see slot %d on %s after 15s: %v\n%s", n.Addr, slot, to.Addr, err, nodes)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
	}
}

// role is the node's ROLE ("master" or "slave").
func (n *Node) role(t testing.TB) string {
	c := n.Client()
	defer c.Close()
	role, err := c.Do(bg, "role").Slice()
	if err != nil || len(role) == 0 {
		t.Fatalf("ROLE of %s: %v", n.Addr, err)
	}
	s, _ := role[0].(string)
	return s
}

// servesSlot reports whether CLUSTER NODES output nodes gives slot to the
// node of id.
func servesSlot(nodes, id string, slot int64) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != id {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, _ := strings.Cut(r, "-")
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(hi, 10, 64)
			if hi == "" {
				b, err2 = a, err1
			}
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				return true
			}
		}
	}
	return false
}

// StartMigrating puts the slot of key, which must hold no key, in
// migration from its master to master to (CLUSTER SETSLOT IMPORTING on
// to, MIGRATING on the source): commands on keys of the slot that the
// source lacks get ASK. MoveSlot ends the migration.
func (r *Replicated) StartMigrating(t testing.TB, key string, to *Node) {
	t.Helper()
	slot, err := r.Client.ClusterKeySlot(bg, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	from := r.MasterOf(t, key)
	ids := map[*Node]string{}
	for _, n := range []*Node{from, to} {
		c := n.Client()
		ids[n], err = c.Do(bg, "cluster", "myid").Text()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		n     *Node
		state string
		peer  string
	}{{to, "importing", ids[from]}, {from, "migrating", ids[to]}} {
		c := step.n.Client()
		err := c.Do(bg, "cluster", "setslot", slot, step.state, step.peer).Err()
		c.Close()
		if err != nil {
			t.Fatalf("CLUSTER SETSLOT %d %s on %s: %v", slot, step.state, step.n.Addr, err)
		}
	}
}
