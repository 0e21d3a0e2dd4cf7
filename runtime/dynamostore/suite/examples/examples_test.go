// Package examples_test runs the suites of example/exampletest (the
// examples' suites and the OpenTelemetry check) on DynamoDB (dynalite, or NOAM_DYNAMO_ENDPOINT), through the
// harness the conformance suite takes.
package examples_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/exampletest"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynamoharness"
)

// TestMain stops the shared servers.
func TestMain(m *testing.M) { dynamoharness.Main(m) }

func TestExamples(t *testing.T) { exampletest.Run(t, dynamoharness.Harness()) }
