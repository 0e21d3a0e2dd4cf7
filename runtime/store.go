package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// Store is the contract between generated repositories and a store
// adapter (runtime/boltstore, runtime/mongostore, ...): every semantic of a
// repository lives behind it, so that it is written and tested once per
// store (by the conformance suite in runtime/storetest) and the generated
// methods are typed one-line calls. An adapter is made for one aggregate
// class from its descriptor (Desc).
//
// Errors are *Error values of the kinds in errors.go. The contract, per
// method, is the documentation of the generated TRepository methods; in
// short:
//   - Create fails with ErrDuplicate if the block (or a unique value)
//     exists; it allocates a zero counted id, sets the version to 1.
//   - Put replaces the block whole; with a version entry, the stored
//     version must equal t's (0: no block) or it fails with ErrConflict.
//   - Update writes only the entries it names, in one atomic write, bumps
//     the version when it writes anything, checks IfVersion, and fails with
//     ErrNotFound for a missing block or element: then nothing is written.
//   - Append writes one element entry (and the count) and returns its index;
//     the changes with it (the updated timestamp) are written in the same
//     atomic write.
//   - With timestamps (Desc.Created, Desc.Updated) the repository sets
//     them on t (Create, Put) or adds the change of updated (Update,
//     Append): adapters write them as any other field, but for Put over a
//     block that exists, which keeps the block's stored created entry,
//     decided in its one atomic write, and sets t's created field to it.
//   - A failed write changes nothing.
type Store[T any, K comparable] interface {
	Get(ctx context.Context, id K) (*T, error)
	GetMany(ctx context.Context, ids []K) (map[K]*T, error)
	Create(ctx context.Context, t *T) error
	Put(ctx context.Context, t *T) error
	Delete(ctx context.Context, id K) error
	Update(ctx context.Context, op string, id K, u Update[T]) error
	Append(ctx context.Context, op string, id K, f *Field[T], elem any, with ...Change[T]) (int, error)

	// ReadElems reads up to n elements of partition f of block id from
	// index start on, calling fn with each (and its index) in index
	// order, and reports whether more follow. With desc it reads down
	// from index start (start < 0, or past the last element: from the
	// last) to index 0, and more reports whether elements below the last
	// one read follow. It fails with ErrNotFound if there is no block.
	ReadElems(ctx context.Context, op string, id K, f *Field[T], start, n int, desc bool, fn func(i int, d Decoder) error) (more bool, err error)
	// ReadBlocks reads up to n blocks in the store's listing order (block
	// key order where Caps().OrderedScan), after the position after (nil:
	// from the first), and returns the position of the last one and
	// whether more follow. Positions are the adapter's own bytes. A block
	// that cannot be decoded ends the read: the adapter returns the blocks
	// before it, the position of the unreadable block as last, more true,
	// and an *Error of kind ErrUnreadable naming it (see Unreadable), so
	// that a listing can report it and resume after it. ReadLookup and
	// ReadScope do the same. With desc the order is reversed: the blocks
	// before after (nil: from the last), in descending key order; a store
	// without OrderedScan is never asked for it.
	ReadBlocks(ctx context.Context, op string, after []byte, n int, desc bool) (items []*T, last []byte, more bool, err error)
	// ReadLookup reads up to n aggregates found by lookup l in key range
	// rng, in (value, block key) order, after position after (nil: from
	// the start of rng); with desc, in the reverse order, before after
	// (nil: from the end of rng).
	ReadLookup(ctx context.Context, op string, l *Lookup[T], rng *KeyRange, after []byte, n int, desc bool) (items []*T, last []byte, more bool, err error)
	// GetBy reads the aggregate holding value (encoded) of unique lookup l.
	GetBy(ctx context.Context, op string, l *Lookup[T], value []byte) (*T, error)
	// ReadScope reads up to n blocks of one counter scope (the scope of
	// key scope) in number order, after number after; with desc, in
	// descending number order, below number after (0: from the highest).
	ReadScope(ctx context.Context, op string, scope K, after int64, n int, desc bool) (items []*T, last int64, more bool, err error)

	Repair(ctx context.Context) (RepairReport, error)
	Ensure(ctx context.Context) error

	// Layout lists the entries the store physically holds for block id,
	// in the model's notation ("" for the EAO root entry, "rounds" for an
	// element count, "rounds[3]" for an element): the conformance suite
	// checks that it is exactly Desc.Entries of the block.
	Layout(ctx context.Context, id K) ([]string, error)

	// Caps declares what the store promises.
	Caps() Caps

	// The schema primitives (runtime/evolve.go). LoadSchema returns the
	// collection's schema record as stored, nil when there is none.
	LoadSchema(ctx context.Context) ([]byte, error)
	// SaveSchema stores rec as the collection's schema record if the
	// stored one is still old (nil: none), in one conditional write; it
	// fails with ErrConflict when it is not.
	SaveSchema(ctx context.Context, old, rec []byte) error
	// DropLookup removes what the store holds for lookup l, which the
	// repository no longer has (an index table, a native index); a
	// lookup that holds nothing is no error.
	DropLookup(ctx context.Context, l LookupLayout) error
	// MigrateBlocks reads up to n blocks in listing order after position
	// after (nil: from the first) and rewrites each that is stored in
	// another layout (ETF/EAO, a field whole/partitioned, see ErrLayout)
	// into the descriptor's, each in one atomic write conditional on the
	// block being as read; in a dry run it writes nothing. It returns
	// what it did per block, the position of the last and whether more
	// follow.
	MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) (res []BlockMigration, last []byte, more bool, err error)

	// DeleteExpired removes block id, with its lookup entries, if it has
	// expired at now (Desc.Expired: its expires entry is set and not
	// after now), in one write conditional on that (or the index
	// protocol's steps, the block write conditional on it); it reports
	// whether it removed it. A missing or live block is no error: it
	// reports false and writes nothing. Reads return expired blocks as
	// stored but for ReadElems, which fails with ErrNotFound for a block
	// expired by the clock of the store's options (NowFunc), and the
	// repository drops them (runtime/expire.go).
	DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error)
}

// Caps declares a store's capabilities, so that shared code and tests
// assume nothing of MongoDB or bbolt.
type Caps struct {
	// Name is the store's flag name ("bolt", "mongo").
	Name string
	// System is the store's name in OpenTelemetry's db.system.name
	// ("bbolt", "mongodb", "redis", "aws.dynamodb"); Name when empty.
	System string
	// OrderedScan: List and All return blocks in block-key order, and
	// List pages in descending order (PageRequest.Desc); without it a
	// descending List fails with ErrUnsupported.
	OrderedScan bool
	// AtomicLookups: a block and its index entries change in one atomic
	// write (otherwise the index-table protocol with verified reads and
	// Repair applies: see RELIABILITY.md).
	AtomicLookups bool
	// MaxValueBytes is the largest block (or entry) the store accepts, 0
	// when unbounded; larger writes fail with ErrTooLarge.
	MaxValueBytes int
	// MaxKeyBytes is the largest store key holding a block key (bbolt's
	// 32768-byte key, DynamoDB's 2048-byte partition key, Redis's 512 MB
	// key), 0 when only MaxValueBytes bounds it (MongoDB's _id lives in
	// the document). The store's key adds a few bytes to the encoded
	// block key (KeyCodec: a tag and a terminator per part; bbolt adds
	// the entry key, Redis the collection): a write whose keys pass the
	// limit fails with ErrTooLarge naming it and writes nothing, a read
	// of such a key finds nothing (ErrNotFound).
	MaxKeyBytes int
	// MaxIndexKeyBytes is the largest index key made of a lookup value
	// (encoded, followed by the block key in a non-unique lookup):
	// DynamoDB's 1024-byte sort key, bbolt's key; 0 when only
	// MaxValueBytes bounds it. Larger writes fail like MaxKeyBytes.
	MaxIndexKeyBytes int
	// MaxDepth is the deepest nesting of documents and arrays (a scalar
	// 0, a struct of scalars 1, a slice of such structs 2) of an entry's
	// value (a top-level field, an element of a partition, the EAO root)
	// that the store writes and reads back; a write of a deeper value
	// fails with ErrTooLarge before anything is sent (RELIABILITY.md,
	// "Depth and unreadable blocks").
	MaxDepth int
	// LookupForms names the form of each lookup the store keeps in an
	// index of its own rather than its index table ("gsi": a DynamoDB
	// global secondary index), by lookup name: the schema record keeps
	// it (LookupLayout.Native), so that a lookup that moves from one
	// form to the other is built anew.
	LookupForms map[string]string
}

// The two version values with a meaning of their own. Both are 0, the zero
// value, and they read differently on purpose: a Put of an aggregate whose
// version is NotStored creates it (it fails with ErrConflict if the block
// exists), while an Update whose IfVersion is AnyVersion applies whatever the
// stored version. Generated code and its comments name them.
const (
	// NotStored is the version of an aggregate that has not been stored
	// yet: Put creates the block and fails with ErrConflict if it exists.
	NotStored int64 = 0
	// AnyVersion, as TUpdate.IfVersion, makes an Update unconditional.
	AnyVersion int64 = 0
)

// Repo is what generated repositories hold: the descriptor and the store
// adapter. Its methods add what is the same on every store (argument
// checks, cursors and pages) and delegate the rest.
type Repo[T any, K comparable] struct {
	D   *Desc[T, K]
	S   Store[T, K]
	st  *schemaState
	cfg *config
}

// NewRepo returns the repository of store s for aggregate class d.
// opts are the runtime's options (WithHook, WithClock); others (a store's)
// are ignored.
func NewRepo[T any, K comparable](d *Desc[T, K], s Store[T, K], opts ...Option) Repo[T, K] {
	return Repo[T, K]{D: d, S: s, st: newSchemaState(len(d.Lookups)), cfg: newConfig(opts)}
}

func (r Repo[T, K]) fail(op string, id any, kind error, detail string) error {
	return FailAt(op, r.D.Aggregate, id, detail, kind, nil)
}

// checkKey refuses block keys that a store could not keep as given: a
// string (or a string part of a composite key) that is not valid UTF-8.
func (r Repo[T, K]) checkKey(op string, id K) error {
	switch k := any(id).(type) {
	case string:
		if !utf8.ValidString(k) {
			return CheckUTF8(op, r.D.Aggregate, id, k)
		}
		return nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return nil
	}
	return CheckKey(op, r.D.Aggregate, id, "block key", r.D.Keys.Bytes(id))
}

func (r Repo[T, K]) checkAgg(op string, t *T) error {
	if t == nil {
		return r.fail(op, nil, ErrInvalid, "(nil aggregate)")
	}
	return r.checkKey(op, *r.D.ID(t))
}

// keyLimit is the largest encoded block key the store can hold (Caps:
// MaxKeyBytes, or MaxValueBytes where the key lives in the value), 0 for
// none, and the words naming it.
func keyLimit(c Caps) (int, string) {
	if c.MaxKeyBytes > 0 {
		return c.MaxKeyBytes, fmt.Sprintf("%s's %d-byte key limit", c.Name, c.MaxKeyBytes)
	}
	return c.MaxValueBytes, fmt.Sprintf("%s's %d-byte limit of a value, which holds the key", c.Name, c.MaxValueBytes)
}

// indexLimit is keyLimit of index keys made of lookup values.
func indexLimit(c Caps) (int, string) {
	if c.MaxIndexKeyBytes > 0 {
		return c.MaxIndexKeyBytes, fmt.Sprintf("%s's %d-byte index key limit", c.Name, c.MaxIndexKeyBytes)
	}
	return keyLimit(c)
}

// keyTooLarge fails with ErrTooLarge when the encoding of id alone is
// longer than the store's keys can be: no store could hold the block, so
// a write of it is refused before anything is sent (the adapters check
// the keys they build from it: entry keys, index keys, counters).
func (r Repo[T, K]) keyTooLarge(op string, id K) error {
	limit, words := keyLimit(r.S.Caps())
	if limit <= 0 {
		return nil
	}
	switch k := any(id).(type) {
	case string:
		if 2*len(k)+2 <= limit { // the codec's longest encoding
			return nil
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return nil
	}
	if n := len(r.D.Keys.Bytes(id)); n > limit {
		return TooLarge(op, r.D.Aggregate, id, fmt.Sprintf("block key of %d bytes encoded", n), words)
	}
	return nil
}

// writeKey checks the block key of a write: valid UTF-8, not too large.
func (r Repo[T, K]) writeKey(op string, id K) error {
	if err := r.checkKey(op, id); err != nil {
		return err
	}
	return r.keyTooLarge(op, id)
}

// readKey checks the block key of a read: it fails with ErrInvalid for
// invalid UTF-8, and reports a key too large for any block (the read finds
// nothing: ErrNotFound).
func (r Repo[T, K]) readKey(op string, id K) (over bool, err error) {
	if err := r.checkKey(op, id); err != nil {
		return false, err
	}
	return r.keyTooLarge(op, id) != nil, nil
}

// get reads the block with key id.
func (r Repo[T, K]) get(ctx context.Context, id K) (*T, error) {
	if over, err := r.readKey("Get", id); err != nil || over {
		if over {
			err = FailAt("Get", r.D.Aggregate, shortID(id), "(a block key over the store's key limit)", ErrNotFound, nil)
		}
		return nil, err
	}
	t, err := r.S.Get(ctx, id)
	if err == nil && r.D.Expired(t, r.Now()) {
		return nil, r.expiredErr("Get", id, t)
	}
	return t, r.ctxErr(ctx, "Get", err)
}

// getMany reads the blocks with the given keys; keys too large for any
// block are absent from the map, as missing blocks are.
func (r Repo[T, K]) getMany(ctx context.Context, ids []K) (map[K]*T, error) {
	fit := ids
	for i, id := range ids {
		over, err := r.readKey("GetMany", id)
		if err != nil {
			return nil, err
		}
		if over {
			if len(fit) == len(ids) {
				fit = append(make([]K, 0, len(ids)), ids[:i]...)
			}
			continue
		}
		if len(fit) < len(ids) {
			fit = append(fit, id)
		}
	}
	m, err := r.S.GetMany(ctx, fit)
	if r.D.Expires != nil {
		now := r.Now()
		for k, t := range m {
			if !r.live(t, now) {
				delete(m, k)
			}
		}
	}
	return m, r.ctxErr(ctx, "GetMany", err)
}

// create stores a new block.
func (r Repo[T, K]) create(ctx context.Context, t *T) error {
	if err := r.checkAgg("Create", t); err != nil {
		return err
	}
	if err := r.newIDs("Create", t); err != nil {
		return err
	}
	if err := r.keyTooLarge("Create", *r.D.ID(t)); err != nil {
		return err
	}
	if err := r.gate(ctx, "Create", nil); err != nil {
		return err
	}
	undo := r.D.Stamp(t, r.Now(), true)
	err := r.fenced(ctx, "Create", r.knownID(t), func(ctx context.Context) error {
		return r.retryExpired(ctx, t, func() error { return r.S.Create(ctx, t) })
	})
	if err != nil {
		undo()
		return r.ctxErr(ctx, "Create", err)
	}
	return nil
}

// put creates or replaces a block whole.
func (r Repo[T, K]) put(ctx context.Context, t *T) error {
	if err := r.checkAgg("Put", t); err != nil {
		return err
	}
	if err := r.keyTooLarge("Put", *r.D.ID(t)); err != nil {
		return err
	}
	if err := r.gate(ctx, "Put", nil); err != nil {
		return err
	}
	// An expired block is absent: removed first, so that the Put creates
	// the block anew (runtime/expire.go).
	now := r.Now()
	// Created as for a new block: the store keeps the stored one of a
	// block that exists, and sets t's to it.
	undo := r.D.Stamp(t, now, true)
	err := r.fenced(ctx, "Put", r.knownID(t), func(ctx context.Context) error {
		if _, err := r.clearExpired(ctx, *r.D.ID(t), now); err != nil {
			return err
		}
		return r.retryExpired(ctx, t, func() error { return r.S.Put(ctx, t) })
	})
	if err != nil {
		undo()
		return r.ctxErr(ctx, "Put", err)
	}
	return nil
}

// del removes a block.
func (r Repo[T, K]) del(ctx context.Context, id K) error {
	if err := r.writeKey("Delete", id); err != nil {
		return err
	}
	// An expired block is absent: removed with its lookup entries, and
	// the Delete fails with ErrNotFound, as for a missing block.
	return r.ctxErr(ctx, "Delete", r.fenced(ctx, "Delete", id, func(ctx context.Context) error {
		return r.liveWrite(ctx, "Delete", id, nil, func() error { return r.S.Delete(ctx, id) })
	}))
}

// Set writes the changes of one entry-level setter (op) of block id.
func (r Repo[T, K]) Set(ctx context.Context, op string, id K, c ...Change[T]) error {
	return r.Update(ctx, op, id, Update[T]{Changes: c})
}

// update writes the changes of u to block id in one atomic write.
func (r Repo[T, K]) update(ctx context.Context, op string, id K, u Update[T]) error {
	if err := r.writeKey(op, id); err != nil {
		return err
	}
	if err := r.checkAdds(op, id, u); err != nil {
		return err
	}
	if len(r.D.LookupsOf(u.Keys()...)) > 0 {
		if err := r.gate(ctx, op, nil); err != nil {
			return err
		}
	}
	if r.D.Updated != nil && len(u.Changes) > 0 {
		// An update that writes something writes updated with it (one
		// that writes nothing only checks).
		u.Changes = append(u.Changes[:len(u.Changes):len(u.Changes)], r.touch())
	}
	return r.ctxErr(ctx, op, r.fenced(ctx, op, id, func(ctx context.Context) error {
		return r.liveWrite(ctx, op, id, u.Changes, func() error { return r.S.Update(ctx, op, id, u) })
	}))
}

// checkAdds refuses, before anything is sent, the add changes of u that no
// store could apply: to a field that is not a number (ErrInvalid), to a
// field u also sets (ErrInvalid), a second Result (ErrInvalid), or a delta
// wider than the field's range (ErrOutOfRange).
func (r Repo[T, K]) checkAdds(op string, id K, u Update[T]) error {
	results := 0
	for i, c := range u.Changes {
		if !c.Add {
			continue
		}
		if c.Field == nil || !c.Field.Number || c.Field.Kind != KindField || c.Elem || r.D.EAO {
			return r.fail(op, id, ErrInvalid, "(an add change of a field that is not a number field)")
		}
		if c.Result != nil {
			if results++; results > 1 {
				return r.fail(op, id, ErrInvalid, "(two add changes with a result)")
			}
		}
		for j, o := range u.Changes {
			if j != i && o.Field == c.Field {
				return r.fail(op, id, ErrInvalid, fmt.Sprintf("(%s is both added to and written in one update)", c.Field.Key))
			}
		}
		if _, _, ok := c.AddBounds(); !ok {
			return OutOfRange(op, r.D.Aggregate, id, c)
		}
	}
	return nil
}

// knownID is the id of t for an error, nil while a counter is still to
// allocate it.
func (r Repo[T, K]) knownID(t *T) any {
	if r.D.Counter != nil {
		if _, n := r.D.Counter.Split(*r.D.ID(t)); n == 0 {
			return nil
		}
	}
	return *r.D.ID(t)
}

// touch is the change that sets the updated timestamp to now.
func (r Repo[T, K]) touch() Change[T] { return Set(r.D.Updated, r.Now()) }

// appendElem adds elem as the last element of partition f of block id.
func (r Repo[T, K]) appendElem(ctx context.Context, op string, id K, f *Field[T], elem any) (int, error) {
	if err := r.writeKey(op, id); err != nil {
		return 0, err
	}
	if len(r.D.LookupsOf(f.Key)) > 0 {
		if err := r.gate(ctx, op, nil); err != nil {
			return 0, err
		}
	}
	var with []Change[T]
	if r.D.Updated != nil {
		with = append(with, r.touch())
	}
	var i int
	err := r.fenced(ctx, op, id, func(ctx context.Context) error {
		return r.liveWrite(ctx, op, id, nil, func() (err error) {
			i, err = r.S.Append(ctx, op, id, f, elem, with...)
			return err
		})
	})
	return i, r.ctxErr(ctx, op, err)
}

// repair rebuilds the lookups from the aggregates.
func (r Repo[T, K]) repair(ctx context.Context) (RepairReport, error) {
	rep, err := r.S.Repair(ctx)
	return rep, r.ctxErr(ctx, "Repair", err)
}

// ensure creates what the repository stores into, after dropping the
// lookups whose options changed since the recorded layout. It then
// records the repository's layout in the store and builds the lookups new
// to the collection's data (runtime/evolve.go).
func (r Repo[T, K]) ensure(ctx context.Context) error {
	if err := r.dropChanged(ctx); err != nil {
		return r.ctxErr(ctx, "EnsureIndexes", err)
	}
	if err := r.S.Ensure(ctx); err != nil {
		return r.ctxErr(ctx, "Ensure", err)
	}
	return r.ctxErr(ctx, "EnsureIndexes", r.reconcile(ctx))
}

// getBy reads the aggregate holding value (encoded) of unique lookup l. A
// value too long for the store's index keys is held by no aggregate:
// ErrNotFound.
func (r Repo[T, K]) getBy(ctx context.Context, op string, l *Lookup[T], value []byte) (*T, error) {
	if err := CheckKey(op, r.D.Aggregate, nil, "lookup "+l.Name, value); err != nil {
		return nil, err
	}
	if !l.Indexes(value) {
		return nil, FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("%s %s (a zero value, which the unique lookup does not index)", l.Name, strings.Join(KeyParts(value), ", ")), ErrNotFound, nil)
	}
	if limit, _ := indexLimit(r.S.Caps()); limit > 0 && len(value) > limit {
		return nil, FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("%s (a value of %d bytes encoded, over the store's %d-byte index key limit)", l.Name, len(value), limit), ErrNotFound, nil)
	}
	if err := r.gate(ctx, op, l); err != nil {
		return nil, err
	}
	t, err := r.S.GetBy(ctx, op, l, value)
	if err == nil && r.D.Expired(t, r.Now()) {
		return nil, r.expiredErr(op, *r.D.ID(t), t)
	}
	return t, r.ctxErr(ctx, op, err)
}

// listQuery names the query List cursors are bound to.
func (r Repo[T, K]) listQuery() string { return r.D.Aggregate + ".List" }

// list reads one page of blocks. At an unreadable block it returns the
// blocks before it, a Next cursor that resumes after it, and an error of
// kind ErrUnreadable naming it: following Next lists every readable block.
func (r Repo[T, K]) list(ctx context.Context, req PageRequest) (_ Page[*T], err error) {
	defer r.ctxErrAt(ctx, "List", &err)
	if req.Desc && !r.S.Caps().OrderedScan {
		return Page[*T]{}, FailAt("List", r.D.Aggregate, nil, fmt.Sprintf("in descending order (%s lists blocks in no key order: Caps.OrderedScan)", r.S.Caps().Name), ErrUnsupported, nil)
	}
	return paginate(r.listQuery(), req, fill(r, func(after []byte, n int) ([]*T, []byte, bool, error) {
		return r.S.ReadBlocks(ctx, "List", after, n, req.Desc)
	}), func(err error) error { return Fail("List", r.D.Aggregate, nil, nil, err) })
}

// Unreadable makes err, the failure to decode block id (an entry of it),
// an *Error of kind ErrUnreadable of operation op, naming the block; an
// error that is one already is returned as it is.
//
// Only decoding failures become ErrUnreadable: an error that already has
// a kind (a missing block is ErrNotFound) or comes from the context is
// returned as it is.
func Unreadable(op, agg string, id any, err error) error {
	var re *Error
	if errors.Is(err, ErrUnreadable) || errors.As(err, &re) && re.Kind != nil ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return FailAt(op, agg, id, "", ErrUnreadable, err)
}

// allPage is how many blocks All reads per store call.
const allPage = DefaultPageLimit

// all iterates over every block, a page of blocks per store call, so that
// no store transaction or cursor stays open while the caller's loop runs.
// An unreadable block is yielded as an error of kind ErrUnreadable naming
// it, and the iteration goes on with the next block (a loop that returns
// at the first error stops there); any other error ends it.
func (r Repo[T, K]) all(ctx context.Context) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		var after []byte
		for {
			items, last, more, err := r.S.ReadBlocks(ctx, "All", after, allPage, false)
			items = r.dropExpired(items)
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if err != nil {
				if !yield(nil, r.ctxErr(ctx, "All", err)) || !resumable(err, last) {
					return
				}
			}
			if !more {
				return
			}
			after = last
		}
	}
}

// listBy reads one page of the aggregates found by lookup l in key range
// rng (op is the method, e.g. "ListByCityStars").
func (r Repo[T, K]) listBy(ctx context.Context, op string, l *Lookup[T], rng *KeyRange, req PageRequest) (_ Page[*T], err error) {
	defer r.ctxErrAt(ctx, op, &err)
	if err := rng.Err(); err != nil {
		return Page[*T]{}, Fail(op, r.D.Aggregate, nil, nil, err)
	}
	if rng.invalid != nil {
		return Page[*T]{}, CheckKey(op, r.D.Aggregate, nil, "lookup "+l.Name, rng.invalid)
	}
	if err := r.gate(ctx, op, l); err != nil {
		return Page[*T]{}, err
	}
	query := rng.Query(r.D.Aggregate + "." + l.Name)
	// The store holds no index key longer than its limit: bounds past it
	// are narrowed to the keys it can hold (stores refuse longer bounds).
	in := rng
	if c := r.S.Caps(); c.MaxIndexKeyBytes > 0 {
		in = rng.Within(c.MaxIndexKeyBytes)
	} else if limit, _ := indexLimit(c); limit > 0 && len(rng.From) > limit && len(rng.To) > limit && bytes.Equal(rng.From[:limit], rng.To[:limit]) {
		return Page[*T]{}, nil // one value too long for any block (an Eq condition)
	}
	return paginate(query, req, fill(r, func(after []byte, n int) ([]*T, []byte, bool, error) {
		if after != nil && !rng.Contains(after) {
			return nil, nil, false, fmt.Errorf("%w: position outside the query's range", ErrBadCursor)
		}
		return r.S.ReadLookup(ctx, op, l, in, after, n, req.Desc)
	}), func(err error) error { return Fail(op, r.D.Aggregate, nil, nil, err) })
}

// listScope reads one page of the blocks of one counter scope, the scope
// of key scope (its counted part is ignored).
func (r Repo[T, K]) listScope(ctx context.Context, op string, scope K, req PageRequest) (_ Page[*T], err error) {
	defer r.ctxErrAt(ctx, op, &err)
	if over, err := r.readKey(op, scope); err != nil || over {
		return Page[*T]{}, err // a scope too large for any block has none
	}
	s, _ := r.D.Counter.Split(scope)
	query := r.D.Aggregate + "." + op + ":" + string(s)
	return paginate(query, req, fill(r, r.scopeReads(ctx, op, scope, req.Desc)), func(err error) error { return Fail(op, r.D.Aggregate, nil, nil, err) })
}

// scopeReads reads the blocks of one counter scope after a position (the
// number of the last block read, nil: from the first, or with desc from
// the last), as listings and counts read them.
func (r Repo[T, K]) scopeReads(ctx context.Context, op string, scope K, desc bool) func(after []byte, n int) ([]*T, []byte, bool, error) {
	return func(after []byte, n int) ([]*T, []byte, bool, error) {
		var from int64
		if after != nil {
			v, err := positionIn(after, 1, MaxPosition)
			if err != nil {
				return nil, nil, false, err
			}
			from = v
		}
		items, last, more, err := r.S.ReadScope(ctx, op, scope, from, n, desc)
		if err != nil && (last == 0 || !desc && last <= from || desc && from > 0 && last >= from) {
			return items, nil, more, err // no position to resume after
		}
		return items, AppendInt(nil, last), more, err
	}
}

// MaxElemIndex bounds element positions in cursors: larger ones can only
// come from a forged cursor.
const MaxElemIndex = 1<<31 - 1

// listElems reads one page of the elements of partition f of block id in
// index order, or descending with req.Desc (op is the method, e.g. "ListRounds"), adding the entries
// it reads to c when c is not nil.
func listElems[E, T any, K comparable](ctx context.Context, r Repo[T, K], op string, id K, f *Field[T], req PageRequest, c *Call) (_ Page[E], err error) {
	defer r.ctxErrAt(ctx, op, &err)
	if over, err := r.readKey(op, id); err != nil || over {
		if over {
			err = FailAt(op, r.D.Aggregate, shortID(id), "(a block key over the store's key limit)", ErrNotFound, nil)
		}
		return Page[E]{}, err
	}
	query := ElemQuery(r.D.Aggregate, f.Key, r.D.Keys.Bytes(id))
	return paginate(query, req, func(after []byte, n int) ([]E, []byte, bool, error) {
		// The position of an element listing is the index of the next
		// element (IndexCursor's): above the last one read, or below it
		// in descending order (-1: from the last element).
		start, lo := 0, int64(1)
		if req.Desc {
			start, lo = -1, 0
		}
		if after != nil {
			v, err := positionIn(after, lo, MaxElemIndex)
			if err != nil {
				return nil, nil, false, err
			}
			start = int(v)
		}
		items := make([]E, 0, min(n, 64))
		last := -1
		more, err := r.S.ReadElems(ctx, op, id, f, start, n, req.Desc, func(i int, d Decoder) error {
			var e E
			if err := d.Decode(&e); err != nil {
				return fmt.Errorf("%s: %w", f.ElemKey(i), err)
			}
			if c != nil {
				c.Entries = append(c.Entries, f.ElemKey(i))
			}
			items, last = append(items, e), i
			return nil
		})
		if err != nil || len(items) == 0 {
			return items, nil, more, err
		}
		if req.Desc {
			return items, AppendInt(nil, int64(last-1)), more && last > 0, nil
		}
		return items, AppendInt(nil, int64(last+1)), more, nil
	}, func(err error) error { return Fail(op, r.D.Aggregate, id, nil, err) })
}

// paginate is keyset pagination, written once for every listing of every
// store, in either direction: it decodes req.Cursor (bound to query and
// the direction, DescQuery) into a position, reads a
// page after it, and makes the cursor of the next page from the position
// of the page's last item. Errors from the cursor go through wrap; errors
// from read are returned as they are (adapters return *Error values).
func paginate[T any](query string, req PageRequest, read func(after []byte, n int) ([]T, []byte, bool, error), wrap func(error) error) (Page[T], error) {
	query = DescQuery(query, req.Desc)
	var after []byte
	if req.Cursor != "" {
		p, err := DecodeCursor(query, req.Cursor)
		if err != nil {
			return Page[T]{}, wrap(err)
		}
		after = p
	}
	items, last, more, err := read(after, req.Size())
	if err != nil {
		if isBadCursor(err) {
			return Page[T]{}, wrap(err)
		}
		if resumable(err, last) {
			// The blocks before the unreadable one, and the cursor
			// after it.
			return Page[T]{Items: items, Next: EncodeCursor(query, last)}, err
		}
		return Page[T]{}, err
	}
	page := Page[T]{Items: items}
	if more && len(items) > 0 {
		page.Next = EncodeCursor(query, last)
	}
	return page, nil
}

// resumable reports whether a listing can go on after err: an unreadable
// block at position last.
func resumable(err error, last []byte) bool {
	return last != nil && errors.Is(err, ErrUnreadable)
}

// isBadCursor reports a cursor failure that is not yet an *Error.
func isBadCursor(err error) bool {
	var e *Error
	return errors.Is(err, ErrBadCursor) && !errors.As(err, &e)
}

// Versions of the contract between generated code and this package.
// Generated files check, at compile time, that their version is in
// [MinGenVersion, MaxGenVersion] (after protobuf-go's EnforceVersion): a
// mismatch is a constant overflow naming EnforceVersion, fixed by
// regenerating with the noamgen that matches this runtime.
//
// Version 4: constructors take ...Option and pass them to the store's
// Open and to NewRepo. Version 3 code cannot run on this runtime: its
// MongoDB and DynamoDB constructors pass a []mongostore.Option or
// []dynamostore.Options to Open, which takes ...Option now.
//
// Version 5: each store's file adds its constructor to the aggregate's
// Openers (AddOpener), and New<T>Repository opens by the handle's type.
// Version 4 code, which has neither, still runs.
const (
	MinGenVersion = 4
	MaxGenVersion = 5
)

// EnforceVersion is used by generated code to check the contract version.
type EnforceVersion uint
