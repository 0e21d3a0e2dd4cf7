package mongostore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// StaleAfter is the grace period of the lookup protocol: an index entry
// that does not match its aggregate is only treated as stale (dropped by a
// read, taken over by a unique claim) once it is older than this, so that
// the entries of a write in flight, written before its aggregate, are left
// alone. Set it before using the repositories.
var StaleAfter = 30 * time.Second

// Hidden document fields of an aggregate with lookups (see Stamp).
const (
	SeqKey = "_seq"
	IncKey = "_inc"
)

// Stamp holds the hidden fields the lookup protocol keeps in the document
// of an aggregate with lookups; generated documents embed it inline.
type Stamp struct {
	// Seq is the write sequence: every write that can change lookup
	// values sets it to a value above the one it read, on condition that
	// it has not changed meanwhile.
	Seq int64 `bson:"_seq,omitempty"`
	// Inc identifies the incarnation of the block: it is drawn at random
	// when the block is created, kept by every later write, and copied
	// into the block's index entries, so that a Delete removes the entries
	// of the block it deleted and never those of a block created again
	// with the same key.
	Inc int64 `bson:"_inc,omitempty"`
}

// maxAttempts bounds the read-claim-write attempts of one write that keep
// losing to concurrent writes of the same block.
const maxAttempts = 16

// Limits of one command that names index keys ($in lists) or reads index
// entries, so that large keys never exceed the server's message limit.
const (
	maxBatchKeys  = 500
	maxBatchBytes = 4 << 20
	// readBatch is the cursor batch size of Repair's reads: 16 entries of
	// the largest key a 16 MiB document can hold fit in one reply.
	readBatch = 16
)

// batches splits keys into runs of at most maxBatchKeys keys and
// maxBatchBytes bytes (a key larger than that is a run of its own).
func batches(keys []string) [][]string {
	var out [][]string
	start, size := 0, 0
	for i, k := range keys {
		if i > start && (i-start == maxBatchKeys || size+len(k) > maxBatchBytes) {
			out = append(out, keys[start:i])
			start, size = i, 0
		}
		size += len(k)
	}
	if start < len(keys) {
		out = append(out, keys[start:])
	}
	return out
}

// ambiguous reports whether err leaves a write's outcome unknown: the
// command may have been applied though its reply did not arrive.
func ambiguous(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) {
		return true
	}
	var we mongo.WriteException
	if errors.As(err, &we) && we.WriteConcernError != nil {
		return true
	}
	var bwe mongo.BulkWriteException
	return errors.As(err, &bwe) && bwe.WriteConcernError != nil
}

// applied reads block id back, on a context that ends
// runtime.CleanupTimeout after ctx (runtime.Detach), and reports whether
// it carries the stamp (seq, inc) of a write whose outcome is unknown.
func (x *Indexed[K, D, T]) applied(ctx context.Context, id K, inc, seq int64) (bool, error) {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	raw, err := x.Coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: SeqKey, Value: 1}, {Key: IncKey, Value: 1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s, _ := raw.Lookup(SeqKey).AsInt64OK()
	i, _ := raw.Lookup(IncKey).AsInt64OK()
	return s == seq && i == inc, nil
}

// checkValues fails with runtime.ErrInvalidValue if a lookup value of v has
// a string that is not valid UTF-8 (which MongoDB rejects and FerretDB
// silently replaces). Block keys are checked before, by runtime.Repo, for
// every store.
func (x *Indexed[K, D, T]) checkValues(op string, id K, v T) error {
	for _, l := range x.Lookups {
		for _, val := range l.Keys(v) {
			if err := runtime.CheckKey(op, x.Agg, id, "lookup "+x.Coll.Name()+"."+l.Name, val); err != nil {
				return err
			}
		}
	}
	return nil
}

// TableName names the collection holding an index table: "Hotel__cityStars".
func TableName(collection, lookup string) string { return collection + "__" + lookup }

// IndexKey is the _id of the index entry with the given key: its lower-case
// hex form, which orders like the bytes.
func IndexKey(key []byte) string { return hex.EncodeToString(key) }

// Lookup describes one index table of aggregate class T.
type Lookup[T any] struct {
	// Name is the lookup's name, e.g. "cityStars".
	Name string
	// Unique lookups map each value to at most one block.
	Unique bool
	// Keys returns the encoded values an aggregate holds (the generated
	// <agg><Lookup>Keys function); it reads only the document fields listed
	// in Indexed.Fields.
	Keys func(T) [][]byte
}

// Indexed is an aggregate class with index tables. Generated repositories
// of aggregates with lookups build one with NewIndexed and delegate every
// write that can change a lookup value, and the lookup reads, to it.
type Indexed[K comparable, D, T any] struct {
	Agg        string              // aggregate type name, for errors
	Coll       *mongo.Collection   // the aggregate collection
	Codec      runtime.KeyCodec[K] // block key codec
	VersionKey string              // version entry, "" if none
	Fields     []string            // document fields holding lookup parts
	Lookups    []Lookup[T]
	Convert    func(*D) T // document to aggregate
	KeyOf      func(T) K  // block key of an aggregate
	// Check, when set, says why a document does not decode: Repair
	// reports such a block as unreadable and leaves its entries alone.
	Check func(*D) error
	// Refused, when set, explains a duplicate key error of the aggregate
	// write (a unique native index of the collection refusing the value
	// v): it returns the error to fail with, or nil when the duplicate is
	// the block key (insert says the write inserts the document).
	Refused func(ctx context.Context, op string, id K, v T, insert bool, err error) error

	tables []*mongo.Collection
}

// NewIndexed completes x with its index tables, collections of x.Coll's
// database named by TableName.
func NewIndexed[K comparable, D, T any](x Indexed[K, D, T]) *Indexed[K, D, T] {
	db := x.Coll.Database()
	x.tables = nil
	for _, l := range x.Lookups {
		x.tables = append(x.tables, Collection(db, TableName(x.Coll.Name(), l.Name)))
	}
	return &x
}

// lookup finds a lookup by name.
func (x *Indexed[K, D, T]) lookup(name string) int {
	for i, l := range x.Lookups {
		if l.Name == name {
			return i
		}
	}
	panic("mongostore: " + x.Agg + " has no lookup " + name)
}

func (x *Indexed[K, D, T]) lookupName(i int) string {
	return x.Coll.Name() + "." + x.Lookups[i].Name
}

// entry is an index document.
type entry[K any] struct {
	Key string `bson:"_id"`
	ID  K      `bson:"id"`
	Inc int64  `bson:"inc"`
	S   int64  `bson:"s"`
	W   *int64 `bson:"w,omitempty"`
}

// unchanged is the filter matching e only as it was read.
func unchanged[K any](e *entry[K]) bson.D {
	f := bson.D{{Key: "_id", Value: e.Key}, {Key: "s", Value: e.S}}
	if e.W == nil {
		return append(f, bson.E{Key: "w", Value: bson.D{{Key: "$exists", Value: false}}})
	}
	return append(f, bson.E{Key: "w", Value: *e.W})
}

// restore is the update that puts e back as it was read.
func restore[K any](e *entry[K]) bson.D {
	u := bson.D{{Key: "$set", Value: bson.D{{Key: "id", Value: e.ID}, {Key: "inc", Value: e.Inc}, {Key: "s", Value: e.S}}}}
	if e.W == nil {
		return append(u, bson.E{Key: "$unset", Value: bson.D{{Key: "w", Value: ""}}})
	}
	u[0].Value = append(u[0].Value.(bson.D), bson.E{Key: "w", Value: *e.W})
	return u
}

func stale(s int64) bool { return time.Now().UnixNano()-s > StaleAfter.Nanoseconds() }

// entryKeys returns the index keys (entry _ids) of block id holding v for
// lookup i, sorted and without duplicates: the value for a unique lookup,
// the value followed by the block key otherwise.
func (x *Indexed[K, D, T]) entryKeys(i int, id K, v T) []string {
	vals := x.Lookups[i].Keys(v)
	var blk []byte
	if !x.Lookups[i].Unique {
		blk = x.Codec.Append(nil, id)
	}
	out := make([]string, 0, len(vals))
	for _, val := range vals {
		key := val
		if !x.Lookups[i].Unique {
			key = append(append(make([]byte, 0, len(val)+len(blk)), val...), blk...)
		}
		out = append(out, IndexKey(key))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (x *Indexed[K, D, T]) allKeys(id K, v T, found bool) [][]string {
	out := make([][]string, len(x.Lookups))
	if found {
		for i := range x.Lookups {
			out[i] = x.entryKeys(i, id, v)
		}
	}
	return out
}

// minus returns the sorted keys of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			out = append(out, k)
		}
	}
	return out
}

// state is what a write reads of the block before changing it: the lookup
// fields, the stamp, the version and the partition lengths.
type state[T any] struct {
	found   bool
	stamp   Stamp
	hasSeq  bool
	version int64
	raw     bson.Raw
	value   T
}

func (x *Indexed[K, D, T]) projection() bson.D {
	p := bson.D{{Key: SeqKey, Value: 1}, {Key: IncKey, Value: 1}, {Key: LenKey, Value: 1}}
	if x.VersionKey != "" {
		p = append(p, bson.E{Key: x.VersionKey, Value: 1})
	}
	for _, f := range x.Fields {
		p = append(p, bson.E{Key: f, Value: 1})
	}
	return p
}

// read reads the state of block id (found is false if there is none).
func (x *Indexed[K, D, T]) read(ctx context.Context, id K) (state[T], error) {
	var st state[T]
	raw, err := x.Coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(x.projection())).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.found, st.raw = true, raw
	if v, err := raw.LookupErr(SeqKey); err == nil {
		st.stamp.Seq, st.hasSeq = v.AsInt64OK()
	}
	st.stamp.Inc, _ = raw.Lookup(IncKey).AsInt64OK()
	if x.VersionKey != "" {
		st.version, _ = raw.Lookup(x.VersionKey).AsInt64OK()
	}
	var d D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return st, err
	}
	st.value = x.Convert(&d)
	return st, nil
}

// unchangedBlock is the filter matching block id only while its stamp is
// the one st read.
func unchangedBlock[T any](id any, st state[T]) bson.D {
	f := bson.D{{Key: "_id", Value: id}}
	return append(f, stampCond(st)...)
}

func stampCond[T any](st state[T]) []bson.E {
	missing := bson.D{{Key: "$exists", Value: false}}
	out := []bson.E{{Key: SeqKey, Value: st.stamp.Seq}, {Key: IncKey, Value: st.stamp.Inc}}
	if !st.hasSeq {
		out[0].Value = missing
	}
	if st.stamp.Inc == 0 {
		out[1].Value = missing
	}
	return out
}

// nextSeq is the write sequence of a write over sequence old: above it
// and, when the clock allows, the current time in nanoseconds.
func nextSeq(old int64) int64 { return max(old+1, time.Now().UnixNano()) }

// newInc draws the incarnation of a new block.
func newInc() int64 {
	for {
		if n := rand.Int64(); n != 0 {
			return n
		}
	}
}

// check fails when st does not allow a write expecting version want (0:
// any) and the elements elems.
func (x *Indexed[K, D, T]) check(op string, id K, st state[T], want int64, elems []Elem) error {
	if !st.found {
		return runtime.Fail(op, x.Agg, id, runtime.ErrNotFound, nil)
	}
	if x.VersionKey != "" && want != 0 && st.version != want {
		return runtime.FailAt(op, x.Agg, id, fmt.Sprintf("(stored version %d, expected %d)", st.version, want), runtime.ErrConflict, nil)
	}
	for _, e := range elems {
		n, _ := st.raw.Lookup(LenKey, e.Field).AsInt64OK()
		if e.Index < 0 || int64(e.Index) >= n {
			return runtime.FailAt(op, x.Agg, id, e.String(), runtime.ErrNotFound, nil)
		}
	}
	return nil
}

func (x *Indexed[K, D, T]) contended(op string, id K) error {
	return runtime.Fail(op, x.Agg, id, runtime.ErrConflict, fmt.Errorf("block changed concurrently %d times in a row", maxAttempts))
}

// attempt records what one attempt of a write did to the index tables, so
// that a failed attempt can undo it.
type attempt[K any] struct {
	w       int64        // the attempt's mark on the entries it writes
	created [][]string   // per table: entries it inserted
	touched [][]entry[K] // per table: entries it changed, as they were
}

// commit runs one attempt of a write of block id (incarnation inc) whose
// index keys go from before to after, with write sequence seq: it adds the
// keys after has and before lacks (claiming unique ones first), runs write
// (which reports whether its condition matched), then removes the keys
// before has and after lacks. If a claim fails or write definitely did
// not happen (no match, or refused by the server), the attempt undoes its
// changes to the index tables (those no later write has touched) and
// nothing else is changed. If write's outcome is unknown (see ambiguous),
// the block is read back: with this attempt's stamp the write is done;
// otherwise the entries stay and the error says the outcome is unknown.
// insert says that write creates the block (see invariant I4).
func (x *Indexed[K, D, T]) commit(ctx context.Context, op string, id K, inc int64, before, after [][]string, seq int64, insert bool, write func(seq int64) (bool, error)) (bool, error) {
	began := time.Now()
	a := &attempt[K]{w: rand.Int64(), created: make([][]string, len(x.Lookups)), touched: make([][]entry[K], len(x.Lookups))}
	for _, unique := range []bool{true, false} {
		for i, l := range x.Lookups {
			if l.Unique != unique {
				continue
			}
			for _, k := range minus(after[i], before[i]) {
				if err := x.add(ctx, op, a, i, id, inc, k, seq); err != nil {
					x.undo(ctx, id, a)
					return false, err
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// The document command is never sent (checked here rather than
		// trusted to the driver: on a retry it can return a context
		// error from before its second send after a first send): the
		// write definitely failed, so its entries go.
		return false, runtime.NotSent(op, x.Agg, id, err, x.undo(ctx, id, a))
	}
	ok, err := write(seq)
	if err != nil && ambiguous(err) {
		done, rerr := x.applied(ctx, id, inc, seq)
		if rerr != nil || !done {
			detail := "(outcome unknown: the write may not have been applied; its lookup entries are kept for reads to verify)"
			if rerr != nil {
				detail = fmt.Sprintf("(outcome unknown: reading the block back failed: %v; its lookup entries are kept for reads to verify)", rerr)
			}
			return false, runtime.FailAt(op, x.Agg, id, detail, runtime.ErrUnknownOutcome, err)
		}
		ok, err = true, nil // the reply was lost, the write is done
	}
	if err != nil || !ok {
		x.undo(ctx, id, a)
		var re *runtime.Error
		if errors.As(err, &re) {
			return false, err
		}
		if err != nil {
			return false, runtime.Fail(op, x.Agg, id, nil, err)
		}
		return false, nil
	}
	// What follows runs on a context that ends runtime.CleanupTimeout
	// after the caller's.
	caller := ctx
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	if insert && time.Since(began) > StaleAfter/2 {
		if err := x.stillOwned(ctx, op, id, inc, seq, before, after); err != nil {
			return false, err
		}
	}
	// The write is done: removing the old entries is best effort (reads
	// skip stale entries, Repair removes them). Only entries of this
	// incarnation written before seq go: a later write's are kept.
	var errs []error
	for i, l := range x.Lookups {
		for _, gone := range batches(minus(before[i], after[i])) {
			filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: gone}}}, {Key: "inc", Value: inc}, {Key: "s", Value: bson.D{{Key: "$lt", Value: seq}}}}
			if l.Unique {
				filter = append(filter, bson.E{Key: "id", Value: id})
			}
			_, err := x.tables[i].DeleteMany(ctx, filter)
			errs = append(errs, err)
		}
	}
	return true, runtime.LeftToRepair(caller, op, x.Agg, id, errs...)
}

// stillOwned checks, after a slow insert of block id, that the unique
// claims it took are still its own (a takeover may have happened while it
// stalled, see invariant I4). If one is not, it deletes the block it
// inserted (on condition that it is still the one it wrote) and fails with
// runtime.ErrDuplicate.
func (x *Indexed[K, D, T]) stillOwned(ctx context.Context, op string, id K, inc, seq int64, before, after [][]string) error {
	for i, l := range x.Lookups {
		if !l.Unique {
			continue
		}
		for _, k := range minus(after[i], before[i]) {
			var e entry[K]
			err := x.tables[i].FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&e)
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				return runtime.FailAt(op, x.Agg, id, "(checking the unique claims of a slow write)", nil, err)
			}
			if err == nil && e.ID == id && e.Inc == inc {
				continue
			}
			_, derr := x.Coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: SeqKey, Value: seq}, {Key: IncKey, Value: inc}})
			if derr != nil {
				return runtime.FailAt(op, x.Agg, id, "(lost the unique claim "+x.lookupName(i)+" "+describeKey(k)+" while stalled; removing the block failed)", runtime.ErrDuplicate, derr)
			}
			return runtime.FailAt(op, x.Agg, id, "(lost the unique claim "+x.lookupName(i)+" "+describeKey(k)+" while stalled past StaleAfter)", runtime.ErrDuplicate, nil)
		}
	}
	return nil
}

// undo removes the entries attempt a created and puts back those it
// changed, unless a later write has touched them since. An entry of block
// id goes back with the block's current incarnation: the one it had may
// belong to another failed attempt. It returns the first command error
// (what it could not undo stays for Repair). It runs on runtime.Detach:
// not cancelled with the caller, but bounded.
func (x *Indexed[K, D, T]) undo(ctx context.Context, id K, a *attempt[K]) error {
	ctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var first error
	keep := func(_ any, err error) {
		if first == nil {
			first = err
		}
	}
	for i, keys := range a.created {
		for _, run := range batches(keys) {
			keep(x.tables[i].DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: run}}}, {Key: "w", Value: a.w}}))
		}
	}
	cur, known := int64(0), false
	for i, es := range a.touched {
		for _, e := range es {
			if e.ID == id {
				if !known {
					known = true
					if raw, err := x.Coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: IncKey, Value: 1}})).Raw(); err == nil {
						cur, _ = raw.Lookup(IncKey).AsInt64OK()
					}
				}
				if cur != 0 {
					e.Inc = cur
				}
			}
			keep(x.tables[i].UpdateOne(ctx, bson.D{{Key: "_id", Value: e.Key}, {Key: "w", Value: a.w}}, restore(&e)))
		}
	}
	return first
}

// add writes the index entry k of block id (incarnation inc) for lookup
// i, recording in a what it did.
func (x *Indexed[K, D, T]) add(ctx context.Context, op string, a *attempt[K], i int, id K, inc int64, k string, seq int64) error {
	t := x.tables[i]
	fail := func(err error) error { return runtime.Fail(op, x.Agg, id, nil, err) }
	mine := bson.D{{Key: "id", Value: id}, {Key: "inc", Value: inc}, {Key: "w", Value: a.w}}
	if !x.Lookups[i].Unique {
		var prev entry[K]
		err := t.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: k}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "s", Value: seq}}}, {Key: "$set", Value: mine}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.Before)).Decode(&prev)
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			a.created[i] = append(a.created[i], k)
		case err != nil:
			return fail(err)
		default:
			a.touched[i] = append(a.touched[i], prev)
		}
		return nil
	}
	for range maxAttempts {
		_, err := t.InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "id", Value: id}, {Key: "inc", Value: inc}, {Key: "s", Value: seq}, {Key: "w", Value: a.w}})
		if err == nil {
			a.created[i] = append(a.created[i], k)
			return nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return fail(err)
		}
		var e entry[K]
		err = t.FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&e)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue // removed meanwhile: claim again
		}
		if err != nil {
			return fail(err)
		}
		var update bson.D
		if e.ID == id {
			// Already this block's (an entry of an earlier write or
			// incarnation): make it this write's.
			update = bson.D{{Key: "$max", Value: bson.D{{Key: "s", Value: seq}}}, {Key: "$set", Value: mine}}
		} else {
			holds, ost, err := x.holds(ctx, i, e.ID, k)
			if err != nil {
				return fail(err)
			}
			if holds || !stale(e.S) {
				return runtime.FailAt(op, x.Agg, id, "(lookup "+x.lookupName(i)+" "+describeKey(k)+" is taken)", runtime.ErrDuplicate, nil)
			}
			// A stale claim: its block does not hold the value and its
			// write should be long over. Fence that write (it may only
			// be stalled): bump the holder's stamp, so that its
			// aggregate write, conditioned on the stamp it read, can no
			// longer land. Then take the claim over.
			if ost.found {
				res, err := x.Coll.UpdateOne(ctx, unchangedBlock(e.ID, ost), bson.D{{Key: "$set", Value: bson.D{{Key: SeqKey, Value: nextSeq(ost.stamp.Seq)}}}})
				if err != nil {
					return fail(err)
				}
				if res.MatchedCount == 0 {
					continue // the holder changed meanwhile: look again
				}
			}
			update = bson.D{{Key: "$set", Value: append(mine, bson.E{Key: "s", Value: seq})}}
		}
		res, err := t.UpdateOne(ctx, append(unchanged(&e), bson.E{Key: "id", Value: e.ID}), update)
		if err != nil {
			return fail(err)
		}
		if res.MatchedCount == 1 {
			a.touched[i] = append(a.touched[i], e)
			return nil
		}
		// The entry changed since it was read: claim again.
	}
	return x.contended(op, id)
}

// holds reports whether block owner exists and has index key k for lookup
// i, and returns the state it read.
func (x *Indexed[K, D, T]) holds(ctx context.Context, i int, owner K, k string) (bool, state[T], error) {
	st, err := x.read(ctx, owner)
	if err != nil || !st.found {
		return false, st, err
	}
	_, ok := slices.BinarySearch(x.entryKeys(i, owner, st.value), k)
	return ok, st, nil
}

// Create stores block id holding v: doc(s) is its document with stamp s.
// It fails with runtime.ErrDuplicate if the block exists or a unique value
// of v is taken, changing nothing.
func (x *Indexed[K, D, T]) Create(ctx context.Context, op string, id K, v T, doc func(Stamp) any) error {
	if err := x.checkValues(op, id, v); err != nil {
		return err
	}
	var dup error
	inc := newInc()
	done, err := x.commit(ctx, op, id, inc, x.allKeys(id, v, false), x.allKeys(id, v, true), nextSeq(0), true, func(seq int64) (bool, error) {
		_, err := x.Coll.InsertOne(ctx, doc(Stamp{Seq: seq, Inc: inc}))
		if mongo.IsDuplicateKeyError(err) {
			if x.Refused != nil {
				if rerr := x.Refused(ctx, op, id, v, true, err); rerr != nil {
					return false, rerr
				}
			}
			dup = err
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	if !done {
		return keyInUse(op, x.Agg, id, dup)
	}
	return nil
}

// Put creates block id holding v or replaces it whole; doc(s) is its
// document with stamp s. When versioned (the aggregate has a version
// entry) the block must be at the given version, or not exist when it is
// 0; otherwise Put fails with runtime.ErrConflict.
func (x *Indexed[K, D, T]) Put(ctx context.Context, op string, id K, v T, versioned bool, version int64, doc func(Stamp) any) error {
	if err := x.checkValues(op, id, v); err != nil {
		return err
	}
	after := x.allKeys(id, v, true)
	var last *state[T]
	for range maxAttempts {
		st, err := x.read(ctx, id)
		if err != nil {
			return runtime.Fail(op, x.Agg, id, nil, err)
		}
		switch {
		case !versioned:
		case version == 0 && st.found:
			return runtime.FailAt(op, x.Agg, id, "(the block exists, expected none)", runtime.ErrConflict, nil)
		case version != 0 && !st.found:
			return runtime.FailAt(op, x.Agg, id, fmt.Sprintf("(no block, expected version %d)", version), runtime.ErrConflict, nil)
		case st.version != version:
			return runtime.FailAt(op, x.Agg, id, fmt.Sprintf("(stored version %d, expected %d)", st.version, version), runtime.ErrConflict, nil)
		}
		if last != nil && st.found && last.found && st.stamp == last.stamp && st.hasSeq == last.hasSeq {
			return x.contended(op, id)
		}
		last = &st
		inc := st.stamp.Inc
		if !st.found {
			inc = newInc()
		}
		done, err := x.commit(ctx, op, id, inc, x.allKeys(id, st.value, st.found), after, nextSeq(st.stamp.Seq), !st.found, func(seq int64) (bool, error) {
			d := doc(Stamp{Seq: seq, Inc: inc})
			if !st.found {
				_, err := x.Coll.InsertOne(ctx, d)
				if mongo.IsDuplicateKeyError(err) {
					if x.Refused != nil {
						if rerr := x.Refused(ctx, op, id, v, true, err); rerr != nil {
							return false, rerr
						}
					}
					return false, nil // created meanwhile: read it again
				}
				return err == nil, err
			}
			filter := unchangedBlock(id, st)
			if versioned {
				filter = append(filter, bson.E{Key: x.VersionKey, Value: version})
			}
			res, err := x.Coll.ReplaceOne(ctx, filter, d)
			if isDuplicate(err) && x.Refused != nil {
				if rerr := x.Refused(ctx, op, id, v, false, err); rerr != nil {
					return false, rerr
				}
			}
			if err != nil {
				return false, err
			}
			return res.MatchedCount == 1, nil
		})
		if err != nil || done {
			return err
		}
	}
	return x.contended(op, id)
}

// Change is a partial write of one block that may change lookup values.
type Change[T any] struct {
	// Filter selects the block, with any condition the write needs (e.g.
	// that an element exists); nil selects it by key.
	Filter bson.D
	// Set, Inc and Push are the $set, $inc and $push of the update.
	Set, Inc, Push bson.D
	// IfVersion, when not 0, is the version the block must have.
	IfVersion int64
	// Elems are elements of partitioned arrays that must exist.
	Elems []Elem
	// Apply makes the change on the aggregate as read (only the fields in
	// Indexed.Fields are set), to compute the new lookup values.
	Apply func(T)
}

// Change applies c to block id, keeping the index tables right. It fails
// with runtime.ErrNotFound if the block or an element in c.Elems does not
// exist, with runtime.ErrConflict if it is not at version c.IfVersion, and
// with runtime.ErrDuplicate if the change gives it a unique value another
// block holds; a failed Change changes nothing.
func (x *Indexed[K, D, T]) Change(ctx context.Context, op string, id K, c Change[T]) error {
	_, err := x.change(ctx, op, id, c)
	return err
}

// Append pushes elem onto the partitioned array field of block id (the
// lookups hold values of its elements) and returns its index. c.Apply
// appends elem to the aggregate as read.
func (x *Indexed[K, D, T]) Append(ctx context.Context, op string, id K, field string, elem any, c Change[T]) (int, error) {
	c.Push = append(c.Push, bson.E{Key: field, Value: elem})
	c.Inc = append(bson.D{{Key: LenKey + "." + field, Value: 1}}, c.Inc...)
	st, err := x.change(ctx, op, id, c)
	if err != nil {
		return 0, err
	}
	n, _ := st.raw.Lookup(LenKey, field).AsInt64OK()
	return int(n), nil
}

func (x *Indexed[K, D, T]) change(ctx context.Context, op string, id K, c Change[T]) (state[T], error) {
	var last *state[T]
	for range maxAttempts {
		st, err := x.read(ctx, id)
		if err != nil {
			return st, runtime.Fail(op, x.Agg, id, nil, err)
		}
		if err := x.check(op, id, st, c.IfVersion, c.Elems); err != nil {
			return st, err
		}
		if last != nil && st.stamp == last.stamp && st.hasSeq == last.hasSeq {
			return st, x.contended(op, id)
		}
		last = &st
		before := x.allKeys(id, st.value, true)
		if c.Apply != nil {
			c.Apply(st.value)
		}
		if err := x.checkValues(op, id, st.value); err != nil {
			return st, err
		}
		after := x.allKeys(id, st.value, true)
		done, err := x.commit(ctx, op, id, st.stamp.Inc, before, after, nextSeq(st.stamp.Seq), false, func(seq int64) (bool, error) {
			filter := slices.Clone(c.Filter)
			if len(filter) == 0 {
				filter = ByID(id)
			}
			filter = append(filter, stampCond(st)...)
			update := bson.D{{Key: "$set", Value: append(slices.Clone(c.Set), bson.E{Key: SeqKey, Value: seq})}}
			if len(c.Inc) > 0 {
				update = append(update, bson.E{Key: "$inc", Value: c.Inc})
			}
			if len(c.Push) > 0 {
				update = append(update, bson.E{Key: "$push", Value: c.Push})
			}
			res, err := x.Coll.UpdateOne(ctx, filter, update)
			if isDuplicate(err) && x.Refused != nil {
				if rerr := x.Refused(ctx, op, id, st.value, false, err); rerr != nil {
					return false, rerr
				}
			}
			if err != nil {
				return false, err
			}
			return res.MatchedCount == 1, nil
		})
		if err != nil || done {
			return st, err
		}
	}
	return state[T]{}, x.contended(op, id)
}

// Delete removes block id and then its index entries: those of the
// incarnation it removed. It fails with runtime.ErrNotFound if there is none.
func (x *Indexed[K, D, T]) Delete(ctx context.Context, op string, id K) error {
	client := x.Coll.Database().Client()
	opts := options.FindOneAndDelete()
	if _, no := noFindAndModifyProjection.Load(client); !no {
		opts.SetProjection(bson.D{{Key: IncKey, Value: 1}})
	}
	raw, err := x.Coll.FindOneAndDelete(ctx, ByID(id), opts).Raw()
	if notImplemented(err) {
		noFindAndModifyProjection.Store(client, true)
		raw, err = x.Coll.FindOneAndDelete(ctx, ByID(id)).Raw()
	}
	if err != nil {
		return Err(op, x.Agg, id, err)
	}
	inc, _ := raw.Lookup(IncKey).AsInt64OK()
	// The block is gone: removing its entries is best effort (reads skip
	// stale entries, Repair removes them), on a context that ends
	// runtime.CleanupTimeout after ctx.
	cctx, cancel := runtime.Detach(ctx)
	defer cancel()
	var errs []error
	for _, t := range x.tables {
		_, err := t.DeleteMany(cctx, bson.D{{Key: "id", Value: id}, {Key: "inc", Value: inc}})
		errs = append(errs, err)
	}
	return runtime.LeftToRepair(ctx, op, x.Agg, id, errs...)
}
