package dynamostore

import (
	"context"
	"fmt"

	"github.com/noamgen/noamgen/runtime"
)

// txLost settles the plans of a batch transaction whose reply was lost
// twice (cause): it reads their blocks back, and an item is done when
// its block carries the stamp its plan wrote or, for a delete, is gone.
// One block carrying its stamp shows that the whole transaction was
// applied (a transaction is all or nothing, and a stamp is the write's
// own), so every item of it is done. The others get
// runtime.ErrUnknownOutcome: the transaction was not applied, or may
// still be, or its blocks were written again since; so do all items when
// their blocks carry no stamp (an aggregate without an index table) or
// the read fails.
func (s *Store[T, K]) txLost(ctx context.Context, op string, key func(int) K, plans []*txPlan, cause error, errs []error) {
	var keys [][]byte
	for _, p := range plans {
		if p.block != nil && (p.stamp != nil || p.deletes) {
			keys = append(keys, p.block)
		}
	}
	detail := "(outcome unknown: the transaction may have been applied)"
	done := make([]bool, len(plans))
	applied := false
	if len(keys) > 0 {
		dctx, cancel := runtime.Detach(ctx)
		bs, err := prims[T, K]{s}.ReadBlocks(dctx, keys)
		cancel()
		if err != nil {
			detail = fmt.Sprintf("(outcome unknown: reading the blocks back failed: %v)", err)
		} else {
			detail = "(outcome unknown: the transaction may not have been applied)"
			found := make(map[string]int, len(bs))
			for j, b := range bs {
				found[string(b.Key)] = j
			}
			for i, p := range plans {
				j, ok := found[string(p.block)]
				switch {
				case p.stamp != nil && ok && bs[j].Stamp == *p.stamp:
					done[i], applied = true, true
				case p.deletes && !ok:
					done[i] = true
				}
			}
		}
	}
	for i, p := range plans {
		if !applied && !done[i] {
			errs[p.i] = runtime.FailAt(op, s.d.Aggregate, key(p.i), detail, runtime.ErrUnknownOutcome, cause)
			continue
		}
		if p.done != nil {
			p.done()
		}
	}
}
