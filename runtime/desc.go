package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"
)

// This file is the store-independent half of the store contract: the
// descriptor of an aggregate class that noamgen emits once per aggregate
// (Desc), built from typed accessors (Field, Partition, Root, Version), and
// the changes that entry-level writes hand to a store (Change, Update).
// Store adapters read the layout from the descriptor; they never see the
// aggregate's Go type other than through these accessors.

// Decoder decodes one stored value into v, a pointer to a Go value. Each
// store adapter passes its own (a BSON value, a DynamoDB attribute, ...).
type Decoder interface {
	Decode(v any) error
}

// FieldKind says what an accessor stands for.
type FieldKind uint8

const (
	// KindField is a top-level field: one entry under ETF, part of the
	// root entry under EAO.
	KindField FieldKind = iota
	// KindPartition is a partitioned slice field: one entry per element,
	// key[i], plus the element count.
	KindPartition
	// KindRoot is the root entry of an EAO block: every non-partitioned
	// field but the id and the version, as one value.
	KindRoot
	// KindVersion is the version entry (an int64).
	KindVersion
)

// Field is a typed accessor of one part of aggregate T, made by NewField,
// NewPartition, NewRoot or NewVersion. Its methods are what adapters use to
// encode and decode entries without reflecting on T.
type Field[T any] struct {
	// Key is the stored name: the entry key ("firstPlayer", "rounds"), ""
	// for the EAO root entry.
	Key string
	// Name is the Go field name, for messages ("FirstPlayer").
	Name string
	// Kind says what the accessor stands for.
	Kind FieldKind
	// Fields, for the root entry, are the keys of the fields inside it.
	Fields []string
	// Number is set for a field a write may add to (noam:"add", made by
	// NewNumber): a signed integer whose values lie in [Min, Max], the
	// range of its Go type.
	Number   bool
	Min, Max int64

	value  func(*T) any
	addr   func(*T) any
	decode func(*T, Decoder) error
	assign func(*T, any) error

	// Numbers only.
	getInt func(*T) int64
	setInt func(*T, int64)

	// Partitions only.
	length     func(*T) int
	elem       func(*T, int) any
	decodeElem func(*T, Decoder) error
	setElem    func(*T, int, any) error
	appendVal  func(*T, any) error
	reset      func(*T, int)
	decodeInto func(Decoder) (any, error)
}

// Value returns the value the accessor stands for in t: the field, the
// whole slice of a partition, the root value, the version.
func (f *Field[T]) Value(t *T) any { return f.value(t) }

// Addr returns a pointer to the value the accessor stands for in t (*V for
// a field of type V, *[]E for a partition), nil for the root entry, which
// is built from several fields. Unlike Value, it boxes nothing: adapters
// that encode the value read it through the pointer without allocating.
func (f *Field[T]) Addr(t *T) any {
	if f.addr == nil {
		return nil
	}
	return f.addr(t)
}

// Decode decodes d into t's field (for a partition: the whole slice).
func (f *Field[T]) Decode(t *T, d Decoder) error {
	if err := f.decode(t, d); err != nil {
		return fmt.Errorf("entry %s: %w", f.label(), err)
	}
	return nil
}

// Assign sets t's field to v, which must have the field's type (for a
// partition, the slice type).
func (f *Field[T]) Assign(t *T, v any) error { return f.assign(t, v) }

// Len is the number of elements of a partition in t.
func (f *Field[T]) Len(t *T) int { return f.length(t) }

// Elem is element i of a partition in t.
func (f *Field[T]) Elem(t *T, i int) any { return f.elem(t, i) }

// AppendDecoded decodes d as the next element of a partition of t.
func (f *Field[T]) AppendDecoded(t *T, d Decoder) error {
	if err := f.decodeElem(t, d); err != nil {
		return fmt.Errorf("element of %s: %w", f.Key, err)
	}
	return nil
}

// SetElem replaces element i of a partition of t (as read); it reports
// runtime.ErrNotFound when t has no element i.
func (f *Field[T]) SetElem(t *T, i int, v any) error { return f.setElem(t, i, v) }

// AppendValue appends v to the partition of t (as read).
func (f *Field[T]) AppendValue(t *T, v any) error { return f.appendVal(t, v) }

// Reset makes the partition of t empty (not nil), with room for n elements.
func (f *Field[T]) Reset(t *T, n int) { f.reset(t, n) }

// DecodeElem decodes d as one element of a partition and returns it.
func (f *Field[T]) DecodeElem(d Decoder) (any, error) { return f.decodeInto(d) }

// ElemKey is the entry key of element i of a partition: "rounds[3]". The
// partition's own key ("rounds") is the entry of its element count.
func (f *Field[T]) ElemKey(i int) string { return ElemKey(f.Key, i) }

// ElemKey is the entry key of element i of the partition with key key:
// "rounds[3]", the notation of the model (model.ElemKey), of Desc.Entries
// and of the errors that name an element.
func ElemKey(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

func (f *Field[T]) label() string {
	if f.Kind == KindRoot {
		return "ε"
	}
	return f.Key
}

// NewField is the accessor of a top-level field of type V.
func NewField[T, V any](key, name string, ptr func(*T) *V) *Field[T] {
	return &Field[T]{
		Key: key, Name: name, Kind: KindField,
		value:  func(t *T) any { return *ptr(t) },
		addr:   func(t *T) any { return ptr(t) },
		decode: func(t *T, d Decoder) error { return d.Decode(ptr(t)) },
		assign: func(t *T, v any) error { return assignTo(ptr(t), v, key) },
	}
}

// Signed are the Go types of the fields a write may add to.
type Signed interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64
}

// NewNumber is the accessor of a top-level signed integer field of type V
// that writes may add to (noam:"add"): Add changes of it are compiled by
// each store into its own atomic increment.
func NewNumber[T any, V Signed](key, name string, ptr func(*T) *V) *Field[T] {
	f := NewField(key, name, ptr)
	f.Number = true
	bits := unsafe.Sizeof(V(0)) * 8
	f.Min, f.Max = -1<<(bits-1), 1<<(bits-1)-1
	f.getInt = func(t *T) int64 { return int64(*ptr(t)) }
	f.setInt = func(t *T, v int64) { *ptr(t) = V(v) }
	return f
}

// Int is the value of a number field (NewNumber) in t.
func (f *Field[T]) Int(t *T) int64 { return f.getInt(t) }

// SetInt sets the number field (NewNumber) of t to v, which must lie in
// [f.Min, f.Max].
func (f *Field[T]) SetInt(t *T, v int64) { f.setInt(t, v) }

// NewVersion is the accessor of the version entry.
func NewVersion[T any](key, name string, ptr func(*T) *int64) *Field[T] {
	f := NewField(key, name, ptr)
	f.Kind = KindVersion
	return f
}

// NewRoot is the accessor of the root entry of an EAO aggregate: get builds
// the root value R (a struct of the root fields with their entry keys as
// bson tags) from the aggregate, set copies it back.
func NewRoot[T, R any](fields []string, get func(*T) R, set func(*T, R)) *Field[T] {
	return &Field[T]{
		Key: "", Name: "root", Kind: KindRoot, Fields: fields,
		value: func(t *T) any { return get(t) },
		decode: func(t *T, d Decoder) error {
			var r R
			if err := d.Decode(&r); err != nil {
				return err
			}
			set(t, r)
			return nil
		},
		assign: func(t *T, v any) error {
			r, ok := v.(R)
			if !ok {
				return fmt.Errorf("root entry: have %T, want %T", v, r)
			}
			set(t, r)
			return nil
		},
	}
}

// NewPartition is the accessor of a partitioned slice field with elements
// of type E.
func NewPartition[T, E any](key, name string, ptr func(*T) *[]E) *Field[T] {
	return &Field[T]{
		Key: key, Name: name, Kind: KindPartition,
		value: func(t *T) any { return *ptr(t) },
		addr:  func(t *T) any { return ptr(t) },
		decode: func(t *T, d Decoder) error {
			s := ptr(t)
			if err := d.Decode(s); err != nil {
				return err
			}
			if *s == nil {
				*s = []E{}
			}
			return nil
		},
		assign: func(t *T, v any) error { return assignTo(ptr(t), v, key) },
		length: func(t *T) int { return len(*ptr(t)) },
		elem:   func(t *T, i int) any { return (*ptr(t))[i] },
		decodeElem: func(t *T, d Decoder) error {
			// Decode in place: no element is allocated and copied.
			s := ptr(t)
			var zero E
			*s = append(*s, zero)
			if err := d.Decode(&(*s)[len(*s)-1]); err != nil {
				*s = (*s)[:len(*s)-1]
				return err
			}
			return nil
		},
		setElem: func(t *T, i int, v any) error {
			s := *ptr(t)
			if i < 0 || i >= len(s) {
				return ErrNotFound
			}
			e, ok := v.(E)
			if !ok {
				return fmt.Errorf("%s: have %T, want %T", ElemKey(key, i), v, e)
			}
			s[i] = e
			return nil
		},
		appendVal: func(t *T, v any) error {
			e, ok := v.(E)
			if !ok {
				return fmt.Errorf("%s: have %T, want %T", key, v, e)
			}
			*ptr(t) = append(*ptr(t), e)
			return nil
		},
		reset: func(t *T, n int) { *ptr(t) = make([]E, 0, min(n, 1024)) },
		decodeInto: func(d Decoder) (any, error) {
			var e E
			err := d.Decode(&e)
			return e, err
		},
	}
}

func assignTo[V any](p *V, v any, key string) error {
	x, ok := v.(V)
	if !ok {
		return fmt.Errorf("entry %s: have %T, want %T", key, v, x)
	}
	*p = x
	return nil
}

// Lookup describes one lookup (index table, or native index where a store
// has them) of aggregate class T.
type Lookup[T any] struct {
	// Name is the lookup's name, e.g. "cityStars"; stores name their
	// index tables after it ("Hotel.cityStars", "Hotel__cityStars").
	Name string
	// Unique lookups map each value to at most one block.
	Unique bool
	// Parts is the number of key parts of a value (2 for city, stars).
	Parts int
	// Fields are the entry keys of the top-level fields the values are
	// read from: a write of any other entry leaves the lookup alone.
	Fields []string
	// Values returns the encoded values an aggregate holds, sorted and
	// distinct (the generated _<agg><Lookup>Values function), zero values
	// included: Keys leaves out the ones the lookup does not index.
	Values func(*T) [][]byte
	// Table is set for `noam:"lookup,table"`: the lookup stays an index
	// table also on stores with native secondary indexes (MongoDB).
	Table bool
	// IndexZero is set for `noam:"lookup,unique,zeros"`: zero values of a
	// unique lookup are indexed like any other.
	IndexZero bool
	// Paths describe the parts, in order, to stores that index the
	// aggregate's own fields (MongoDB's native indexes).
	Paths []LookupPath
}

// LookupPath is one part of a lookup as stored in a document.
type LookupPath struct {
	// Path is the dotted path of the value in the block's document,
	// slice steps left out: "city", "address.zip", "games.game".
	Path string
	// Kind is the kind of the part's values.
	Kind PartKind
	// Multi is set when the path goes through a slice (an aggregate may
	// hold several values: a multikey index).
	Multi bool
}

// PartKind is the kind of a lookup part's values (the key codec's
// component types).
type PartKind uint8

const (
	PartString PartKind = iota
	PartInt
	PartUint
)

// Reads reports whether the lookup reads the entry with key k.
func (l *Lookup[T]) Reads(k string) bool { return slices.Contains(l.Fields, k) }

// SkipsZeros reports whether the lookup leaves values with a zero part
// ("", 0) out: a unique lookup does, like a partial unique index or SQL's
// NULL, so that any number of aggregates may hold one, unless it indexes
// them (IndexZero, noam:"lookup,unique,zeros"). This is the one place the
// rule is written: Keys and Indexes apply it, and stores with native
// indexes (MongoDB) express it as their index filter.
func (l *Lookup[T]) SkipsZeros() bool { return l.Unique && !l.IndexZero }

// Indexes reports whether the lookup indexes the encoded value: false for
// a value with a zero part when the lookup SkipsZeros. GetBy of such a
// value is ErrNotFound.
func (l *Lookup[T]) Indexes(value []byte) bool { return !l.SkipsZeros() || !hasZeroPart(value) }

// Keys returns the encoded values of t that the lookup indexes, sorted and
// distinct: Values, less those Indexes refuses. Stores index these.
func (l *Lookup[T]) Keys(t *T) [][]byte {
	vals := l.Values(t)
	if !l.SkipsZeros() {
		return vals
	}
	out := vals[:0]
	for _, v := range vals {
		if !hasZeroPart(v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Counter describes enumerable block keys (noam:"id,counter").
type Counter[K any] struct {
	// Split returns the scope of a block key (the encoded parts before the
	// counted one; nil for a scalar key) and its counted number.
	Split func(K) (scope []byte, n int64)
	// With returns the key with the counted number set to n.
	With func(K, int64) K
}

// Desc describes an aggregate class T with block keys K to store adapters.
// noamgen emits one per aggregate, in the store-independent file.
type Desc[T any, K comparable] struct {
	// Aggregate is the Go type name, used in errors ("Game").
	Aggregate string
	// Collection is the collection name; "" means the Aggregate name.
	Collection string
	// Keys encodes block keys, order-preserving.
	Keys KeyCodec[K]
	// ID points at the block key of an aggregate.
	ID func(*T) *K
	// EAO is set for strategy=eao: Root is then the root entry.
	EAO bool
	// Root is the root entry of an EAO aggregate, nil under ETF.
	Root *Field[T]
	// Fields are the persisted top-level fields but the id and the
	// version, in declaration order (partitions included).
	Fields []*Field[T]
	// Version is the version entry, nil if the aggregate has none.
	Version *Field[T]
	// Created and Updated are the timestamp fields (noam:"created",
	// noam:"updated": time.Time fields of Fields, under ETF), nil when
	// the aggregate has none. The repository sets them (Stamp); adapters
	// write them as any field, but for Put, which keeps the created entry
	// of a block that exists (see Store).
	Created, Updated *Field[T]
	// Expires is the expiry field (noam:"expires": a time.Time field of
	// Fields, or of the root entry under EAO), nil when the aggregate
	// never expires. From the moment it holds passes (Expired), the
	// repository treats the block as absent (runtime/expire.go).
	Expires *Field[T]
	// Lookups are the aggregate's lookups.
	Lookups []*Lookup[T]
	// Counter is set for enumerable block keys.
	Counter *Counter[K]
	// NewID, set for `noam:"id,uuid"` (UUIDKey), makes the id of an
	// aggregate that Create or CreateMany is given with the zero id.
	NewID func() (K, error)

	byKey map[string]*Field[T]
}

// Init completes the descriptor and checks it; generated code calls it
// once, when the package is initialised.
func (d *Desc[T, K]) Init() *Desc[T, K] {
	if d.Collection == "" {
		d.Collection = d.Aggregate
	}
	d.byKey = make(map[string]*Field[T], len(d.Fields)+2)
	for _, f := range d.Fields {
		if _, dup := d.byKey[f.Key]; dup {
			panic("noam: " + d.Aggregate + ": two fields with entry key " + f.Key)
		}
		d.byKey[f.Key] = f
	}
	if d.Version != nil {
		d.byKey[d.Version.Key] = d.Version
	}
	if d.EAO != (d.Root != nil) {
		panic("noam: " + d.Aggregate + ": an EAO descriptor needs a root entry, and only it")
	}
	for _, f := range []*Field[T]{d.Created, d.Updated} {
		if f != nil && (d.EAO || d.byKey[f.Key] != f || f.Kind != KindField) {
			panic("noam: " + d.Aggregate + ": a timestamp must be a top-level field of an ETF descriptor")
		}
	}
	return d
}

// Stamp sets t's timestamps for a write at now: updated, and created too
// when created is set (a new block). It returns a function that puts the
// values t held back, for a write that failed.
func (d *Desc[T, K]) Stamp(t *T, now time.Time, created bool) (undo func()) {
	var undos []func()
	for _, f := range []*Field[T]{d.Updated, d.Created} {
		if f == nil || f == d.Created && !created {
			continue
		}
		old := f.Value(t)
		_ = f.Assign(t, now)
		undos = append(undos, func() { _ = f.Assign(t, old) })
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}
}

// Field finds a field accessor by entry key (the version included).
func (d *Desc[T, K]) Field(key string) *Field[T] { return d.byKey[key] }

// New returns a new aggregate with block key id.
func (d *Desc[T, K]) New(id K) *T {
	t := new(T)
	*d.ID(t) = id
	return t
}

// Partitions lists the partitioned fields.
func (d *Desc[T, K]) Partitions() []*Field[T] {
	var out []*Field[T]
	for _, f := range d.Fields {
		if f.Kind == KindPartition {
			out = append(out, f)
		}
	}
	return out
}

// VersionOf is t's version, 0 when the aggregate has none.
func (d *Desc[T, K]) VersionOf(t *T) int64 {
	if d.Version == nil {
		return 0
	}
	return d.Version.Value(t).(int64)
}

// SetVersion sets t's version, if the aggregate has one.
func (d *Desc[T, K]) SetVersion(t *T, v int64) {
	if d.Version != nil {
		_ = d.Version.Assign(t, v)
	}
}

// VersionKey is the version entry's key, "" if there is none.
func (d *Desc[T, K]) VersionKey() string {
	if d.Version == nil {
		return ""
	}
	return d.Version.Key
}

// Entries lists the entry keys of a block holding t, in the order the
// layout defines them (the model's layout, instantiated): the root entry
// "" under EAO (or, under ETF, one entry per non-partitioned field), then
// for each partition its element count key and its elements key[i], then
// the version entry. Every store writes exactly these entries (in its own
// physical form); the conformance suite checks it.
func (d *Desc[T, K]) Entries(t *T) []string {
	var out []string
	if d.EAO {
		out = append(out, "")
	}
	for _, f := range d.Fields {
		switch {
		case f.Kind == KindPartition:
			out = append(out, f.Key)
			for i := range f.Len(t) {
				out = append(out, f.ElemKey(i))
			}
		case !d.EAO:
			out = append(out, f.Key)
		}
	}
	if d.Version != nil {
		out = append(out, d.Version.Key)
	}
	return out
}

// Lookups of a set of entry keys: the lookups that read any of them.
func (d *Desc[T, K]) LookupsOf(keys ...string) []*Lookup[T] {
	var out []*Lookup[T]
	for _, l := range d.Lookups {
		for _, k := range keys {
			if l.Reads(k) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// Change is one entry-level change of a block: a whole field (Set), one
// element of a partition (SetAt), or an addition to a number field (Add).
type Change[T any] struct {
	Field *Field[T]
	// Elem is set for element Index of a partition.
	Elem  bool
	Index int
	Value any
	// Add is set for the change that adds Delta to a number field
	// (Field.Number): the store adds it in its atomic write, to the
	// stored value (0 when the block has no entry for the field yet),
	// and refuses the write (ErrOutOfRange, see OutOfRange) when the sum
	// would leave [Field.Min, Field.Max]. Value is unused.
	Add   bool
	Delta int64
	// Result, for an add change, receives the field's new value when
	// the write succeeds. An Update holds at most one change with a
	// Result.
	Result *int64
}

// Set is the change that writes field f of a block with value v.
func Set[T any](f *Field[T], v any) Change[T] { return Change[T]{Field: f, Value: v} }

// SetAt is the change that replaces element i of partition f with v.
func SetAt[T any](f *Field[T], i int, v any) Change[T] {
	return Change[T]{Field: f, Elem: true, Index: i, Value: v}
}

// AddTo is the change that adds delta to number field f; result, when not
// nil, receives the new value.
func AddTo[T any](f *Field[T], delta int64, result *int64) Change[T] {
	return Change[T]{Field: f, Add: true, Delta: delta, Result: result}
}

// AddBounds is the rule of an add change, written once for every store:
// the stored values (a missing entry is 0) from which adding Delta stays
// within [Field.Min, Field.Max] are those in [lo, hi]; ok is false when
// there are none (Delta is wider than the type's range). Stores check
// that the stored value lies in [lo, hi] in the same atomic write as
// the addition, and fail with OutOfRange otherwise.
func (c Change[T]) AddBounds() (lo, hi int64, ok bool) {
	// Neither bound wraps: Max >= 0 and Delta >= 0 give Max-Delta >=
	// -MaxInt64; Min < 0 and Delta < 0 give Min-Delta <= MaxInt64.
	lo, hi = c.Field.Min, c.Field.Max
	if c.Delta >= 0 {
		hi -= c.Delta
	} else {
		lo -= c.Delta
	}
	return lo, hi, lo <= hi
}

// Sum is the value of the field after the add change, from the stored
// value old (0 for a missing entry); ok is false when the sum leaves the
// field's range, and the store must then write nothing (OutOfRange).
func (c Change[T]) Sum(old int64) (int64, bool) {
	lo, hi, ok := c.AddBounds()
	if !ok || old < lo || old > hi {
		return 0, false
	}
	return old + c.Delta, true
}

// OutOfRange is the error of an add change that would leave the field's
// range: an *Error of kind ErrOutOfRange of operation op on block id,
// naming the field, the delta and the range. Nothing was written.
func OutOfRange[T any](op, agg string, id any, c Change[T]) error {
	return FailAt(op, agg, printableID(id), fmt.Sprintf("%s %+d (outside [%d, %d], the range of field %s)", c.Field.Key, c.Delta, c.Field.Min, c.Field.Max, c.Field.Name), ErrOutOfRange, nil)
}

// Entry is the entry key the change writes: "firstPlayer", "rounds[3]".
func (c Change[T]) Entry() string {
	if c.Elem {
		return c.Field.ElemKey(c.Index)
	}
	return c.Field.Key
}

// Apply makes the change on t, an aggregate as read (only the fields the
// change's lookups read need to be there): it fails with ErrNotFound for
// an element t does not have.
func (c Change[T]) Apply(t *T) error {
	if c.Add {
		v, ok := c.Sum(c.Field.Int(t))
		if !ok {
			return ErrOutOfRange
		}
		c.Field.SetInt(t, v)
		return nil
	}
	if c.Elem {
		return c.Field.SetElem(t, c.Index, c.Value)
	}
	return c.Field.Assign(t, c.Value)
}

// Update is a set of entry-level changes written together, atomically:
// a generated TUpdate turns into one.
type Update[T any] struct {
	// Changes in the order given; element changes of one partition come
	// in index order.
	Changes []Change[T]
	// IfVersion, when not 0, is the version the block must have.
	IfVersion int64
}

// Keys lists the keys of the top-level fields the update writes (each
// once); a change of the EAO root entry writes every field in it.
func (u Update[T]) Keys() []string {
	var out []string
	for _, c := range u.Changes {
		keys := []string{c.Field.Key}
		if c.Field.Kind == KindRoot {
			keys = c.Field.Fields
		}
		for _, k := range keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}
