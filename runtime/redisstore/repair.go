package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// Repair rebuilds the index tables from the blocks (the engine's Repair,
// a page of blocks or index items at a time), then the block listing: it
// removes the members no block hash has and adds the blocks it lacks. A
// unique value held by several blocks stays with the first in block-key
// order; the others are reported. Run it while nothing else writes the
// collection.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	rep, err := s.eng.Repair(ctx)
	if err != nil {
		return rep, err
	}
	if err := s.repairListing(ctx); err != nil {
		return rep, s.errOf("Repair", nil, err)
	}
	return rep, nil
}

// listBatch is how many listing members Repair reads or fixes per command.
const listBatch = 256

// repairListing makes the listing hold exactly the block hashes found
// (SCAN): readable or not.
func (s *Store[T, K]) repairListing(ctx context.Context) error {
	names, err := s.px.scanNames(ctx)
	if err != nil {
		return err
	}
	found := make(map[string]bool, len(names))
	for _, bk := range names {
		found[string(bk)] = true
	}
	var drop []any
	lo := "-"
	for {
		ms, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.listKey(), Start: lo, Stop: "+", ByLex: true, Count: listBatch}).Result()
		if err != nil {
			return err
		}
		for _, m := range ms {
			if !found[m] {
				drop = append(drop, m)
			}
			delete(found, m)
		}
		if len(ms) < listBatch {
			break
		}
		lo = "(" + ms[len(ms)-1]
	}
	for start := 0; start < len(drop); start += listBatch {
		if err := s.c.ZRem(ctx, s.listKey(), drop[start:min(start+listBatch, len(drop))]...).Err(); err != nil {
			return err
		}
	}
	var add []redis.Z
	for m := range found {
		add = append(add, redis.Z{Member: m})
	}
	for start := 0; start < len(add); start += listBatch {
		if err := s.c.ZAdd(ctx, s.listKey(), add[start:min(start+listBatch, len(add))]...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// globEscape escapes the glob characters of SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
