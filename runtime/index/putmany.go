package index

import (
	"context"

	"github.com/noamgen/noamgen/runtime"
)

// PutMany is a batch of Puts (runtime.BatchStore.PutMany) through the
// protocol on a store without atomic lookups, written once: the store
// speaks its commands through a Puts (one read of the states of a pass's
// blocks, one batch of block writes each on its condition), PutMany keeps
// the rules of a Put over them, item by item, as the single Put would:
//
//   - the version rule (runtime.CheckVersion) against the version read,
//     where the store reads it (BlockState.HasVersion; otherwise the
//     store's write checks it, with runtime.VersionConflict's error);
//   - the created timestamp a block that exists keeps
//     (runtime.Desc.KeepCreated of the entry read);
//   - the attempts: a block write whose condition failed (the block
//     changed since it was read) is read and written again in a later
//     pass, up to runtime.MaxAttempts (Engine.RunMany);
//   - the outcomes (Engine.CommitMany): a write the store reports
//     ambiguous is read back, runtime.ErrUnknownOutcome unless it landed;
//     one the context ended before it was sent is runtime.NotSent; a
//     written item gets its new version.
//
// The items are not atomic together: each fails or is written alone.

// BlockState is a block as a batch write's read found it.
type BlockState[V any] struct {
	Found bool
	// Stamp is the block's stamp, the condition of its write.
	Stamp Stamp
	// Value is the block as stored (when Found): its index keys are the
	// ones the write replaces.
	Value V
	// HasVersion: the read holds the block's version, Version (0 for a
	// block written before the aggregate had a version); without it the
	// store's write checks the version itself.
	HasVersion bool
	Version    int64
	// Created is the block's stored created entry, nil for none.
	Created runtime.Decoder
}

// Puts is what PutMany asks of a store for a batch of Puts of items ts
// (PutMany's, by position).
type Puts[V any] interface {
	// ReadStates reads the blocks of the items idx (distinct blocks) in
	// as few round trips as the store allows (one find, one pipeline).
	// An error stops its item (a read that failed, a value the store
	// cannot hold).
	ReadStates(ctx context.Context, idx []int) ([]BlockState[V], []error)
	// WriteBlocks writes the blocks of the items idx, idx[j] with stamp
	// sts[j], each on condition that it is as ReadStates last found it
	// and at the version expected, in as few round trips as the store
	// allows, and reports per item: applied (ok), condition failed (not
	// ok, no error), outcome unknown (an error Primitives.Ambiguous
	// reports: it is read back) or refused (a *runtime.Error, as it is).
	WriteBlocks(ctx context.Context, idx []int, sts []Stamp) (ok []bool, errs []error)
}

// PutMany writes ts (checked already, distinct or not) as Put each, over
// the store's puts, and returns each item's error; a written item's
// version is moved on in ts.
func PutMany[T any, K comparable](ctx context.Context, e *Engine[*T], d *runtime.Desc[T, K], op string, ts []*T, p Puts[*T]) []error {
	ids := make([]any, len(ts))
	blocks := make([][]byte, len(ts))
	want := make([]int64, len(ts))
	for i, t := range ts {
		id := *d.ID(t)
		ids[i], blocks[i], want[i] = id, d.Keys.Bytes(id), d.VersionOf(t)
	}
	read := func(ctx context.Context, idx []int) ([]Attempt, []error) {
		as := make([]Attempt, len(idx))
		sts, errs := p.ReadStates(ctx, idx)
		for j, i := range idx {
			if errs[j] != nil {
				continue
			}
			st, t := sts[j], ts[i]
			if st.HasVersion {
				errs[j] = runtime.CheckVersion(op, d.Aggregate, ids[i], st.Found, st.Version, want[i])
			}
			if errs[j] == nil {
				errs[j] = d.KeepCreated(op, ids[i], t, st.Created)
			}
			as[j] = Attempt{Found: st.Found, Stamp: st.Stamp, After: e.Keys(blocks[i], t)}
			if st.Found && len(e.Lookups) > 0 {
				as[j].Before = e.Keys(blocks[i], st.Value)
			}
		}
		return as, errs
	}
	errs := e.RunMany(ctx, op, ids, blocks, read, p.WriteBlocks)
	for i, err := range errs {
		if err == nil {
			d.SetVersion(ts[i], want[i]+1)
		}
	}
	return errs
}
