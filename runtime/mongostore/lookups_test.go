package mongostore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

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
