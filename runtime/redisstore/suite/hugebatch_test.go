package redisstore_test

import (
	"testing"

	"github.com/noamgen/noamgen/runtime/redisstore/redisharness"
	"github.com/noamgen/noamgen/runtime/storetest"
)

// TestHugeBatch writes batches of 30,000 items on a single node: each
// goes in bounded pipelines (redisstore.MaxPipelineCommands and
// MaxPipelineBytes) and succeeds whole.
func TestHugeBatch(t *testing.T) { storetest.HugeBatch(t, redisharness.Node(), 30_000) }

// TestHugeBatchCluster writes batches of 5,000 items on the cluster,
// each phase of the lookup protocol in bounded pipelines.
func TestHugeBatchCluster(t *testing.T) { storetest.HugeBatch(t, redisharness.Cluster(), 5_000) }
