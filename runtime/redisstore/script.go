package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/internal/token"
)

// Every write is one run of this script (EVALSHA, loaded once per server
// by go-redis's Script.Run): a list of checks, then a list of changes. It
// runs the checks first and changes nothing unless all of them pass, so a
// run is atomic on the node that runs it. On a single node one run holds
// a whole write (block, listing, index tables); on a cluster a run only
// names keys of one hash slot, and a write is several runs in the order of
// the lookup protocol (see lookups.go).
//
// ARGV[1] packs the arguments (each as its length in decimal, ':', its
// bytes; one argument instead of many saves the client an allocation per
// argument): the number of checks, the number of changes, then the
// operations, each its name followed by its arguments (a fixed number per
// name, see arity). Key arguments are 1-based indexes into KEYS.
//
// Redis refuses an argument longer than proto-max-bulk-len (512 MB), so a
// run whose arguments together are longer goes in several: a packed
// piece that ends with '>' goes on in the next ARGV, and a large argument
// is not packed but sent on its own after the pieces, packed as "-r:"
// (the r-th of them). Every value up to the limit thus gets through,
// whatever the others weigh; the adapter refuses a longer one before
// sending anything.
//
// Returns {"ok", result} (result: the index an append wrote, the new
// value of an add change as "high:low" (its 32-bit halves), else 0),
// {"fail", reason, detail, op number}, or {"err", message, wrote} for an
// error Redis raised inside the run (wrote: 1 if the run had changed
// something before it, else 0).
//
// A run must never leave a key half-written: every check comes before the
// first change, and no change touches a key after the run may have
// emptied it. That matters on a cluster whose slot is migrating: the node
// serves a key of the slot only while it still holds it, inside a script
// too, so a run that emptied a key (DEL, the last HDEL or ZREM) and wrote
// it again failed midway ("Script attempted to access a non local key")
// with the DEL applied. A whole-block write therefore writes the new
// fields first and then removes the stale ones (prune); reads and
// removals of a key the run may have emptied see it as missing.
const vmSource = `
local arity = {once=2, mark=2, fence=2, exists=1, absent=1, seq=2, ver=3, lay=3, elem=3, claim=3, heq=3, range=6,
  del=1, hset=3, hdel=2, hincr=3, hadd=5, clear=2, append=3, zadd=2, zrem=2,
  hdelif=3, stamp=2, irem=8, iadd=8, raise=2, prune=1, pexpireat=2, persist=1}
local function key(i) return KEYS[tonumber(i)] end
-- dec increments a non-negative decimal string (numbers beyond 2^53 stay exact).
local function inc(s)
  local digits = {}
  for c in s:gmatch('%d') do digits[#digits+1] = tonumber(c) end
  local i = #digits
  while i > 0 do
    if digits[i] < 9 then digits[i] = digits[i] + 1; break end
    digits[i] = 0; i = i - 1
  end
  local out = table.concat(digits)
  if i == 0 then out = '1' .. out end
  return out
end
-- num reads a stored integer entry (a BSON type byte, then the
-- little-endian int32 or int64) as its high 32 bits (signed) and its low
-- 32 bits (unsigned), each exact in a Lua number; a missing entry is 0,
-- any other value nil.
local function num(v)
  if not v then return 0, 0 end
  local t = string.byte(v, 1)
  if t == 16 and #v == 5 then
    local x = struct.unpack('<i4', v, 2)
    if x < 0 then return -1, x + 4294967296 end
    return 0, x
  elseif t == 18 and #v == 9 then
    local lo, hi = struct.unpack('<I4i4', v, 2)
    return hi, lo
  end
  return nil
end
-- less compares decimal strings without leading zeros as numbers.
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
-- wrote: the run has changed something; emptied: keys the run deleted
-- from (maybe emptied them); written: the fields each key got from hset
-- and stamp (prune keeps them).
local wrote, emptied, written = false, {}, {}
-- call runs a read, or a removal, of key k. In a slot that is migrating
-- away Redis refuses a missing key, inside a script too ("non local key"):
-- a key this run emptied itself then reads as missing, and removals from
-- it do nothing, instead of failing the run midway.
local function call(cmd, k, ...)
  if emptied[k] then
    local r = redis.pcall(cmd, k, ...)
    if type(r) ~= 'table' or not r.err then return r end
    if string.find(r.err, 'non local key', 1, true) then return false end
  end
  return redis.call(cmd, k, ...)
end
-- set writes key k (a run never writes a key after emptying it: new
-- fields are written first, stale ones removed after).
local function set(cmd, k, ...)
  local r = redis.call(cmd, k, ...)
  wrote = true
  return r
end
local function note(k, f)
  written[k] = written[k] or {}
  written[k][f] = true
end
-- remove removes from key k.
local function remove(cmd, k, ...)
  local r = call(cmd, k, ...)
  wrote, emptied[k] = true, true
  return r
end
local function body()
local A, refs, piece, packed, pos = {}, {}, 1, ARGV[1], 1
while pos <= #packed do
  if string.byte(packed, pos) == 62 then
    -- '>': the packed arguments go on in the next ARGV.
    piece = piece + 1; packed = ARGV[piece]; pos = 1
  else
    local c = string.find(packed, ':', pos, true)
    local n = tonumber(string.sub(packed, pos, c - 1))
    if n < 0 then
      -- an argument sent on its own, after the pieces.
      A[#A + 1] = false; refs[#A] = -n
      pos = c + 1
    else
      A[#A + 1] = string.sub(packed, c + 1, c + n)
      pos = c + n + 1
    end
  end
end
for i, r in pairs(refs) do A[i] = ARGV[piece + r] end
local nchecks, nchanges = tonumber(A[1]), tonumber(A[2])
local ops, p = {}, 3
for n = 1, nchecks + nchanges do
  local name = A[p]
  local a = {}
  for j = 1, arity[name] do a[j] = A[p + j] end
  ops[n] = {name, a}
  p = p + 1 + arity[name]
end
for n = 1, nchecks do
  local name, a = ops[n][1], ops[n][2]
  if name == 'once' then
    -- a resend of a run already applied (go-redis resends a command
    -- after a connection error or a read timeout): answer as the first
    -- run did, change nothing.
    local w = redis.call('HGET', key(a[1]), '_w')
    if w then
      local tok, res = w:match('^(%S+) (%S+)$')
      if tok == a[2] then return {'ok', tonumber(res) or res, {}} end
    end
  elseif name == 'fence' then
    -- the collection's layout fence is the one the write expects.
    local f = redis.call('GET', key(a[1])) or '0'
    if f ~= a[2] then return {'fail', 'fence', f, n} end
  elseif name == 'exists' then
    if redis.call('EXISTS', key(a[1])) == 0 then return {'fail', 'missing', '', n} end
  elseif name == 'absent' then
    if redis.call('EXISTS', key(a[1])) == 1 then return {'fail', 'exists', '', n} end
  elseif name == 'seq' then
    local s = redis.call('HGET', key(a[1]), '_seq')
    if (s or '') ~= a[2] then return {'fail', 'changed', s or '', n} end
  elseif name == 'ver' then
    local v = redis.call('HGET', key(a[1]), a[2])
    if a[3] == '0' then
      -- version 0: no block, or a block without a version (written
      -- before the model had one) or at version 0 (migrated so).
      if v and v ~= '0' then return {'fail', 'conflict', v, n} end
    else
      if redis.call('EXISTS', key(a[1])) == 0 then return {'fail', 'conflict', 'none', n} end
      if (v or '0') ~= a[3] then return {'fail', 'conflict', v or '0', n} end
    end
  elseif name == 'lay' then
    -- the block is laid out as the write has it: a[2] '1' (EAO: the root
    -- entry is there) or '0' (ETF: it is not); a[3] lists 'p'..key..'\0'
    -- (a partition: its field is its element count, a decimal; under EAO
    -- an absent count may be inside the root entry) and 'w'..key..'\0'
    -- (a slice field kept whole: no count). Counts are short: a longer
    -- value is not read to tell.
    local root = redis.call('HEXISTS', key(a[1]), '') == 1
    if root ~= (a[2] == '1') then return {'fail', 'layout', root and 'eao' or 'etf', n} end
    for kind, f in string.gmatch(a[3], '(.)(%Z*)%z') do
      local len = redis.call('HSTRLEN', key(a[1]), f)
      local count = len > 0 and len <= 20 and string.find(redis.call('HGET', key(a[1]), f), '^%d')
      if kind == 'p' then
        if (len > 0 and not count) or (len == 0 and root) then return {'fail', 'layout', f .. ' whole', n} end
      elseif len > 0 and (root or count) then
        return {'fail', 'layout', f .. ' partitioned', n}
      end
    end
  elseif name == 'elem' then
    local c = redis.call('HGET', key(a[1]), a[2]) or '0'
    if not less(a[3], c) then return {'fail', 'noelem', c, n} end
  elseif name == 'claim' then
    local v = redis.call('HGET', key(a[1]), a[2])
    if v and v ~= a[3] then return {'fail', 'taken', v, n} end
  elseif name == 'heq' then
    local v = redis.call('HGET', key(a[1]), a[2])
    if (v or '') ~= a[3] then return {'fail', 'changed', v or '', n} end
  elseif name == 'range' then
    -- an add change: the stored integer (none: 0) lies in [lo, hi],
    -- given as their high and low halves (a[3], a[4]; a[5], a[6]).
    local h, l = num(redis.call('HGET', key(a[1]), a[2]))
    if not h then return {'fail', 'notnum', a[2], n} end
    local lh, ll, hh, hl = tonumber(a[3]), tonumber(a[4]), tonumber(a[5]), tonumber(a[6])
    if h < lh or (h == lh and l < ll) or h > hh or (h == hh and l > hl) then return {'fail', 'range', a[2], n} end
  end
end
local result, expiry = 0, {}
for n = nchecks + 1, nchecks + nchanges do
  local name, a = ops[n][1], ops[n][2]
  local k = key(a[1])
  if name == 'del' then
    remove('DEL', k)
  elseif name == 'hset' then
    set('HSET', k, a[2], a[3])
    note(k, a[2])
  elseif name == 'hdel' then
    remove('HDEL', k, a[2])
  elseif name == 'hincr' then
    set('HINCRBY', k, a[2], a[3])
  elseif name == 'hadd' then
    -- an add change (its range checked): field a[2] gets the delta whose
    -- halves are a[3], a[4], stored as a BSON int32 (a[5] '4'), int64
    -- ('8') or the smaller that holds it ('min', as Go's int encodes);
    -- the result is the new value's halves, 'high:low'.
    local h, l = num(call('HGET', k, a[2]))
    h, l = h + tonumber(a[3]), l + tonumber(a[4])
    if l >= 4294967296 then h, l = h + 1, l - 4294967296 end
    local small = (h == 0 and l < 2147483648) or (h == -1 and l >= 2147483648)
    local v
    if a[5] == '4' or (a[5] == 'min' and small) then
      v = string.char(16) .. struct.pack('<i4', h * 4294967296 + l)
    else
      v = string.char(18) .. struct.pack('<I4i4', l, h)
    end
    set('HSET', k, a[2], v)
    note(k, a[2])
    result = string.format('%d:%d', h, l)
  elseif name == 'clear' then
    -- (the block keeps its other fields and _seq: never emptied)
    local c = tonumber(call('HGET', k, a[2]) or '0')
    for i = 0, c - 1 do remove('HDEL', k, a[2] .. '[' .. i .. ']') end
    remove('HDEL', k, a[2])
  elseif name == 'append' then
    local c = set('HINCRBY', k, a[2], 1)
    set('HSET', k, a[2] .. '[' .. (c - 1) .. ']', a[3])
    result = c - 1
  elseif name == 'prune' then
    -- removes the fields of k this run did not write (after writing the
    -- new ones: a whole-block write never empties the block).
    local keep, stale = written[k] or {}, {}
    for _, f in ipairs(call('HKEYS', k) or {}) do
      if not keep[f] then stale[#stale + 1] = f end
    end
    for i = 1, #stale, 1000 do remove('HDEL', k, unpack(stale, i, math.min(i + 999, #stale))) end
  elseif name == 'zadd' then
    set('ZADD', k, 0, a[2])
  elseif name == 'zrem' then
    remove('ZREM', k, a[2])
  elseif name == 'hdelif' then
    if call('HGET', k, a[2]) == a[3] then remove('HDEL', k, a[2]) end
  elseif name == 'stamp' then
    -- the write sequence: the given one, or one above the stored one.
    local s = call('HGET', k, '_seq') or ''
    if less(s, a[2]) then s = a[2] else s = inc(s) end
    set('HSET', k, '_seq', s)
    note(k, '_seq')
  elseif name == 'irem' then
    -- index table zset, meta hash, claim hash (0: none), member, claim
    -- field, owner, incarnation, sequence: remove the entry if the meta
    -- says it is of that incarnation, written before that sequence (or,
    -- with sequence prefixed by '=', exactly at it).
    local m = call('HGET', key(a[2]), a[4])
    local ok = false
    if m then
      local mi, ms = m:match('^(%S*) (%S+)')
      if mi == '0' then mi = '' end -- (Repair writes a missing incarnation as 0)
      if mi == a[7] then
        if a[8]:sub(1, 1) == '=' then ok = (ms == a[8]:sub(2)) else ok = less(ms, a[8]) end
      end
    end
    if ok then
      remove('ZREM', k, a[4])
      remove('HDEL', key(a[2]), a[4])
      if a[3] ~= '0' and call('HGET', key(a[3]), a[5]) == a[6] then
        remove('HDEL', key(a[3]), a[5])
      end
    end
  elseif name == 'iadd' then
    -- index table zset, meta hash, claim hash (0: none), member, claim
    -- field, owner, incarnation, sequence: add the entry; its meta gets
    -- this write's incarnation and the larger sequence.
    set('ZADD', k, 0, a[4])
    local m = call('HGET', key(a[2]), a[4])
    local s = a[8]
    if m then
      local mi, ms = m:match('^(%S*) (%S+)')
      if mi == a[7] and ms and less(s, ms) then s = ms end
    end
    set('HSET', key(a[2]), a[4], a[7] .. ' ' .. s)
    if a[3] ~= '0' then set('HSET', key(a[3]), a[5], a[6]) end
  elseif name == 'raise' then
    local c = call('GET', k) or '0'
    if c:sub(1, 1) == '-' or less(c, a[2]) then set('SET', k, a[2]) end
  elseif name == 'pexpireat' or name == 'persist' then
    -- the key's native expiry (a[2]: Unix milliseconds), or none: set
    -- after every other change of the run, because a time already past
    -- deletes the key at once, and a change after it (a field, a stamp,
    -- the run's mark) would make a new key of its stray fields.
    expiry[#expiry + 1] = {name, k, a[2]}
  elseif name == 'mark' then
    -- the run's token and result, for once.
    set('HSET', k, '_w', a[2] .. ' ' .. result)
  end
end
for _, e in ipairs(expiry) do
  if e[1] == 'persist' then set('PERSIST', e[2]) else set('PEXPIREAT', e[2], e[3]) end
end
return {'ok', result}
end
-- An error inside the run (a key of a slot that moved, the cluster down, a
-- key of another type) is caught, so that the reply says whether the run
-- had changed anything before it.
local ok, res = pcall(body)
if ok then return res end
if type(res) == 'table' then res = res.err end
return {'err', tostring(res), wrote and 1 or 0}
`

var vm = redis.NewScript(vmSource)

// prog is one run of the script under construction.
type prog struct {
	keys    []string
	checks  []string
	nchecks int
	changes []string
	nchange int
	// notes say what each check is about, for errors.
	notes []string
	// once is the KEYS index of the block the run writes, when a resend
	// of the run must not apply it twice ("" for none: a run that deletes
	// the block, or changes no block): the run then checks and records a
	// token of its own in the block's hidden field _w.
	once string
	// Room for a small run's lists, so that building one allocates once.
	keysBuf    [4]string
	checksBuf  [8]string
	changesBuf [24]string
	notesBuf   [4]string
}

// k returns the KEYS index of key name, adding it.
func (p *prog) k(name string) string {
	// A run names a handful of keys: a scan beats a map.
	for i, k := range p.keys {
		if k == name {
			return keyIndex(i + 1)
		}
	}
	if p.keys == nil {
		p.keys = p.keysBuf[:0]
	}
	p.keys = append(p.keys, name)
	return keyIndex(len(p.keys))
}

// keyIndexes are the KEYS indexes as the script reads them, "1" to "64",
// made once.
var keyIndexes = func() []string {
	out := make([]string, 65)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func keyIndex(i int) string {
	if i < len(keyIndexes) {
		return keyIndexes[i]
	}
	return strconv.Itoa(i)
}

// check adds a check: op and its arguments, keys already as indexes;
// note says what it is about (for errors).
func (p *prog) check(note, op string, args ...string) {
	if p.checks == nil {
		p.checks, p.notes = p.checksBuf[:0], p.notesBuf[:0]
	}
	p.checks = append(append(p.checks, op), args...)
	p.nchecks++
	p.notes = append(p.notes, note)
}

// change adds a change.
func (p *prog) change(op string, args ...string) {
	if p.changes == nil {
		p.changes = p.changesBuf[:0]
	}
	p.changes = append(append(p.changes, op), args...)
	p.nchange++
}

// merge appends q's checks and changes to p's.
func (p *prog) merge(q *prog) {
	remap := func(ops []string) []string {
		out := make([]string, 0, len(ops))
		for i := 0; i < len(ops); {
			name := ops[i]
			n := arity[name]
			out = append(out, name)
			for j, a := range ops[i+1 : i+1+n] {
				if keyArg(name, j) && a != "0" {
					a = p.k(q.keys[mustAtoi(a)-1])
				}
				out = append(out, a)
			}
			i += 1 + n
		}
		return out
	}
	p.checks = append(p.checks, remap(q.checks)...)
	p.nchecks += q.nchecks
	p.notes = append(p.notes, q.notes...)
	p.changes = append(p.changes, remap(q.changes)...)
	p.nchange += q.nchange
	if q.once != "" {
		p.once = p.k(q.keys[mustAtoi(q.once)-1])
	}
}

func (p *prog) empty() bool { return p.nchecks+p.nchange == 0 }

// arity mirrors the script's table.
var arity = map[string]int{"once": 2, "mark": 2, "exists": 1, "absent": 1, "seq": 2, "ver": 3, "lay": 3, "elem": 3, "claim": 3, "heq": 3, "range": 6,
	"del": 1, "hset": 3, "hdel": 2, "hincr": 3, "hadd": 5, "clear": 2, "append": 3, "zadd": 2, "zrem": 2,
	"hdelif": 3, "stamp": 2, "irem": 8, "iadd": 8, "raise": 2, "prune": 1, "pexpireat": 2, "persist": 1}

// keyArg reports whether argument j of op is a key index.
func keyArg(op string, j int) bool {
	if op == "irem" || op == "iadd" {
		return j < 3
	}
	return j == 0
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("redisstore: bad key index " + s)
	}
	return n
}

// failure is a check that did not pass.
type failure struct {
	reason, detail string
	op             int // 1-based check number
	note           string
}

func (f *failure) Error() string {
	if f.reason == "toolarge" {
		return f.detail
	}
	return "check " + f.reason + " failed: " + f.detail
}

// Unwrap makes a run refused before sending (reason "toolarge") a
// runtime.ErrTooLarge.
func (f *failure) Unwrap() error {
	if f.reason == "toolarge" {
		return runtime.ErrTooLarge
	}
	return nil
}

// run runs p: it returns the script's result (an append's index); a
// failed check is returned as *failure.
func (p *prog) run(ctx context.Context, c redis.UniversalClient) (int64, error) {
	if p.empty() {
		return 0, nil
	}
	bp := packPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			packPool.Put(bp)
		}
	}()
	args, notes, err := p.pack(bp)
	if err != nil {
		return 0, err
	}
	return runOnce(ctx, c, p.keys, args, notes)
}

// pack packs the run of p (not empty) into *bp: the script's arguments,
// which refer to *bp, and the notes of its checks.
func (p *prog) pack(bp *[]byte) ([]any, []string, error) {
	b := (*bp)[:0]
	notes := p.notes
	var tok string
	if p.once != "" {
		tok = token.New()
		b = packInt(b, p.nchecks+1)
		b = packInt(b, p.nchange+1)
		b = pack(pack(pack(b, "once"), p.once), tok)
		notes = append([]string{""}, notes...)
		b = packAll(packAll(b, p.checks), p.changes)
		b = pack(pack(pack(b, "mark"), p.once), tok)
	} else {
		b = packInt(b, p.nchecks)
		b = packInt(b, p.nchange)
		b = packAll(packAll(b, p.checks), p.changes)
	}
	*bp = b
	// Redis refuses an argument over proto-max-bulk-len: a longer run
	// goes in several (see vmSource).
	args := []any{b}
	if len(b) > maxBulk {
		var err error
		if args, err = p.split(tok); err != nil {
			return nil, nil, err
		}
	}
	return args, notes, nil
}

// runScript runs script sc on c, running it again after a pause while the
// cluster refuses it before any change (a slot moving, a cluster without a
// master for it, after go-redis's own redirects), if the context allows.
func runScript(ctx context.Context, c redis.UniversalClient, sc *redis.Script, keys []string, args []any) ([]any, error) {
	for attempt := 0; ; attempt++ {
		res, err := evalRun(ctx, c, sc, keys, args)
		refused := unavailable(err)
		if err == nil && len(res) > 2 && res[0] == "err" {
			// An error the script caught: refused if it met a key served
			// elsewhere (or the cluster down) before its first change.
			e := &scriptError{}
			e.msg, _ = res[1].(string)
			w, _ := res[2].(int64)
			e.wrote = w == 1
			refused = unavailable(e)
		}
		if !refused || attempt >= len(runRetryBackoff) {
			return res, err
		}
		t := time.NewTimer(runRetryBackoff[attempt])
		select {
		case <-ctx.Done():
			t.Stop()
			return res, err
		case <-t.C:
		}
	}
}

// runRetryBackoff are the pauses before the runs a script run refused
// before any change gets again (after go-redis's own retries).
var runRetryBackoff = []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}

// runOnce runs the packed script once and reads its reply.
func runOnce(ctx context.Context, c redis.UniversalClient, keys []string, args []any, notes []string) (int64, error) {
	res, err := runScript(ctx, c, vm, keys, args)
	return reply(res, err, notes)
}

// reply reads the reply res (or error err) of a run whose checks have the
// given notes.
func reply(res []any, err error, notes []string) (int64, error) {
	// short: the run passed its checks and changed its keys, but fewer
	// replicas than Options.WaitReplicas acknowledged it (wait.go).
	var short error
	if _, ok := isUnreplicated(err); ok {
		short, err = err, nil
	}
	if err != nil {
		return 0, err
	}
	if len(res) < 2 {
		return 0, fmt.Errorf("redisstore: unexpected script reply %v", res)
	}
	switch res[0] {
	case "ok":
		n, _ := res[1].(int64)
		if s, ok := res[1].(string); ok {
			n = halves(s)
		}
		return n, short
	case "err":
		e := &scriptError{}
		e.msg, _ = res[1].(string)
		if len(res) > 2 {
			w, _ := res[2].(int64)
			e.wrote = w == 1
		}
		return 0, e
	}
	f := &failure{}
	f.reason, _ = res[1].(string)
	if len(res) > 2 {
		f.detail, _ = res[2].(string)
	}
	if len(res) > 3 {
		n, _ := res[3].(int64)
		f.op = int(n)
	}
	if f.op >= 1 && f.op <= len(notes) {
		f.note = notes[f.op-1]
	}
	return 0, f
}

// halves reads the new value of an add change as the script returns it,
// "high:low": its high 32 bits (signed) and low 32 bits, in decimal.
func halves(s string) int64 {
	hi, lo, _ := strings.Cut(s, ":")
	h, _ := strconv.ParseInt(hi, 10, 64)
	l, _ := strconv.ParseUint(lo, 10, 64)
	return h<<32 | int64(l)
}

// split64 is n as the script's halves: its high 32 bits (signed) and its
// low 32 bits, in decimal.
func split64(n int64) (hi, lo string) {
	return strconv.FormatInt(n>>32, 10), strconv.FormatUint(uint64(n)&0xffffffff, 10)
}

// scriptError is an error Redis raised inside a run, which the script
// caught: wrote says whether the run had changed something before it.
type scriptError struct {
	msg   string
	wrote bool
}

func (e *scriptError) Error() string {
	if e.wrote {
		return e.msg + " (the script run had changed keys before this error)"
	}
	return e.msg + " (the script run changed nothing)"
}

// unavailable reports whether err is a refusal of a cluster that provably
// changed nothing: a redirect or an unstable slot the client's retries
// did not get past (ASK, MOVED, TRYAGAIN, CLUSTERDOWN: Redis answers them
// before running the command), or a script run that met a key served
// elsewhere, or a cluster down, before its first change.
func unavailable(err error) bool {
	var se *scriptError
	if errors.As(err, &se) {
		return !se.wrote && (strings.Contains(se.msg, "non local key") || strings.Contains(se.msg, "cluster is down") || refusal(se.msg))
	}
	var re redis.Error
	return errors.As(err, &re) && refusal(re.Error())
}

// refusal reports whether a Redis error reply is a cluster's refusal to
// run a command here now.
func refusal(msg string) bool { return refusalKind(msg) != "" }

// refusalKind is the kind of a cluster's refusal to run a command here now
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN: Redis answers them before running
// the command), or "" for any other reply.
func refusalKind(msg string) string {
	msg = strings.TrimPrefix(msg, "ERR ") // as go-redis's HasErrorPrefix
	for _, p := range []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"} {
		if msg == p || strings.HasPrefix(msg, p+" ") {
			return p
		}
	}
	return ""
}

// split packs the arguments of p (with the token tok of a run with once)
// as run does, but into several ARGVs of at most maxBulk bytes each
// (see vmSource): arguments of at least maxBulk/4 bytes are sent on their
// own, the others packed into pieces. An argument over maxBulk, which
// the adapter's checks keep from getting here, fails as too large.
func (p *prog) split(tok string) ([]any, error) {
	var pieces, raw []any
	var b []byte
	add := func(s string) error {
		if len(s) > maxBulk {
			return &failure{reason: "toolarge", detail: fmt.Sprintf("an argument of %d bytes, over Redis's %d-byte limit (proto-max-bulk-len)", len(s), maxBulk)}
		}
		entry := len(s) + 21 // the length, ':' and the bytes
		if len(s) >= maxBulk/4 {
			raw = append(raw, s)
			entry = 21
		}
		if len(b)+entry+1 > maxBulk { // room for the '>'
			pieces = append(pieces, append(b, '>'))
			b = nil
		}
		if len(s) >= maxBulk/4 {
			b = strconv.AppendInt(b, -int64(len(raw)), 10)
			b = append(b, ':')
			return nil
		}
		b = pack(b, s)
		return nil
	}
	var args []string
	if p.once != "" {
		args = append(args, strconv.Itoa(p.nchecks+1), strconv.Itoa(p.nchange+1), "once", p.once, tok)
	} else {
		args = append(args, strconv.Itoa(p.nchecks), strconv.Itoa(p.nchange))
	}
	args = append(append(args, p.checks...), p.changes...)
	if p.once != "" {
		args = append(args, "mark", p.once, tok)
	}
	for _, a := range args {
		if err := add(a); err != nil {
			return nil, err
		}
	}
	pieces = append(pieces, b)
	return append(pieces, raw...), nil
}

// packPool holds the buffers run packs a run's arguments into.
var packPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// pack appends argument s to b as the script reads it: its length in
// decimal, ':', its bytes.
func pack(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// packInt appends n in decimal as pack appends its decimal string.
func packInt(b []byte, n int) []byte {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], int64(n), 10)
	b = strconv.AppendInt(b, int64(len(digits)), 10)
	b = append(b, ':')
	return append(b, digits...)
}

func packAll(b []byte, args []string) []byte {
	for _, a := range args {
		b = pack(b, a)
	}
	return b
}

// failed returns the failure of err with the given reason, if it is one.
func failed(err error, reason string) (*failure, bool) {
	var f *failure
	if errors.As(err, &f) && f.reason == reason {
		return f, true
	}
	return nil, false
}

// pad renders a sequence as a fixed-width decimal, so that the script
// compares sequences as strings.
func pad(n int64) string { return fmt.Sprintf("%020d", n) }

// parseSeq reads a stored sequence ("" is 0).
func parseSeq(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(s, "0"), 10, 64)
	return n
}
