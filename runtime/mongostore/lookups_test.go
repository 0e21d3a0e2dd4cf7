package mongostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestBatches: undo and cleanup commands name at most maxBatchKeys keys
// and maxBatchBytes bytes (one larger key alone), so that 50 keys of 2 MiB
// never make one 100 MiB command; every key is in exactly one batch, in
// order.
func TestBatches(t *testing.T) {
	big := strings.Repeat("ab", 1<<20) // a 1 MiB value's hex key
	for _, keys := range [][]string{
		nil,
		{"a"},
		func() []string {
			var ks []string
			for i := range 50 {
				ks = append(ks, big+fmt.Sprint(i))
			}
			return ks
		}(),
		func() []string {
			var ks []string
			for i := range 1234 {
				ks = append(ks, fmt.Sprintf("%08x", i))
			}
			return ks
		}(),
		{strings.Repeat("x", 5<<20), "a", strings.Repeat("y", 5<<20)},
	} {
		var all []string
		for _, b := range batches(keys) {
			size := 0
			for _, k := range b {
				size += len(k)
			}
			if len(b) == 0 || len(b) > maxBatchKeys || (size > maxBatchBytes && len(b) > 1) {
				t.Fatalf("batch of %d keys, %d bytes", len(b), size)
			}
			all = append(all, b...)
		}
		if len(all) != len(keys) {
			t.Fatalf("%d keys in batches, want %d", len(all), len(keys))
		}
		for i := range all {
			if all[i] != keys[i] {
				t.Fatalf("key %d out of order", i)
			}
		}
	}
}

// TestAmbiguous: errors that leave a write's outcome unknown (the command
// may have been applied) are told from refusals.
func TestAmbiguous(t *testing.T) {
	for _, err := range []error{
		context.Canceled,
		fmt.Errorf("wrapped: %w", context.DeadlineExceeded),
		mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64}},
	} {
		if !ambiguous(err) {
			t.Errorf("%v: not ambiguous", err)
		}
	}
	for _, err := range []error{
		errors.New("document is too large"),
		mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000}}},
		mongo.CommandError{Code: 2, Message: "bad value"},
	} {
		if ambiguous(err) {
			t.Errorf("%v: ambiguous", err)
		}
	}
}
