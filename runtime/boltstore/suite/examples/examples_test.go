// Package examples_test runs the suites of example/exampletest (the
// examples' suites and the OpenTelemetry check) on bbolt, through the
// harness the conformance suite takes.
package examples_test

import (
	"testing"

	"github.com/noamgen/noamgen/example/exampletest"
	"github.com/noamgen/noamgen/runtime/boltstore/boltharness"
)

func TestExamples(t *testing.T) { exampletest.Run(t, boltharness.Harness()) }
