// Package examples_test runs the suites of example/exampletest (the
// examples' suites and the OpenTelemetry check) on a Redis node and a Redis Cluster, through the
// harnesses the conformance suite takes.
package examples_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/exampletest"
	"github.com/noamgen/noamgen/runtime/redisstore/redisharness"
)

// TestMain stops the shared servers.
func TestMain(m *testing.M) { redisharness.Main(m) }

func TestExamples(t *testing.T) { exampletest.Run(t, redisharness.Node(), redisharness.Cluster()) }
