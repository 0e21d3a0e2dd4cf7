package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Schema and layout evolution (runtime/evolve.go, README "Changing a
// model") on Redis.
//
// The schema record of a collection is the string
// "noam:schema:{<collection>}": a hash tag of its own, so that it lives on
// one slot of a cluster like any key, and a name no block, listing, index
// or counter of the collection has (those start with the collection's
// name or "{<collection>."). SaveSchema sets it with a small script that
// compares the stored record first.
//
// A block is one hash whatever its layout (redisstore.go), so a block
// written by an earlier version of the model is told apart by its fields:
// the root entry "" (EAO) or one field per top-level field (ETF); a
// partition's field holds its element count, a decimal, where a whole
// field holds a value of the value codec, which starts with a BSON type
// byte, never a digit. Reads decode every such block into the
// descriptor's fields (decodeAcross); Create and Put write the block whole
// in the descriptor's layout and remove every other field (replace); an
// entry-level write checks in its script that the fields it writes are
// laid out as the descriptor says (the "lay" check of script.go) and, if
// not, is made again as a whole-block write of the block as read, with the
// changes applied, on condition that it is unchanged (convert).

// SchemaKey is the name of the string holding the schema record of
// collection coll.
func SchemaKey(coll string) string { return "noam:schema:{" + coll + "}" }

// FenceKey is the name of the string holding the layout fence of
// collection coll (runtime/fence.go), a decimal: set with the schema
// record, in the same run (the same hash tag), and checked by every write
// run on a single node.
func FenceKey(coll string) string { return "noam:fence:{" + coll + "}" }

// schemaSource sets KEYS[1] to ARGV[3] and KEYS[2] (the fence) to ARGV[4]
// if KEYS[1] holds ARGV[2] (or, when ARGV[1] is empty, if it does not
// exist): 1 if it did, 0 if not.
const schemaSource = `
local v = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if v then return 0 end
elseif v ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], ARGV[4])
return 1
`

var schemaScript = redis.NewScript(schemaSource)

// LoadSchema reads the collection's schema record (GET), nil when there
// is none.
func (s *Store[T, K]) LoadSchema(ctx context.Context) ([]byte, error) {
	v, err := s.c.Get(ctx, SchemaKey(s.coll)).Bytes()
	if isNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("LoadSchema", nil, nil, err)
	}
	return v, nil
}

// SaveSchema stores rec as the collection's schema record if the stored
// one is still old (nil: none), in one script run; else it fails with
// runtime.ErrConflict.
func (s *Store[T, K]) SaveSchema(ctx context.Context, old, rec []byte) error {
	const op = "SaveSchema"
	given := ""
	if old != nil {
		given = "1"
	}
	fence := strconv.FormatInt(runtime.RecordFence(rec), 10)
	n, err := schemaScript.Run(ctx, s.w, []string{SchemaKey(s.coll), FenceKey(s.coll)}, given, old, rec, fence).Int()
	if _, ok := isUnreplicated(err); ok {
		// Set on the master, not acknowledged by the replicas asked for.
		return s.failAt(op, nil, "(the schema record: "+err.Error()+")", runtime.ErrUnknownOutcome)
	}
	if err != nil {
		return s.fail(op, nil, nil, err)
	}
	if n != 1 {
		return s.failAt(op, nil, "(the schema record of collection "+s.coll+" changed meanwhile)", runtime.ErrConflict)
	}
	return nil
}

// FencesWrites implements runtime.LayoutFencer: on a single node every
// write run checks the fence (the "fence" check of script.go); on a
// cluster the fence is on another slot than the blocks, and the
// repository holds a lease on the record instead.
func (s *Store[T, K]) FencesWrites() bool { return !s.cluster }

// DropLookup removes the keys of lookup l, which the repository no longer
// has: its index sorted set, its meta hash and its claims hash (one
// UNLINK: they share a hash tag). Keys that are gone already are no error.
func (s *Store[T, K]) DropLookup(ctx context.Context, l runtime.LookupLayout) error {
	tag := "{" + s.coll + "." + l.Name + "}"
	if err := s.w.Unlink(ctx, tag, tag+":meta", tag+":claims").Err(); err != nil {
		if _, ok := isUnreplicated(err); !ok {
			return s.fail("DropLookup", nil, nil, err)
		}
	}
	return nil
}

// ---- layouts

// evolution is what the adapter derives once from the descriptor to tell
// layouts apart.
type evolution struct {
	// spec and eao are the arguments of the layout check of the
	// entry-level writes (lay in script.go): every partition ("p" and
	// its key, "\x00") and slice field ("w"), and "1" under EAO.
	spec, eao string
}

func newEvolution[T any, K comparable](d *runtime.Desc[T, K]) evolution {
	e := evolution{eao: "0"}
	if d.EAO {
		e.eao = "1"
	}
	for _, f := range d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			e.spec += "p" + f.Key + "\x00"
		case f.Slice():
			// (an earlier layout may have partitioned it)
			e.spec += "w" + f.Key + "\x00"
		}
	}
	return e
}

// guard adds to p the check that block b is laid out as the descriptor
// says (see lay in script.go), as far as an entry-level write can tell it
// cheaply: the root entry there under EAO and absent under ETF, the
// partitions counted, the slice fields whole. A write that fails it is
// made again by convert, which rewrites the block whole.
func (s *Store[T, K]) guard(p *prog, b string) {
	p.check("", "lay", b, s.evo.eao, s.evo.spec)
}

// isCount reports whether a partition's field holds an element count
// (a decimal) rather than a whole value of the value codec (a BSON type
// byte first).
func isCount(v string) bool { return v != "" && v[0] >= '0' && v[0] <= '9' }

// shape is what hash h shows of the block's layout
// (runtime.Desc.LayoutDiffs): the root entry is field ""; a field holding
// a decimal is an element count (the field is partitioned), a whole value
// starts with a BSON type byte.
func (s *Store[T, K]) shape(h map[string]string) runtime.StoredShape {
	rv, root := h[""]
	return runtime.StoredShape{
		Root: root,
		Entry: func(k string) runtime.Stored {
			v, ok := h[k]
			switch {
			case !ok:
				return runtime.NoEntry
			case isCount(v):
				return runtime.EntrySplit
			}
			return runtime.EntryWhole
		},
		Member: func(k string) bool {
			doc, err := rootDoc(rv)
			return err == nil && doc.Lookup(k).Type != 0
		},
	}
}

// current reports whether hash h is a block in the descriptor's layout,
// as far as decode reads it: a block in another layout goes to
// decodeAcross.
func (s *Store[T, K]) current(h map[string]string) bool {
	return s.d.LayoutDiffs(s.shape(h)) == nil
}

// rootDoc returns the document of a root entry.
func rootDoc(v string) (bson.Raw, error) {
	if len(v) < 6 || v[0] != byte(bson.TypeEmbeddedDocument) {
		return nil, errors.New("the root entry is not a document")
	}
	doc := bson.Raw(v[1:])
	if err := doc.Validate(); err != nil {
		return nil, fmt.Errorf("the root entry: %w", err)
	}
	return doc, nil
}

// decodeAcross decodes block id from hash h written in any layout of the
// model: the root entry's members and the entries, each into the
// descriptor's field of its key, whole or partitioned as it is stored.
func (s *Store[T, K]) decodeAcross(id K, h map[string]string) (*T, error) {
	t := s.d.New(id)
	rv, root := h[""]
	var members bson.Raw
	if root {
		var err error
		if members, err = rootDoc(rv); err != nil {
			return nil, err
		}
		if s.d.EAO {
			if err := s.d.Root.Decode(t, decoder(rv)); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range s.d.Fields {
		if s.d.EAO && f.Kind != runtime.KindPartition && root {
			if _, err := members.LookupErr(f.Key); err == nil {
				continue // decoded with the root entry
			}
		}
		if v, ok := h[f.Key]; ok {
			if err := s.decodeEntry(t, f, v, h); err != nil {
				return nil, err
			}
			continue
		}
		if root {
			if m, err := members.LookupErr(f.Key); err == nil {
				if err := f.Decode(t, decoder(string(byte(m.Type))+string(m.Value))); err != nil {
					return nil, err
				}
				continue
			}
		}
		if f.Kind == runtime.KindPartition {
			f.Reset(t, 0)
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

// decodeEntry decodes field f of t from its field v in block h: a count
// (the field stored partitioned: its elements follow) or a whole value.
func (s *Store[T, K]) decodeEntry(t *T, f *runtime.Field[T], v string, h map[string]string) error {
	if !isCount(v) {
		return f.Decode(t, decoder(v))
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("entry %s: bad element count %q", f.Key, v)
	}
	elems := make([]string, n)
	for i := range n {
		e, ok := h[elemField(f.Key, i)]
		if !ok {
			return fmt.Errorf("entry %s is missing: the block is corrupt", elemField(f.Key, i))
		}
		elems[i] = e
	}
	if f.Kind == runtime.KindPartition {
		f.Reset(t, n)
		for _, e := range elems {
			if err := f.AppendDecoded(t, decoder(e)); err != nil {
				return err
			}
		}
		return nil
	}
	arr, err := arrayOf(elems)
	if err != nil {
		return fmt.Errorf("entry %s: %w", f.Key, err)
	}
	return f.Decode(t, decoder(arr))
}

// arrayOf is the value (of the value codec) of the array of the given
// elements, each a value of the value codec.
func arrayOf(elems []string) (string, error) {
	b := []byte{byte(bson.TypeArray), 0, 0, 0, 0}
	for i, e := range elems {
		if e == "" {
			return "", fmt.Errorf("element %d is empty", i)
		}
		b = append(b, e[0])
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, 0)
		b = append(b, e[1:]...)
	}
	b = append(b, 0)
	n := len(b) - 1
	b[1], b[2], b[3], b[4] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return string(b), nil
}

// elemsOf returns the elements (values of the value codec) of v, a whole
// slice value of the value codec (an array, or null for none).
func elemsOf(v string) ([]string, error) {
	if v == "" {
		return nil, errors.New("empty value")
	}
	switch bson.Type(v[0]) {
	case bson.TypeNull:
		return nil, nil
	case bson.TypeArray:
	default:
		return nil, fmt.Errorf("a value of BSON type %s, not an array", bson.Type(v[0]))
	}
	vals, err := bson.Raw(v[1:]).Values()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vals))
	for i, rv := range vals {
		out[i] = string(byte(rv.Type)) + string(rv.Value)
	}
	return out, nil
}

// ---- writes across layouts

// convert makes an entry-level write (op) of block id, found in another
// layout by the write's check, as a whole-block write: it reads the block,
// applies the write to it (apply returns what the write returns) and
// writes it whole in the descriptor's layout, removing every field of the
// old one, in one script run on condition that the block is unchanged
// since read (its _seq), with the version bumped as the entry-level
// write would have.
func (s *Store[T, K]) convert(ctx context.Context, op string, id K, ifVersion int64, apply func(*T) (int, error)) (int, error) {
	bk := s.d.Keys.Bytes(id)
	for range runtime.MaxAttempts {
		st, err := s.read(ctx, op, id)
		if err != nil {
			return 0, err
		}
		if !st.found {
			return 0, s.fail(op, id, runtime.ErrNotFound, nil)
		}
		stored := s.d.VersionOf(st.t)
		if ifVersion != 0 && s.d.Version != nil {
			if err := runtime.CheckVersion(op, s.d.Aggregate, id, true, stored, ifVersion); err != nil {
				return 0, err
			}
		}
		nw, err := s.decode(id, st.h)
		if err != nil {
			return 0, runtime.Unreadable(op, s.d.Aggregate, id, err)
		}
		res, err := apply(nw)
		if err != nil {
			return 0, err
		}
		w := &write[K]{op: op, id: id, bk: bk, inc: st.inc, seq: nextSeq(parseSeq(st.seq))}
		if len(s.d.Lookups) > 0 {
			w.before, w.after = s.values(st.t, nil), s.values(nw, nil)
		}
		if _, err := s.rewrite(ctx, w, st.seq, nw, stored+1); err != nil {
			if _, changed := failed(err, "changed"); changed {
				continue
			}
			return 0, s.checkFailed(op, id, err)
		}
		return res, nil
	}
	return 0, s.contended(op, id)
}

// rewrite writes t whole in the descriptor's layout at version version,
// in one script run on condition that the block's _seq is still seq (as
// read): write w with its lookup values set.
func (s *Store[T, K]) rewrite(ctx context.Context, w *write[K], seq string, t *T, version int64) (int64, error) {
	fields, err := s.fields(w.op, w.id, t, version)
	if err != nil {
		return 0, err
	}
	p := &prog{}
	b := p.k(s.blockKey(w.bk))
	p.once = b
	p.check("", "seq", b, seq)
	replace(p, b, fields, w)
	w.block = p
	return s.commit(ctx, w)
}

// updateAcross is Update of a block found in another layout (convert).
func (s *Store[T, K]) updateAcross(ctx context.Context, op string, id K, u runtime.Update[T]) error {
	_, err := s.convert(ctx, op, id, u.IfVersion, func(t *T) (int, error) {
		for _, c := range u.Changes {
			if err := c.Apply(t); err != nil {
				if errors.Is(err, runtime.ErrNotFound) {
					return 0, s.failAt(op, id, c.Entry(), runtime.ErrNotFound)
				}
				return 0, s.fail(op, id, nil, err)
			}
		}
		return 0, nil
	})
	return err
}

// appendAcross is Append of a block found in another layout (convert).
func (s *Store[T, K]) appendAcross(ctx context.Context, op string, id K, f *runtime.Field[T], elem any, with []runtime.Change[T]) (int, error) {
	return s.convert(ctx, op, id, 0, func(t *T) (int, error) {
		if err := f.AppendValue(t, elem); err != nil {
			return 0, s.fail(op, id, nil, err)
		}
		for _, c := range with {
			if err := c.Apply(t); err != nil {
				return 0, s.fail(op, id, nil, err)
			}
		}
		return f.Len(t) - 1, nil
	})
}

// ---- migration

// MigrateBlocks is runtime.MigrateBlocks over Redis's commands
// (migrator): one ZRANGE lists up to n blocks of the listing after the
// position, an HGETALL reads each, and each that is laid out otherwise
// than the descriptor says (runtime.Desc.LayoutDiffs) is rewritten whole
// in the descriptor's layout: one script run per block, on condition that
// it is unchanged since read (its _seq; a block changed meanwhile is read
// again), with its version and incarnation kept. On a cluster the run
// goes through the lookup protocol like any write (its lookup values do
// not change).
func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	return runtime.MigrateBlocks(ctx, s.d.Aggregate, s.d.Keys, migrator[T, K]{s}, after, n, dryRun)
}

// migrator is runtime.BlockMigrator on Redis: a block is its hash.
type migrator[T any, K comparable] struct{ s *Store[T, K] }

const migrateOp = "Migrate"

func (m migrator[T, K]) ScanBlocks(ctx context.Context, after *K, n int) ([]runtime.ScannedBlock[K, map[string]string], bool, error) {
	s := m.s
	lo := "-"
	if after != nil {
		lo = "(" + string(s.d.Keys.Bytes(*after))
	}
	ms, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.listKey(), Start: lo, Stop: "+", ByLex: true, Count: int64(n + 1)}).Result()
	if err != nil {
		return nil, false, s.fail(migrateOp, nil, nil, err)
	}
	more := len(ms) > n
	ms = ms[:min(len(ms), n)]
	blocks := make([]runtime.ScannedBlock[K, map[string]string], len(ms))
	for i, mb := range ms {
		r := runtime.NewKeyReader([]byte(mb))
		id, err := s.d.Keys.Read(r)
		if err != nil || !r.Done() {
			return nil, false, s.fail(migrateOp, nil, nil, fmt.Errorf("listing %s: member %x is no %s block key", s.listKey(), mb, s.d.Aggregate))
		}
		blocks[i].ID = id // read by ReadBlock
	}
	return blocks, more, nil
}

func (m migrator[T, K]) ReadBlock(ctx context.Context, id K, _ int) (map[string]string, bool, error) {
	h, err := m.s.c.HGetAll(ctx, m.s.BlockKey(id)).Result()
	if err != nil {
		return nil, false, m.s.fail(migrateOp, id, nil, err)
	}
	return h, len(h) > 0, nil
}

func (m migrator[T, K]) StoredLayout(id K, h map[string]string) (string, error) {
	from := runtime.DescribeDiffs(m.s.d.LayoutDiffs(m.s.shape(h)))
	if from == "" {
		return "", nil
	}
	if _, err := m.s.decodeAcross(id, h); err != nil {
		return from, runtime.Unreadable(migrateOp, m.s.d.Aggregate, id, err)
	}
	return from, nil
}

func (m migrator[T, K]) RewriteBlock(ctx context.Context, id K, h map[string]string) error {
	s := m.s
	t, err := s.decodeAcross(id, h)
	if err != nil {
		return runtime.Unreadable(migrateOp, s.d.Aggregate, id, err)
	}
	w := &write[K]{op: migrateOp, id: id, bk: s.d.Keys.Bytes(id), inc: h[incField], seq: nextSeq(parseSeq(h[seqField]))}
	if len(s.d.Lookups) > 0 {
		w.before = s.values(t, nil)
		w.after = w.before
	}
	if _, err := s.rewrite(ctx, w, h[seqField], t, s.d.VersionOf(t)); err != nil {
		if _, changed := failed(err, "changed"); changed {
			return runtime.ErrChangedSinceRead
		}
		if errors.Is(err, runtime.ErrTooLarge) || errors.Is(err, runtime.ErrInvalidValue) {
			return err
		}
		return s.checkFailed(migrateOp, id, err)
	}
	return nil
}

// ---- partitions stored whole

// rootMember reads member key of the root entry of block id (HGET), if
// the block has a root entry with that member.
func (s *Store[T, K]) rootMember(ctx context.Context, op string, id K, key string) (string, bool, error) {
	rv, err := s.c.HGet(ctx, s.BlockKey(id), "").Result()
	if isNil(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.fail(op, id, nil, err)
	}
	doc, err := rootDoc(rv)
	if err != nil {
		return "", false, runtime.Unreadable(op, s.d.Aggregate, id, err)
	}
	m, err := doc.LookupErr(key)
	if err != nil {
		return "", false, nil
	}
	return string(byte(m.Type)) + string(m.Value), true, nil
}

// readWhole is ReadElems of partition f stored whole as value v: the
// elements of the slice from index start on.
func (s *Store[T, K]) readWhole(op string, id K, f *runtime.Field[T], v string, start, n int, desc bool, fn func(int, runtime.Decoder) error) (bool, error) {
	elems, err := elemsOf(v)
	if err != nil {
		return false, runtime.Unreadable(op, s.d.Aggregate, id, fmt.Errorf("entry %s: %w", f.Key, err))
	}
	idx, more := runtime.ElemWindow(len(elems), start, n, desc)
	for _, i := range idx {
		if err := fn(i, decoder(elems[i])); err != nil {
			return false, s.fail(op, id, nil, err)
		}
	}
	return more, nil
}
