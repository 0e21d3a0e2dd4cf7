// Package redisstore is the Redis adapter of the store contract
// (runtime.Store), over a go-redis UniversalClient: the same code runs on a
// single node and on a Redis Cluster.
//
// Mapping (NoAM section 7.1, Fig. 4 and 9, the key-value mapping): one
// Redis hash per block, named by the collection and the block key in a hash
// tag ("Game:{2345}"), with one hash field per entry ("firstPlayer",
// "rounds[3]"; "" is the root entry of an EAO block). Values are the
// project's value codec (runtime/bsonval: a BSON type byte and the value's
// BSON bytes); the version and the element counts ("rounds") are decimal
// integers, so that scripts can bump them with HINCRBY. Two hidden fields
// keep the bookkeeping of the writes: _seq (the write sequence, which
// conditional writes compare) and, for aggregates with lookups, _inc (the
// block's incarnation, drawn when it is created); a third, _w, holds the
// token of the last write, so that a write go-redis resends after a lost
// reply is not applied twice.
//
// Every write is one run of one Lua script (EVALSHA, see script.go), which
// checks its conditions and then changes the block, so a block's write is
// atomic on the node that owns its slot. On a single node the same run
// also changes the block listing and the index tables: a block and its
// lookups change together. On a cluster they live on other slots, and the
// index engine's protocol (runtime/index: add first, remove after, verify
// on read) runs over the primitives of primitives.go: see lookups.go.
// Lookup reads and Repair are the engine's on both.
package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/internal/limit"
)

// MaxValueBytes is the largest value of one hash field Redis accepts
// (proto-max-bulk-len, 512 MB by default): larger entries fail with
// runtime.ErrTooLarge before anything is sent. A block has no limit of its
// own beyond its entries'. The limit is Redis's for every argument of a
// command, so it also bounds key names (a block's hash, "Game:{2345}"),
// index members (a lookup value and the block key) and claims: a write
// with a longer one fails the same way. A script run whose arguments
// together pass it sends them as several arguments (see script.go).
const MaxValueBytes = 512 << 20

// maxBulk is the limit of one argument the adapter checks: MaxValueBytes,
// lowered by tests (with the server's proto-max-bulk-len) with
// limit.Set("redisstore.bulk", n).
var maxBulk = MaxValueBytes

func init() { limit.Register("redisstore.bulk", &maxBulk) }

// tooLarge is the runtime.ErrTooLarge of an argument of n bytes; what
// names it ("entry rounds[3]", "block key").
func (s *Store[T, K]) tooLarge(op string, id any, what string, n int) error {
	return runtime.TooLarge(op, s.d.Aggregate, id, fmt.Sprintf("%s of %d bytes", what, n), fmt.Sprintf("Redis's %d-byte limit of one argument (proto-max-bulk-len)", maxBulk))
}

// nameTooLarge fails with runtime.ErrTooLarge when the name of block id's
// hash (or of its counter) is longer than Redis takes, before a write
// reads or sends anything.
func (s *Store[T, K]) nameTooLarge(op string, id K) error {
	switch k := any(id).(type) {
	case string:
		if len(s.coll)+3+10*(2*len(k)+2) <= maxBulk { // without encoding it
			return nil
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return nil
	}
	bk := s.d.Keys.Bytes(id)
	// A hash name is the collection and the block key's text, which
	// quoting makes at most 10 times as long as its encoding.
	if len(s.coll)+3+10*len(bk) <= maxBulk {
		return nil
	}
	if n := len(s.blockKey(bk)); n > maxBulk {
		return s.tooLarge(op, id, "block key (the name "+s.coll+":{...})", n)
	}
	if s.d.Counter != nil {
		scope, _ := s.d.Counter.Split(id)
		if n := len(s.counterKey(scope)); n > maxBulk {
			return s.tooLarge(op, id, "counter name", n)
		}
	}
	return nil
}

// StaleAfter is the grace period of the lookup protocol on a cluster: a
// unique claim whose holder does not hold the value is only taken over
// once it is older than this, so that a write in flight (which claims
// before it writes its block) keeps its claim.
var StaleAfter = 30 * time.Second

// Hidden hash fields.
const (
	seqField  = "_seq"
	incField  = "_inc"
	onceField = "_w" // the token and result of the last run (prog.once)
)

// Store is the Redis adapter for aggregate class T with block keys K.
type Store[T any, K comparable] struct {
	c       redis.UniversalClient // the client the commands go through (DeadlineClient)
	user    redis.UniversalClient // the client Open was given
	w       redis.UniversalClient // c, or c with Options.WaitReplicas (wait.go)
	d       *runtime.Desc[T, K]
	naming  // the names of block hashes
	cluster bool
	// eng runs the lookups (verified reads, Repair; on a cluster the
	// writes' protocol) over the primitives px.
	eng *index.Engine[*T]
	px  *prims[*T]
	// evo tells layouts apart (evolve.go).
	evo evolution
	// now is the repository's clock (runtime.WithClock), for ReadElems of
	// an expired block.
	now func() time.Time
}

var _ runtime.Store[struct{}, string] = (*Store[struct{}, string])(nil)

// Open returns the adapter of aggregate class d over client c (a
// *redis.Client, a *redis.ClusterClient, or any UniversalClient), with
// the Options c carries if it comes from WithOptions, or the last Options
// in opts, which take precedence; of the runtime's options it takes the
// clock (runtime.WithClock).
func Open[T any, K comparable](c redis.UniversalClient, d *runtime.Desc[T, K], opts ...runtime.Option) *Store[T, K] {
	var zero K
	c, o := unwrap(c)
	for _, x := range opts {
		if x, ok := x.(Options); ok {
			o = x
		}
	}
	countTrips(c)
	user := c
	if !o.StrictDeadlines {
		c = DeadlineClient(c)
	}
	_, cluster := c.(*redis.ClusterClient)
	s := &Store[T, K]{c: c, user: user, w: writer(c, o), d: d, naming: naming{coll: d.Collection, parts: componentTags(d.Keys.Bytes(zero))}, cluster: cluster, evo: newEvolution(d), now: runtime.NowFunc(opts)}
	s.px = &prims[*T]{c: s.c, w: s.w, names: s.naming, decode: func(bk []byte, h map[string]string) (*T, error) {
		r := runtime.NewKeyReader(bk)
		id, err := d.Keys.Read(r)
		if err != nil || !r.Done() {
			return nil, fmt.Errorf("hash %s holds no %s block key", s.blockKey(bk), d.Aggregate)
		}
		return s.decode(id, h)
	}}
	s.eng = &index.Engine[*T]{Agg: d.Aggregate, P: s.px, ID: s.id, StaleAfter: func() time.Duration { return StaleAfter }, Atomic: !cluster}
	if !cluster {
		s.eng.P = nodePrims[*T]{s.px}
	}
	for i, l := range d.Lookups {
		lk := s.lookupKeys(i)
		s.px.lookups = append(s.px.lookups, ixLookup{z: lk.z, meta: lk.meta, claims: lk.claims, parts: l.Parts})
		s.eng.Lookups = append(s.eng.Lookups, index.Lookup[*T]{Name: s.lookupName(i), Unique: l.Unique, Values: l.Keys})
	}
	return s
}

// id is the block key errors name for encoded key bk.
func (s *Store[T, K]) id(bk []byte) any {
	r := runtime.NewKeyReader(bk)
	if id, err := s.d.Keys.Read(r); err == nil && r.Done() {
		return id
	}
	return runtime.FormatKey(bk)
}

// Client returns the client Open was given (without the Options
// WithOptions added); the commands go through DeadlineClient of it unless
// Options.StrictDeadlines.
func (s *Store[T, K]) Client() redis.UniversalClient { return s.user }

// Cluster reports whether the client is a cluster client: the block
// listing and the index tables are then kept by the lookup protocol.
func (s *Store[T, K]) Cluster() bool { return s.cluster }

// Caps declares what Redis promises: ordered listings (sorted sets in
// lexicographic order), lookups atomic with their blocks on a single node
// only, and the limit of one argument (MaxValueBytes, as lowered by
// tests) on values, key names and index members.
func (s *Store[T, K]) Caps() runtime.Caps {
	// An index member is sent after '[' or '(' as a range bound: one
	// byte less than an argument.
	return runtime.Caps{Name: "redis", System: "redis", OrderedScan: true, AtomicLookups: !s.cluster, MaxValueBytes: maxBulk, MaxKeyBytes: maxBulk, MaxIndexKeyBytes: maxBulk - 1, MaxDepth: bsonval.MaxDepth}
}

// BlockKey is the name of the hash holding block id: "Game:{2345}".
func (s *Store[T, K]) BlockKey(id K) string { return s.blockKey(s.d.Keys.Bytes(id)) }

// ListKey is the name of the sorted set listing the blocks.
func (s *Store[T, K]) ListKey() string { return s.listKey() }

// LookupKey is the name of the sorted set of lookup name.
func (s *Store[T, K]) LookupKey(name string) string {
	for i, l := range s.d.Lookups {
		if l.Name == name {
			return s.lookupKeys(i).z
		}
	}
	return ""
}

// fail builds the error of op; a store failure that is a cluster's
// refusal before any change (unavailable) is runtime.ErrUnavailable.
func (s *Store[T, K]) fail(op string, id any, kind, cause error) error {
	if kind == nil && unavailable(cause) {
		kind = runtime.ErrUnavailable
	}
	return runtime.Fail(op, s.d.Aggregate, id, kind, cause)
}

func (s *Store[T, K]) failAt(op string, id any, detail string, kind error) error {
	return runtime.FailAt(op, s.d.Aggregate, id, detail, kind, nil)
}

// errOf wraps a store error (a failed check has been mapped before).
func (s *Store[T, K]) errOf(op string, id any, err error) error {
	if _, ok := err.(*runtime.Error); ok {
		return err
	}
	return s.fail(op, id, nil, err)
}

// ---- values

// decoder decodes one stored value.
type decoder string

func (d decoder) Decode(v any) error { return bsonval.Decode([]byte(d), v) }

// encode encodes one entry value, refusing values over MaxValueBytes.
func (s *Store[T, K]) encode(op string, id K, entry string, v any) (string, error) {
	b, err := bsonval.EncodeString(v)
	if err != nil {
		return "", runtime.FailAt(op, s.d.Aggregate, id, "encoding "+entryLabel(entry), nil, err)
	}
	if len(b) > maxBulk {
		return "", runtime.FailAt(op, s.d.Aggregate, id, fmt.Sprintf("%s (%d bytes, Redis keeps at most %d in one hash field)", entryLabel(entry), len(b), maxBulk), runtime.ErrTooLarge, nil)
	}
	return b, nil
}

func entryLabel(e string) string {
	if e == "" {
		return "the root entry"
	}
	return "entry " + e
}

func elemField(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// fields returns every entry of t as hash fields, the version at version.
func (s *Store[T, K]) fields(op string, id K, t *T, version int64) ([]string, error) {
	var out []string
	add := func(field string, v any) error {
		enc, err := s.encode(op, id, field, v)
		if err != nil {
			return err
		}
		out = append(out, field, enc)
		return nil
	}
	if s.d.EAO {
		if err := add("", s.d.Root.Value(t)); err != nil {
			return nil, err
		}
	}
	for _, f := range s.d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			n := f.Len(t)
			for i := range n {
				if err := add(elemField(f.Key, i), f.Elem(t, i)); err != nil {
					return nil, err
				}
			}
			out = append(out, f.Key, strconv.Itoa(n))
		case !s.d.EAO:
			if err := add(f.Key, f.Value(t)); err != nil {
				return nil, err
			}
		}
	}
	if s.d.Version != nil {
		out = append(out, s.d.Version.Key, strconv.FormatInt(version, 10))
	}
	return out, nil
}

// decode builds the aggregate of block id from its hash (HGETALL), or
// from some of its fields (readFor). A block written in another layout of
// the model is decoded by decodeAcross (evolve.go).
func (s *Store[T, K]) decode(id K, h map[string]string) (*T, error) {
	if !s.current(h) {
		return s.decodeAcross(id, h)
	}
	t := s.d.New(id)
	if s.d.EAO {
		if v, ok := h[""]; ok {
			if err := s.d.Root.Decode(t, decoder(v)); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range s.d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			c, ok := h[f.Key]
			if !ok {
				f.Reset(t, 0)
				continue
			}
			n, err := strconv.Atoi(c)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("entry %s: bad element count %q", f.Key, c)
			}
			f.Reset(t, n)
			for i := range n {
				v, ok := h[elemField(f.Key, i)]
				if !ok {
					return nil, fmt.Errorf("entry %s is missing: the block is corrupt", elemField(f.Key, i))
				}
				if err := f.AppendDecoded(t, decoder(v)); err != nil {
					return nil, err
				}
			}
		case !s.d.EAO:
			if v, ok := h[f.Key]; ok {
				if err := f.Decode(t, decoder(v)); err != nil {
					return nil, err
				}
			}
		}
	}
	if s.d.Version != nil {
		if v, ok := h[s.d.Version.Key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("entry %s: bad version %q", s.d.Version.Key, v)
			}
			s.d.SetVersion(t, n)
		}
	}
	return t, nil
}

// ---- write sequences and incarnations

// nextSeq is the sequence of a write over stored sequence old: above it
// and, when the clock allows, the current time in nanoseconds.
func nextSeq(old int64) int64 { return index.NextSeq(old) }

// newInc draws the incarnation of a new block, as _inc holds it.
func newInc() string { return encInc(index.NewInc()) }

// state is what a conditional write reads of a block first.
type state[T any] struct {
	found bool
	seq   string // the stored _seq, "" if none
	inc   string
	t     *T // the aggregate, nil if not found
	h     map[string]string
}

// read reads block id whole, for a write that needs its current values.
func (s *Store[T, K]) read(ctx context.Context, op string, id K) (state[T], error) {
	return s.stateOf(op, id, s.c.HGetAll(ctx, s.BlockKey(id)))
}

// stateOf is read with the reply of its HGETALL.
func (s *Store[T, K]) stateOf(op string, id K, hgetall *redis.MapStringStringCmd) (state[T], error) {
	var st state[T]
	h, err := hgetall.Result()
	if err != nil {
		return st, s.fail(op, id, nil, err)
	}
	if len(h) == 0 {
		return st, nil
	}
	st.found, st.seq, st.inc, st.h = true, h[seqField], h[incField], h
	st.t, err = s.decode(id, h)
	if err != nil {
		return st, s.fail(op, id, nil, err)
	}
	return st, nil
}

// readFor reads what an update of entries keys needs to move the entries
// of lookups ls: only those entries, the lookups' fields, the version and
// the stamps (one HMGET), unless one of them is a partition or the
// aggregate is EAO, whose entries are read whole (HGETALL). The stamp the
// write then checks makes the partial read as safe as the whole one.
func (s *Store[T, K]) readFor(ctx context.Context, op string, id K, ls []*runtime.Lookup[T], keys []string) (state[T], error) {
	if s.d.EAO {
		return s.read(ctx, op, id)
	}
	fields := []string{seqField, incField}
	if s.d.Version != nil {
		fields = append(fields, s.d.Version.Key)
	}
	need := slices.Clone(keys)
	for _, l := range ls {
		need = append(need, l.Fields...)
	}
	for _, k := range need {
		f := s.d.Field(k)
		if f == nil || f.Kind == runtime.KindPartition {
			return s.read(ctx, op, id)
		}
		if !slices.Contains(fields, k) {
			fields = append(fields, k)
		}
	}
	vals, err := s.c.HMGet(ctx, s.BlockKey(id), fields...).Result()
	if err != nil {
		return state[T]{}, s.fail(op, id, nil, err)
	}
	h := make(map[string]string, len(fields))
	for i, v := range vals {
		if v, ok := v.(string); ok {
			h[fields[i]] = v
		}
	}
	if len(h) == 0 || !s.current(h) {
		// Missing, or a block without these entries and stamps, or a
		// field stored partitioned: the whole read decides.
		return s.read(ctx, op, id)
	}
	st := state[T]{found: true, seq: h[seqField], inc: h[incField], h: h}
	if st.t, err = s.decode(id, h); err != nil {
		return st, s.fail(op, id, nil, err)
	}
	return st, nil
}

func (s *Store[T, K]) contended(op string, id K) error {
	return runtime.Contended(op, s.d.Aggregate, id, "block")
}
