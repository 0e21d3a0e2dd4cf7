package otelnoam_test

import (
	"context"
	"errors"
	"testing"

	"github.com/noamgen/noamgen/internal/storeharness"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/otelnoam"
	"github.com/noamgen/noamgen/runtime/otelnoam/oteltest"
)

func TestMain(m *testing.M) { storeharness.Main(m) }

// TestHook runs the hook on every store of the main module (MongoDB's is
// in the integration module, integration/conformance).
func TestHook(t *testing.T) {
	for _, h := range storeharness.All() {
		t.Run(h.Name, func(t *testing.T) { oteltest.Check(t, h) })
	}
}

func TestErrorType(t *testing.T) {
	for err, want := range map[error]string{
		runtime.Fail("Get", "Match", "x", runtime.ErrConflict, nil): "conflict",
		context.DeadlineExceeded:                                    "deadline_exceeded",
		errors.New("other"):                                         "_OTHER",
	} {
		if got := otelnoam.ErrorType(err); got != want {
			t.Errorf("ErrorType(%v) = %q, want %q", err, got, want)
		}
	}
}
