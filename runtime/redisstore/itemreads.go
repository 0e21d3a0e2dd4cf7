package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime/index"
)

// The reads' items on a single node (index.ItemReader, index.Engine.Atomic):
// a write changes a block and its entries in one script run, so an entry
// is never stale and a read needs of it only its value and its block,
// which the claims hash and the zset members hold. The engine still
// checks each block it reads against the value (a write may land between
// the two reads).

var _ index.ItemReader = (*prims[struct{}])(nil)

// ReadItems implements index.ItemReader: the holders of values of a
// unique lookup (HGET, or HMGET for several), or the members of a
// non-unique one that exist (ZMSCORE).
func (p *prims[V]) ReadItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lk := p.lookups[l]
	if lk.claims != "" && len(keys) == 1 {
		owner, err := p.c.HGet(ctx, lk.claims, string(keys[0])).Result()
		if isNil(err) {
			return nil, nil
		}
		if err != nil {
			return nil, readErr(err)
		}
		return []index.Item{{Key: keys[0], Block: []byte(owner)}}, nil
	}
	var cmd *redis.Cmd
	if lk.claims != "" {
		cmd = p.c.Do(ctx, append([]any{"HMGET", lk.claims}, args(keys)...)...)
	} else {
		cmd = p.c.Do(ctx, append([]any{"ZMSCORE", lk.z}, args(keys)...)...)
	}
	r, err := cmd.Slice()
	if err != nil {
		return nil, readErr(err)
	}
	var out []index.Item
	for i, x := range r {
		if x == nil || i >= len(keys) {
			continue
		}
		it := index.Item{Key: keys[i]}
		if lk.claims != "" {
			owner, _ := x.(string)
			it.Block = []byte(owner)
		} else if _, bk, err := split(lk.parts, keys[i]); err == nil {
			it.Block = bk
		} else {
			continue // no member of this lookup
		}
		out = append(out, it)
	}
	return out, nil
}

func args(keys [][]byte) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// RangeItems implements index.ItemReader: ZRANGE BYLEX (desc: BYLEX REV)
// of the lookup's zset, whose members are value + block key (a unique
// lookup's item key is the value: its members are sorted out as
// ScanItems's).
func (p *prims[V]) RangeItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	lk := p.lookups[l]
	unique := lk.claims != ""
	lo, hi := lexBounds(from, to, unique, desc)
	out := make([]index.Item, 0, min(limit, 256))
	for len(out) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		want := limit - len(out)
		ms, err := p.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: lk.z, Start: lo, Stop: hi, ByLex: true, Rev: desc, Count: int64(want)}).Result()
		if err != nil {
			return nil, readErr(err)
		}
		for _, m := range ms {
			mem := []byte(m)
			v, bk, err := split(lk.parts, mem)
			if err != nil {
				continue // no member of this lookup
			}
			if !unique {
				out = append(out, index.Item{Key: mem, Block: bk})
				continue
			}
			switch {
			case outside(v, from, to, desc):
				// A member of a value on the side the scan starts from
				// (the position a page resumes after).
			case beyond(v, from, to, desc):
				return out, nil
			default:
				out = append(out, index.Item{Key: v, Block: bk})
			}
		}
		if len(ms) < want {
			break
		}
		if desc {
			hi = "(" + ms[len(ms)-1]
		} else {
			lo = "(" + ms[len(ms)-1]
		}
	}
	return out, nil
}

// readErr is the error of a read command: a refusal of the cluster
// before any change is a runtime.ErrUnavailable.
func readErr(err error) error {
	if unavailable(err) {
		return &refused{err}
	}
	return err
}
