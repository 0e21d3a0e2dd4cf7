// The hook on each store (oteltest.Check) runs from that store's suite:
// runtime/<store>store/suite, and integration/conformance for MongoDB.
package otelnoam_test

import (
	"context"
	"errors"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/otelnoam"
)

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
