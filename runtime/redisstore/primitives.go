package redisstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
)

// The index engine's primitives (runtime/index) over the keys of keys.go.
// An item of lookup l is kept in the three keys of the lookup, which share
// one hash tag (one slot), so that every primitive on items is one run of
// ixSource, atomic on its node:
//
//   - a non-unique lookup's item has the index key value + block key as
//     its member in the index zset, and its meta in the meta hash;
//   - a unique lookup's item has the value as its key: the claims hash
//     maps it to the block, the zset holds the member value + block key
//     (for ordered reads) and the meta hash that member's meta.
//
// A meta is "<inc> <seq> <w> <block>": the block's incarnation (base 36,
// as the block's _inc), the write sequence (decimal), the attempt's mark
// (base 36, 0 for none) and the block key. Entries written before the
// engine have "<inc> <seq>" only: their mark is 0 and their block is the
// claim's holder, or the key's block key part.
//
// A block's stamp is its hidden fields _seq (decimal, zero-padded) and
// _inc (base 36; absent for 0).
const ixSource = `
local op = ARGV[1]
local nk, block = #KEYS, nil
if op == 'putat' then
  -- a put on a single node checked against its block (the last key)
  block, nk = KEYS[nk], nk - 1
end
local z, meta, claims = KEYS[1], KEYS[2], nil
if nk >= 3 then claims = KEYS[3] end
-- norm strips the leading zeros of a decimal ('' stands for 0).
local function norm(s) return (string.gsub(s or '', '^0+', '')) end
local function less(a, b)
  a, b = norm(a), norm(b)
  if #a ~= #b then return #a < #b end
  return a < b
end
-- parse splits a meta: inc, seq, mark, block (nil for a meta without it).
local function parse(m)
  if not m then return '0', '', '0', nil end
  local i, s, w, b = string.match(m, '^(%S*) (%d+) (%S+) (.*)$')
  if i then return i, s, w, b end
  i, s = string.match(m, '^(%S*) (%d+)')
  return i or '', s or '', '0', nil
end
-- cur reads the item at key k: found, its block (nil if unknown), its meta.
local function cur(k)
  if claims then
    local owner = redis.call('HGET', claims, k)
    if not owner then return false end
    return true, owner, redis.call('HGET', meta, k .. owner)
  end
  if not redis.call('ZSCORE', z, k) then return false end
  local m = redis.call('HGET', meta, k)
  local _, _, _, b = parse(m)
  return true, b, m
end
-- sameBlock: the item's block is b (a meta without its block: the key
-- ends with b, as value + block key does).
local function sameBlock(k, blk, b)
  if blk then return blk == b end
  return #k >= #b and string.sub(k, -#b) == b
end
-- holds checks condition kind with its arguments c (from ARGV[i] on).
local function holds(k, found, blk, m, kind, i)
  if kind == 'always' then return true end
  if kind == 'absent' then return not found end
  if not found then return false end
  local mi, ms, mw = parse(m)
  if mi == '' then mi = '0' end
  if kind == 'same' then
    return sameBlock(k, blk, ARGV[i]) and norm(ms) == norm(ARGV[i + 1]) and mw == ARGV[i + 2]
  elseif kind == 'marked' then
    return mw == ARGV[i]
  elseif kind == 'held' then
    return sameBlock(k, blk, ARGV[i]) and mi == ARGV[i + 1] and (norm(ARGV[i + 2]) == '' or less(ms, ARGV[i + 2]))
  end
  return false
end
local function remove(k, blk)
  if claims then
    redis.call('HDEL', claims, k)
    redis.call('ZREM', z, k .. blk)
    redis.call('HDEL', meta, k .. blk)
  else
    redis.call('ZREM', z, k)
    redis.call('HDEL', meta, k)
  end
end
local function body()
  if op == 'putat' then
    -- put, on condition that the block still has the stamp ARGV[11]
    -- (seq), ARGV[12] (inc, '' for none)
    if redis.call('EXISTS', block) == 0 then return {'ok', 0} end
    local st = redis.call('HMGET', block, '_seq', '_inc')
    if norm(st[1] or '') ~= norm(ARGV[11]) or (st[2] or '') ~= ARGV[12] then return {'ok', 0} end
    op = 'put'
  end
  if op == 'put' then
    -- key, block, inc, seq, mark, condition, its arguments
    local k, b = ARGV[2], ARGV[3]
    local found, blk, m = cur(k)
    if not holds(k, found, blk, m, ARGV[7], 8) then return {'ok', 0} end
    local seq = ARGV[5]
    if ARGV[7] == 'always' and found then
      local _, ms = parse(m)
      if less(seq, ms) then seq = ms end
    end
    local nm = ARGV[4] .. ' ' .. seq .. ' ' .. ARGV[6] .. ' ' .. b
    if claims then
      if found and blk ~= b then
        redis.call('ZREM', z, k .. blk)
        redis.call('HDEL', meta, k .. blk)
      end
      redis.call('HSET', claims, k, b)
      redis.call('ZADD', z, 0, k .. b)
      redis.call('HSET', meta, k .. b, nm)
    else
      redis.call('ZADD', z, 0, k)
      redis.call('HSET', meta, k, nm)
    end
    if found then return {'ok', 1, blk or false, m or false} end
    return {'ok', 1}
  elseif op == 'get' then
    local out = {}
    for i = 2, #ARGV do
      local found, blk, m = cur(ARGV[i])
      if found then
        out[#out + 1] = ARGV[i]; out[#out + 1] = blk or false; out[#out + 1] = m or false
      end
    end
    return {'ok', out}
  elseif op == 'del' then
    -- condition, its 3 arguments, keys
    local n = 0
    for i = 6, #ARGV do
      local k = ARGV[i]
      local found, blk, m = cur(k)
      if holds(k, found, blk, m, ARGV[2], 3) then
        remove(k, blk)
        n = n + 1
      end
    end
    return {'ok', n}
  elseif op == 'scan' then
    -- from, to (range bounds of ZRANGEBYLEX), count, and '1' for
    -- descending order (ZREVRANGEBYLEX): members, metas and, for a
    -- unique lookup, the holders of their values (when the meta names
    -- the block).
    local out = {}
    local mems
    if ARGV[5] == '1' then
      mems = redis.call('ZREVRANGEBYLEX', z, ARGV[3], ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
    else
      mems = redis.call('ZRANGEBYLEX', z, ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
    end
    for _, mem in ipairs(mems) do
      local m = redis.call('HGET', meta, mem)
      local owner = false
      if claims and m then
        local _, _, _, b = parse(m)
        if b and #b < #mem and string.sub(mem, -#b) == b then
          owner = redis.call('HGET', claims, string.sub(mem, 1, #mem - #b)) or ''
        end
      end
      out[#out + 1] = mem; out[#out + 1] = m or false; out[#out + 1] = owner
    end
    return {'ok', out}
  elseif op == 'fence' or op == 'delblock' then
    -- the block (KEYS[1]): on condition of its stamp ARGV[2] (seq), ARGV[3]
    -- (inc, '' for none), set its _seq to ARGV[4], or delete it.
    if redis.call('EXISTS', z) == 0 then return {'ok', 0} end
    local st = redis.call('HMGET', z, '_seq', '_inc')
    if norm(st[1] or '') ~= norm(ARGV[2]) or (st[2] or '') ~= ARGV[3] then return {'ok', 0} end
    if op == 'fence' then
      redis.call('HSET', z, '_seq', ARGV[4])
    else
      redis.call('DEL', z)
    end
    return {'ok', 1}
  end
  return {'err', 'unknown op ' .. op, 0}
end
local ok, res = pcall(body)
if ok then return res end
if type(res) == 'table' then res = res.err end
return {'err', tostring(res), 0}
`

var ix = redis.NewScript(ixSource)

// ixLookup is what the primitives know of a lookup.
type ixLookup struct {
	z, meta, claims string // claims: "" unless unique
	parts           int    // components of a value (runtime.Lookup.Parts)
}

// prims are the index engine's primitives of one collection.
type prims[V any] struct {
	c, w    redis.UniversalClient // w: c, or c with Options.WaitReplicas
	names   naming
	lookups []ixLookup
	// decode decodes block bk from its hash (HGETALL).
	decode func(bk []byte, h map[string]string) (V, error)

	mu   sync.Mutex
	rest scanRest // scanKeys: the rest of the SCAN reply it stopped in
	// held, when set (by tests), is told how many block names scanKeys
	// holds after each SCAN reply.
	held func(n int)
}

var _ index.Primitives[struct{}] = (*prims[struct{}])(nil)

// encInc renders an incarnation as the hidden field _inc holds it.
func encInc(inc int64) string { return strconv.FormatUint(uint64(inc), 36) }

// decInc reads an incarnation ("" is 0).
func decInc(s string) int64 {
	n, _ := strconv.ParseUint(s, 36, 64)
	return int64(n)
}

// stampOf reads the stamp of a block hash.
func stampOf(h map[string]string) index.Stamp {
	return index.Stamp{Seq: parseSeq(h[seqField]), Inc: decInc(h[incField])}
}

// incText renders the _inc of stamp inc ("" for none).
func incText(inc int64) string {
	if inc == 0 {
		return ""
	}
	return encInc(inc)
}

func (p *prims[V]) keys(l int) []string {
	lk := p.lookups[l]
	if lk.claims != "" {
		return []string{lk.z, lk.meta, lk.claims}
	}
	return []string{lk.z, lk.meta}
}

// notAcked is a write of an index item applied on its node but not
// acknowledged by enough replicas (Options.WaitReplicas): the engine
// undoes it and fails the write with it, a runtime.ErrUnavailable.
type notAcked struct {
	what string
	u    *unreplicated
}

func (e *notAcked) Error() string   { return e.what + ": " + e.u.Error() }
func (e *notAcked) Unwrap() []error { return []error{runtime.ErrUnavailable, e.u} }

// refused is a command a cluster refused before any change: a
// runtime.ErrUnavailable.
type refused struct{ err error }

func (e *refused) Error() string   { return e.err.Error() }
func (e *refused) Unwrap() []error { return []error{runtime.ErrUnavailable, e.err} }

// run runs op of ixSource on keys, returning the reply after "ok".
func (p *prims[V]) run(ctx context.Context, c redis.UniversalClient, keys []string, args ...any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := runScript(ctx, c, ix, keys, args)
	if err != nil {
		if _, ok := isUnreplicated(err); !ok {
			if unavailable(err) {
				return nil, &refused{err}
			}
			return nil, err
		}
	}
	if len(res) < 2 {
		return nil, fmt.Errorf("redisstore: unexpected script reply %v", res)
	}
	if res[0] != "ok" {
		e := &scriptError{}
		e.msg, _ = res[1].(string)
		if unavailable(e) {
			return nil, &refused{e}
		}
		return nil, e
	}
	return res[1:], err
}

// item builds the item of key k of lookup l from its block (nil when the
// meta does not name it) and meta.
func (p *prims[V]) item(l int, k string, blk, m any) index.Item {
	it := index.Item{Key: []byte(k)}
	ms, _ := m.(string)
	f := strings.SplitN(ms, " ", 4)
	if len(f) >= 2 {
		it.Inc, it.Seq = decInc(f[0]), parseSeq(f[1])
	}
	if len(f) == 4 {
		it.W = decInc(f[2])
		it.Block = []byte(f[3])
	}
	if b, ok := blk.(string); ok {
		it.Block = []byte(b)
	}
	if it.Block == nil && p.lookups[l].claims == "" {
		// An entry written before the engine: value + block key.
		if _, bk, err := split(p.lookups[l].parts, []byte(k)); err == nil {
			it.Block = bk
		}
	}
	return it
}

// condArgs renders condition c as the script reads it: its kind and
// three arguments.
func condArgs(c index.Cond) []any {
	switch c.Kind {
	case index.Absent:
		return []any{"absent", "", "", ""}
	case index.Same:
		return []any{"same", c.Item.Block, strconv.FormatInt(c.Item.Seq, 10), encInc(c.Item.W)}
	case index.Marked:
		return []any{"marked", encInc(c.W), "", ""}
	case index.Held:
		return []any{"held", c.Block, encInc(c.Inc), strconv.FormatInt(c.Before, 10)}
	}
	return []any{"always", "", "", ""}
}

// PutItem implements index.Primitives: one script run, waited for
// (Options.WaitReplicas) as the entries a write depends on.
func (p *prims[V]) PutItem(ctx context.Context, l int, it index.Item, c index.Cond) (bool, *index.Item, error) {
	// The condition's kind is ARGV[7], its arguments ARGV[8] on.
	args := append([]any{"put", it.Key, it.Block, encInc(it.Inc), pad(it.Seq), encInc(it.W)}, condArgs(c)...)
	r, err := p.run(ctx, p.w, p.keys(l), args...)
	var short *unreplicated
	if u, ok := isUnreplicated(err); ok {
		short, err = u, nil
	}
	if err != nil {
		return false, nil, err
	}
	n, _ := r[0].(int64)
	var prev *index.Item
	if len(r) >= 3 {
		it := p.item(l, string(it.Key), r[1], r[2])
		prev = &it
	}
	if short != nil {
		what := "lookup entries not replicated, block not written, entries undone"
		if p.lookups[l].claims != "" {
			what = "claim not replicated, block not written, claim undone"
		}
		return n == 1, prev, &notAcked{what: what, u: short}
	}
	return n == 1, prev, nil
}

// nodePrims are the primitives of a single node, where a block and its
// items change in one script run: Repair writes an item on condition
// of its block's stamp (index.HeldPutter).
type nodePrims[V any] struct{ *prims[V] }

var _ index.HeldPutter[struct{}] = nodePrims[struct{}]{}

// PutHeld implements index.HeldPutter: one script run that puts the item
// only if block it.Block still has the stamp of b (every write of a
// block moves its _seq).
func (p nodePrims[V]) PutHeld(ctx context.Context, l int, it index.Item, c index.Cond, b index.Block[V], _ func(index.Block[V]) bool) (bool, error) {
	args := append([]any{"putat", it.Key, it.Block, encInc(it.Inc), pad(it.Seq), encInc(it.W)}, condArgs(c)...)
	args = append(args, strconv.FormatInt(b.Stamp.Seq, 10), incText(b.Stamp.Inc))
	r, err := p.run(ctx, p.w, append(p.keys(l), p.names.blockKey(it.Block)), args...)
	if u, ok := isUnreplicated(err); ok {
		return false, &notAcked{what: "lookup entry not replicated", u: u}
	}
	if err != nil {
		return false, err
	}
	n, _ := r[0].(int64)
	return n == 1, nil
}

// GetItems implements index.Primitives: one script run.
func (p *prims[V]) GetItems(ctx context.Context, l int, keys [][]byte) ([]index.Item, error) {
	args := make([]any, 0, len(keys)+1)
	args = append(args, "get")
	for _, k := range keys {
		args = append(args, k)
	}
	r, err := p.run(ctx, p.c, p.keys(l), args...)
	if err != nil {
		return nil, err
	}
	flat, _ := r[0].([]any)
	var out []index.Item
	for i := 0; i+2 < len(flat); i += 3 {
		k, _ := flat[i].(string)
		out = append(out, p.item(l, k, flat[i+1], flat[i+2]))
	}
	return out, nil
}

// DeleteItems implements index.Primitives: one script run.
func (p *prims[V]) DeleteItems(ctx context.Context, l int, keys [][]byte, c index.Cond) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	args := append([]any{"del"}, condArgs(c)...)
	for _, k := range keys {
		args = append(args, k)
	}
	r, err := p.run(ctx, p.c, p.keys(l), args...)
	if err != nil {
		return 0, err
	}
	n, _ := r[0].(int64)
	return int(n), nil
}

// ScanItems implements index.Primitives: one script run per batch of
// members (ZRANGEBYLEX; desc: ZREVRANGEBYLEX); a unique lookup's members
// are its values followed by their blocks, so its scan starts at from and
// stops at the first value at or after to (desc: it starts below to's
// members and stops at the first value before from).
func (p *prims[V]) ScanItems(ctx context.Context, l int, from, to []byte, limit int, desc bool) ([]index.Item, error) {
	unique := p.lookups[l].claims != ""
	lo, hi := lexBounds(from, to, unique, desc)
	rev := "0"
	if desc {
		rev = "1"
	}
	var out []index.Item
	for len(out) < limit {
		want := limit - len(out)
		r, err := p.run(ctx, p.c, p.keys(l), "scan", lo, hi, want, rev)
		if err != nil {
			return nil, err
		}
		flat, _ := r[0].([]any)
		if !unique {
			for i := 0; i+2 < len(flat); i += 3 {
				mem, _ := flat[i].(string)
				out = append(out, p.item(l, mem, nil, flat[i+1]))
			}
		} else {
			var batch []index.Item
			var check []int // batch items whose claim is to be read
			end := false
			for i := 0; i+2 < len(flat) && !end; i += 3 {
				mem, _ := flat[i].(string)
				it := p.item(l, mem, nil, flat[i+1])
				if it.Block != nil && len(it.Block) < len(mem) && strings.HasSuffix(mem, string(it.Block)) {
					it.Key = []byte(mem[:len(mem)-len(it.Block)])
				} else if v, bk, err := split(p.lookups[l].parts, []byte(mem)); err == nil {
					it.Key, it.Block = v, bk
				} else {
					continue // no member of this lookup
				}
				switch owner, ok := flat[i+2].(string); {
				case outside(it.Key, from, to, desc):
				case beyond(it.Key, from, to, desc):
					end = true
				case !ok:
					check = append(check, len(batch))
					batch = append(batch, it)
				case owner == string(it.Block):
					batch = append(batch, it)
				}
			}
			batch, err := p.claimed(ctx, l, batch, check)
			if err != nil {
				return nil, err
			}
			out = append(out, batch...)
			if end {
				break
			}
		}
		if len(flat)/3 < want {
			break
		}
		last, _ := flat[len(flat)-3].(string)
		if desc {
			hi = "(" + last
		} else {
			lo = "(" + last
		}
	}
	return out[:min(len(out), limit)], nil
}

// lexBounds are the ZRANGEBYLEX bounds of the members of index keys in
// [from, to) (nil: unbounded). A unique lookup's member is its value
// followed by the block key, so its bounds are wider than the values'
// (outside and beyond sort its members out): its members start at the
// value from, and those of values before to end before to followed by
// 0xFF (a block key starts with a component tag, never 0xFF), which only
// a descending scan, which starts there, needs.
func lexBounds(from, to []byte, unique, desc bool) (lo, hi string) {
	lo, hi = "-", "+"
	if from != nil {
		lo = "[" + string(from)
	}
	switch {
	case to == nil:
	case !unique:
		hi = "(" + string(to)
	case desc:
		hi = "(" + string(to) + "\xff"
	}
	return lo, hi
}

// outside reports whether a unique lookup's value v, met by a scan of
// [from, to) within its wider member bounds (lexBounds), lies on the
// side the scan starts from: skipped.
func outside(v, from, to []byte, desc bool) bool {
	if desc {
		return to != nil && bytes.Compare(v, to) >= 0
	}
	return bytes.Compare(v, from) < 0
}

// beyond reports whether such a value lies past the end of the scan:
// the scan stops.
func beyond(v, from, to []byte, desc bool) bool {
	if desc {
		return bytes.Compare(v, from) < 0
	}
	return to != nil && bytes.Compare(v, to) >= 0
}

// claimed drops the items batch[i] (i in check: unique items whose meta
// does not name their block) whose value's claim is not theirs.
func (p *prims[V]) claimed(ctx context.Context, l int, batch []index.Item, check []int) ([]index.Item, error) {
	if len(check) == 0 {
		return batch, nil
	}
	values := make([]string, len(check))
	for j, i := range check {
		values[j] = string(batch[i].Key)
	}
	owners, err := p.c.HMGet(ctx, p.lookups[l].claims, values...).Result()
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	for j, i := range check {
		if o, _ := owners[j].(string); o != string(batch[i].Block) {
			drop[i] = true
		}
	}
	out := batch[:0]
	for i, it := range batch {
		if !drop[i] {
			out = append(out, it)
		}
	}
	return out, nil
}

// ReadBlocks implements index.Primitives: one pipeline of HGETALLs.
func (p *prims[V]) ReadBlocks(ctx context.Context, keys [][]byte) ([]index.Block[V], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	err := pipelines(ctx, p.c, len(keys), func(pl redis.Pipeliner, i int) {
		cmds[i] = pl.HGetAll(ctx, p.names.blockKey(keys[i]))
	}, nil)
	if err != nil {
		if unavailable(err) {
			return nil, &refused{err}
		}
		return nil, err
	}
	out := make([]index.Block[V], 0, len(keys))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		b := index.Block[V]{Key: keys[i], Stamp: stampOf(h)}
		b.Value, b.Err = p.decode(keys[i], h)
		out = append(out, b)
	}
	return out, nil
}

// FenceBlock implements index.Primitives: one script run on the block.
func (p *prims[V]) FenceBlock(ctx context.Context, key []byte, old index.Stamp, seq int64) (bool, error) {
	return p.onBlock(ctx, "fence", key, old, seq)
}

// DeleteBlock implements index.Primitives: one script run on the block.
func (p *prims[V]) DeleteBlock(ctx context.Context, key []byte, st index.Stamp) (bool, error) {
	return p.onBlock(ctx, "delblock", key, st, 0)
}

func (p *prims[V]) onBlock(ctx context.Context, op string, key []byte, st index.Stamp, seq int64) (bool, error) {
	r, err := p.run(ctx, p.w, []string{p.names.blockKey(key)}, op, strconv.FormatInt(st.Seq, 10), incText(st.Inc), pad(seq))
	if u, ok := isUnreplicated(err); ok {
		return false, &notAcked{what: "block " + op + " not replicated", u: u}
	}
	if err != nil {
		return false, err
	}
	n, _ := r[0].(int64)
	return n == 1, nil
}

// ScanBlocks implements index.Primitives: the block hashes SCAN finds
// (scanKeys), read with one pipeline per page. A position is where the
// SCAN is, so a build resumes from it in any process.
func (p *prims[V]) ScanBlocks(ctx context.Context, after []byte, limit int) ([]index.Block[V], []byte, error) {
	keys, next, err := p.scanKeys(ctx, after, limit)
	if err != nil || len(keys) == 0 {
		return nil, next, err
	}
	bs, err := p.ReadBlocks(ctx, keys) // (without the blocks deleted since the SCAN)
	return bs, next, err
}

// scanCount is the COUNT of the SCAN commands of Repair: about how many
// names one reply holds.
var scanCount = 512

// scanPos is a position of scanKeys: in the SCAN of master addr ("" on a
// single node) from cursor, past the names of its reply up to skip (nil:
// none).
type scanPos struct {
	addr   string
	cursor uint64
	skip   []byte
}

func (s scanPos) bytes() []byte {
	b := binary.AppendUvarint(nil, uint64(len(s.addr)))
	b = append(b, s.addr...)
	b = binary.AppendUvarint(b, s.cursor)
	return append(b, s.skip...)
}

func parseScanPos(b []byte) (scanPos, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return scanPos{}, fmt.Errorf("redisstore: scan position %x", b)
	}
	s := scanPos{addr: string(b[w : w+int(n)])}
	b = b[w+int(n):]
	if s.cursor, w = binary.Uvarint(b); w <= 0 {
		return scanPos{}, fmt.Errorf("redisstore: scan position %x", b)
	}
	if len(b) > w {
		s.skip = b[w:]
	}
	return s, nil
}

// scanNode is one node SCAN runs on: the client, and the master's
// address on a cluster ("" on a single node).
type scanNode struct {
	addr string
	c    redis.UniversalClient
}

// scanNodes are the nodes holding the block hashes: the masters of a
// cluster in address order, or the single node.
func (p *prims[V]) scanNodes(ctx context.Context) ([]scanNode, error) {
	cc, ok := p.c.(*redis.ClusterClient)
	if !ok {
		return []scanNode{{c: p.c}}, nil
	}
	var mu sync.Mutex
	var nodes []scanNode
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		nodes = append(nodes, scanNode{c.Options().Addr, c})
		mu.Unlock()
		return nil
	})
	slices.SortFunc(nodes, func(a, b scanNode) int { return strings.Compare(a.addr, b.addr) })
	return nodes, err
}

// scanKeys returns up to limit encoded keys of the collection's block
// hashes from position after (nil: the start), and the position after
// them (nil at the end). It holds one SCAN reply at a time (Repair's
// memory bound): a reply's names are sorted, so that a position inside a
// reply is its cursor and the last name taken, and the rest of the reply
// is kept for the next call from there (or read again by another process
// resuming a build). A node gone since the position was taken (a cluster
// failover) restarts the scan from the first. SCAN may return a name
// twice.
func (p *prims[V]) scanKeys(ctx context.Context, after []byte, limit int) ([][]byte, []byte, error) {
	nodes, err := p.scanNodes(ctx)
	if err != nil || len(nodes) == 0 {
		return nil, nil, err
	}
	pos, i := scanPos{addr: nodes[0].addr}, 0
	if after != nil {
		at, err := parseScanPos(after)
		if err != nil {
			return nil, nil, err
		}
		if j := slices.IndexFunc(nodes, func(n scanNode) bool { return n.addr == at.addr }); j >= 0 {
			pos, i = at, j
		}
	}
	match := globEscape(p.names.coll) + ":{*}"
	var out [][]byte
	for {
		keys, cursor, err := p.scanReply(ctx, nodes[i].c, pos, match)
		if err != nil {
			return nil, nil, err
		}
		if p.held != nil {
			p.held(len(out) + len(keys))
		}
		n := min(len(keys), limit-len(out))
		out = append(out, keys[:n]...)
		if n < len(keys) {
			// The reply goes on: the next call takes the rest.
			next := scanPos{addr: pos.addr, cursor: pos.cursor, skip: out[len(out)-1]}
			p.mu.Lock()
			p.rest = scanRest{pos: string(next.bytes()), keys: keys[n:], cursor: cursor}
			p.mu.Unlock()
			return out, next.bytes(), nil
		}
		if cursor == 0 {
			if i++; i == len(nodes) {
				return out, nil, nil
			}
			pos = scanPos{addr: nodes[i].addr}
		} else {
			pos = scanPos{addr: pos.addr, cursor: cursor}
		}
		if len(out) == limit {
			return out, pos.bytes(), nil
		}
	}
}

// scanRest is the rest of the SCAN reply a call of scanKeys stopped in:
// the keys after position pos, and the reply's next cursor.
type scanRest struct {
	pos    string
	keys   [][]byte
	cursor uint64
}

// scanReply returns the encoded keys of the collection's block hashes in
// the SCAN reply from pos.cursor on node c, sorted, after pos.skip, and
// the reply's cursor.
func (p *prims[V]) scanReply(ctx context.Context, c redis.UniversalClient, pos scanPos, match string) ([][]byte, uint64, error) {
	p.mu.Lock()
	rest := p.rest
	if rest.pos == string(pos.bytes()) {
		p.rest = scanRest{}
	}
	p.mu.Unlock()
	if pos.skip != nil && rest.pos == string(pos.bytes()) {
		return rest.keys, rest.cursor, nil
	}
	if c != p.c {
		runtime.RoundTrip(ctx) // a cluster node's client, which has no hook
	}
	names, cursor, err := c.Scan(ctx, pos.cursor, match, int64(scanCount)).Result()
	if err != nil {
		return nil, 0, err
	}
	keys := make([][]byte, 0, len(names))
	for _, n := range names {
		bk, err := p.names.parse(n)
		if err != nil || p.names.blockKey(bk) != n {
			continue // another collection's key that matches the pattern
		}
		if pos.skip == nil || bytes.Compare(bk, pos.skip) > 0 {
			keys = append(keys, bk)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal), cursor, nil
}

// Ambiguous implements index.Primitives: an error without a reply (the
// network, a timeout, a cancelled context), a script run that failed
// after a first change, or a run applied but not acknowledged by enough
// replicas. A failed check, a refusal before any change, another error
// reply of Redis, or an error the adapter classified already (a
// *runtime.Error, as index.Deletes returns them) is definite.
func (p *prims[V]) Ambiguous(err error) bool {
	if _, ok := isUnreplicated(err); ok {
		return true // (a notAcked, although a runtime.ErrUnavailable)
	}
	var re *runtime.Error
	if err == nil || isFailure(err) || errors.Is(err, runtime.ErrUnavailable) || errors.As(err, &re) {
		return false
	}
	var se *scriptError
	if errors.As(err, &se) {
		return se.wrote
	}
	var rerr redis.Error
	return !errors.As(err, &rerr)
}
