package redisstore

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// repairBatch is how many blocks Repair reads per pipeline.
const repairBatch = 256

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

// scanBlocks returns the encoded keys of every block hash of the
// collection (SCAN on every master of a cluster), sorted.
func (s *Store[T, K]) scanBlocks(ctx context.Context) ([][]byte, error) {
	match := globEscape(s.coll) + ":{*}"
	var names []string
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		it := c.Scan(ctx, 0, match, 512).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			names = append(names, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		// Masters are scanned concurrently.
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, s.c)
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, n := range names {
		bk, err := s.parse(n)
		if err != nil {
			continue // another collection's key that matches the pattern
		}
		if s.blockKey(bk) != n {
			continue
		}
		out = append(out, bk)
	}
	slices.SortFunc(out, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	return slices.CompactFunc(out, func(a, b []byte) bool { return string(a) == string(b) }), nil
}

// Repair rebuilds the block listing and the index tables from the blocks:
// it finds every block hash (SCAN), reads them in pipelines, then removes
// the listing members and index entries no block holds and writes the
// missing ones. A unique value held by several blocks stays with the
// first in block-key order; the others are reported. Run it while nothing
// else writes the collection.
func (s *Store[T, K]) Repair(ctx context.Context) (runtime.RepairReport, error) {
	const op = "Repair"
	var rep runtime.RepairReport
	fail := func(err error) (runtime.RepairReport, error) { return rep, s.errOf(op, nil, err) }
	bks, err := s.scanBlocks(ctx)
	if err != nil {
		return fail(err)
	}
	type holder struct{ bk, meta string }
	want := make([]map[string]holder, len(s.d.Lookups)) // member -> holder
	claims := make([]map[string]string, len(s.d.Lookups))
	for i := range want {
		want[i], claims[i] = map[string]holder{}, map[string]string{}
	}
	listed := map[string]bool{}
	// Blocks that cannot be decoded keep their entries as they are.
	unreadable := map[string]bool{}
	for start := 0; start < len(bks); start += repairBatch {
		batch := bks[start:min(start+repairBatch, len(bks))]
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, bk := range batch {
				cmds[j] = p.HGetAll(ctx, s.blockKey(bk))
			}
			return nil
		}); err != nil {
			return fail(err)
		}
		for j, bk := range batch {
			h := cmds[j].Val()
			if len(h) == 0 {
				continue
			}
			r := runtime.NewKeyReader(bk)
			id, err := s.d.Keys.Read(r)
			if err != nil || !r.Done() {
				continue
			}
			t, err := s.decode(id, h)
			if err != nil {
				rep.AddUnreadable(s.d.Aggregate, id, err)
				listed[string(bk)], unreadable[string(bk)] = true, true
				continue
			}
			rep.Aggregates++
			listed[string(bk)] = true
			meta := h[incField] + " " + pad(parseSeq(h[seqField]))
			for i, l := range s.d.Lookups {
				for _, v := range runtime.SortKeys(l.Keys(t)) {
					if l.Unique {
						if first, taken := claims[i][string(v)]; taken {
							rep.AddConflict(s.lookupName(i), v, []byte(first), bk)
							continue
						}
						claims[i][string(v)] = string(bk)
					}
					want[i][member(v, bk)] = holder{bk: string(bk), meta: meta}
				}
			}
		}
	}
	// The listing.
	members, err := s.c.ZRange(ctx, s.listKey(), 0, -1).Result()
	if err != nil {
		return fail(err)
	}
	var fix []func(redis.Pipeliner)
	for _, m := range members {
		if !listed[m] {
			fix = append(fix, func(p redis.Pipeliner) { p.ZRem(ctx, s.listKey(), m) })
		}
		delete(listed, m)
	}
	for m := range listed {
		fix = append(fix, func(p redis.Pipeliner) { p.ZAdd(ctx, s.listKey(), redis.Z{Member: m}) })
	}
	// The index tables.
	for i, l := range s.d.Lookups {
		lk := s.lookupKeys(i)
		members, err := s.c.ZRange(ctx, lk.z, 0, -1).Result()
		if err != nil {
			return fail(err)
		}
		metas, err := s.c.HGetAll(ctx, lk.meta).Result()
		if err != nil {
			return fail(err)
		}
		var held map[string]string
		if l.Unique {
			if held, err = s.c.HGetAll(ctx, lk.claims).Result(); err != nil {
				return fail(err)
			}
		}
		present := map[string]bool{}
		for _, m := range members {
			h, ok := want[i][m]
			switch {
			case !ok && unreadable[string(blockOf(l.Parts, m))]:
				present[m] = true // an unreadable block's: left as it is
			case !ok:
				rep.Removed++
				fix = append(fix, func(p redis.Pipeliner) { p.ZRem(ctx, lk.z, m); p.HDel(ctx, lk.meta, m) })
			case metas[m] == "" || strings.Fields(metas[m])[0] != strings.Fields(h.meta)[0]:
				// An entry of an earlier incarnation of the block.
				rep.Removed++
				rep.Added++
				fix = append(fix, func(p redis.Pipeliner) { p.HSet(ctx, lk.meta, m, h.meta) })
				present[m] = true
			default:
				present[m] = true
			}
		}
		for m, h := range want[i] {
			if !present[m] {
				rep.Added++
				fix = append(fix, func(p redis.Pipeliner) { p.ZAdd(ctx, lk.z, redis.Z{Member: m}); p.HSet(ctx, lk.meta, m, h.meta) })
			}
		}
		for m := range metas {
			if _, ok := want[i][m]; !ok && !slices.Contains(members, m) {
				fix = append(fix, func(p redis.Pipeliner) { p.HDel(ctx, lk.meta, m) })
			}
		}
		if l.Unique {
			inZset := make(map[string]bool, len(members))
			for _, m := range members {
				inZset[m] = true
			}
			for v, owner := range held {
				switch w := claims[i][v]; {
				case w == owner:
				case w == "" && unreadable[owner]:
				case w == "":
					// Nobody holds v: counted with its member, if any.
					if !inZset[member([]byte(v), []byte(owner))] {
						rep.Removed++
					}
					fix = append(fix, func(p redis.Pipeliner) { p.HDel(ctx, lk.claims, v) })
				default:
					// A claim naming the wrong holder.
					rep.Removed++
					rep.Added++
					fix = append(fix, func(p redis.Pipeliner) { p.HSet(ctx, lk.claims, v, w) })
				}
			}
			for v, owner := range claims[i] {
				if _, ok := held[v]; !ok {
					if present[member([]byte(v), []byte(owner))] {
						rep.Added++ // the member was there, its claim was not
					}
					fix = append(fix, func(p redis.Pipeliner) { p.HSet(ctx, lk.claims, v, owner) })
				}
			}
		}
	}
	for start := 0; start < len(fix); start += repairBatch {
		batch := fix[start:min(start+repairBatch, len(fix))]
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, f := range batch {
				f(p)
			}
			return nil
		}); err != nil {
			return fail(err)
		}
	}
	return rep, nil
}
