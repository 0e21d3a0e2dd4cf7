package redisstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/redisstore/redisharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

func TestMain(m *testing.M) { redisharness.Main(m) }

// TestConformance runs the conformance suite on a single Redis node,
// flushed before each subtest: every write is one script run.
func TestConformance(t *testing.T) { storetest.Run(t, redisharness.Node()) }

// TestConformanceCluster runs the conformance suite on a 3-master Redis
// Cluster: blocks, listings and index tables spread over the slots, with
// the lookup protocol.
func TestConformanceCluster(t *testing.T) { storetest.Run(t, redisharness.Cluster()) }

// TestDeadlines runs the deadline test on a private single node paused
// with SIGSTOP: every call returns within its deadline plus
// runtime.CleanupTimeout, the read-back that decides an unknown outcome
// included.
func TestDeadlines(t *testing.T) { storetest.Deadlines(t, redisharness.NodePrivate()) }

// TestDeadlinesCluster runs the deadline test on a private 3-master
// cluster, every master paused: the lookup protocol's undo, read-back
// and cleanup (the listing, the old entries) end runtime.CleanupTimeout
// after the caller's deadline.
func TestDeadlinesCluster(t *testing.T) { storetest.Deadlines(t, redisharness.ClusterPrivate()) }

// TestDeadlinesDefaultClient runs the deadline test with a client built
// with go-redis's default options (no ContextTimeoutEnabled), which the
// adapter replaces by one derived from it that applies deadlines.
func TestDeadlinesDefaultClient(t *testing.T) {
	storetest.Deadlines(t, redisharness.DefaultClient(redisharness.NodePrivate()))
}

// TestDeadlinesClusterDefaultClient: the same on a cluster.
func TestDeadlinesClusterDefaultClient(t *testing.T) {
	storetest.Deadlines(t, redisharness.DefaultClient(redisharness.ClusterPrivate()))
}

// TestEvolution runs the schema and layout evolution suite on a single
// node.
func TestEvolution(t *testing.T) { storetest.Evolution(t, redisharness.Node()) }

// TestEvolutionCluster runs the evolution suite on the cluster.
func TestEvolutionCluster(t *testing.T) { storetest.Evolution(t, redisharness.Cluster()) }
