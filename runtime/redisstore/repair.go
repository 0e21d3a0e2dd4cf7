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
// collection. A lookup build (runtime.RepairOptions.Lookups) leaves the
// listing alone: a block deleted between its SCAN and its ZADD would be
// listed again.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	rep, err := s.eng.Repair(ctx)
	if err != nil || runtime.RepairOptionsOf(ctx).Lookups != nil {
		return rep, err
	}
	if err := s.repairListing(ctx); err != nil {
		return rep, s.errOf("Repair", nil, err)
	}
	return rep, nil
}

// listBatch is how many listing members or block names Repair reads or
// fixes per command.
const listBatch = 256

// repairListing makes the listing hold exactly the block hashes found
// (SCAN): readable or not. It holds one page of members or names at a
// time: it removes the members whose hash is gone, then adds (ZADD NX)
// the names SCAN finds.
func (s *Store[T, K]) repairListing(ctx context.Context) error {
	lo := "-"
	for {
		ms, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.listKey(), Start: lo, Stop: "+", ByLex: true, Count: listBatch}).Result()
		if err != nil {
			return err
		}
		exists := make([]*redis.IntCmd, len(ms))
		if _, err := s.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, m := range ms {
				exists[i] = pl.Exists(ctx, s.naming.blockKey([]byte(m)))
			}
			return nil
		}); err != nil {
			return err
		}
		var drop []any
		for i, m := range ms {
			if exists[i].Val() == 0 {
				drop = append(drop, m)
			}
		}
		if len(drop) > 0 {
			if err := s.c.ZRem(ctx, s.listKey(), drop...).Err(); err != nil {
				return err
			}
		}
		if len(ms) < listBatch {
			break
		}
		lo = "(" + ms[len(ms)-1]
	}
	var after []byte
	for {
		keys, next, err := s.px.scanKeys(ctx, after, listBatch)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			add := make([]redis.Z, len(keys))
			for i, bk := range keys {
				add[i] = redisZ(bk)
			}
			if err := s.c.ZAddNX(ctx, s.listKey(), add...).Err(); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		after = next
	}
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
