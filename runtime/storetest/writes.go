package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// MatchWrite is a write of a match that changes lookup values, so that on
// a store without atomic lookups it adds index entries before it writes
// its block: for the fault tests of the lookup protocol of each adapter.
type MatchWrite struct {
	Name string
	// Block is the id of the block the write writes when run on id.
	Block func(id string) string
	// Run writes; block id must hold StartMatch(id).
	Run func(ctx context.Context, r model.MatchRepository, id string) error
}

// StartMatch is the match MatchWrites start from.
func StartMatch(id string) *model.Match {
	return &model.Match{ID: id, Code: "code-" + id, Region: "north", Level: 1, Tags: []string{"x"}, Venue: model.Venue{City: "Rome"}}
}

// MatchWrites are a Create (of block "new-"+id), an Update and a Put of
// block id, each giving it new unique and non-unique lookup values derived
// from id (so that runs on two ids do the same work).
func MatchWrites() []MatchWrite {
	same := func(id string) string { return id }
	return []MatchWrite{
		{"Create", func(id string) string { return "new-" + id }, func(ctx context.Context, r model.MatchRepository, id string) error {
			return r.Create(ctx, &model.Match{ID: "new-" + id, Code: "new-" + id, Region: "south", Tags: []string{"y", "z"}, Venue: model.Venue{City: "Oslo"}})
		}},
		{"Update", same, func(ctx context.Context, r model.MatchRepository, id string) error {
			return r.Update(ctx, id, model.MatchUpdate{Code: ptr("upd-" + id), Tags: &[]string{"x", "w-" + id}})
		}},
		{"Put", same, func(ctx context.Context, r model.MatchRepository, id string) error {
			m, err := r.Get(ctx, id)
			if err != nil {
				return err
			}
			m.Code, m.Region, m.Venue.City = "put-"+id, "west", "Bonn"
			return r.Put(ctx, m)
		}},
	}
}

// CheckNotSent fails t unless err is the error of a write that never sent
// its block write because its context was cancelled: a *runtime.Error
// wrapping context.Canceled, not an unknown outcome (runtime.NotSent).
func CheckNotSent(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: error %v, want one wrapping context.Canceled", what, err)
	}
	var re *runtime.Error
	if !errors.As(err, &re) || errors.Is(err, runtime.ErrUnknownOutcome) || strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("%s: error %v: want a *runtime.Error that says the write was not applied, not an unknown outcome", what, err)
	}
}
