// Package model is the store-independent NoAM (NoSQL Abstract Model) description
// of an application's aggregates, shared by the parser (which builds it from
// tagged Go structs) and the generator and templates (which turn it into
// store-specific repositories).
//
// Vocabulary, after Bugiotti et al., "Database Design for NoSQL Systems":
//   - an aggregate class is a Collection of blocks;
//   - an aggregate is a block, identified by its block key (the id field);
//   - a block holds entries; an entry key is an access path such as
//     "firstName" or "rounds[3]".
//
// How the aggregate's value is split into entries is the partitioning
// strategy: one entry for the whole aggregate (EAO), one per top-level field
// (ETF), and, on top of either, one entry per element of a partitioned slice.
package model

import (
	"go/token"
	"go/types"
	"strconv"
)

// Strategy is the data representation strategy of an aggregate class.
type Strategy int

const (
	// ETF (Entry per Top-level Field) stores each top-level field as its own entry.
	ETF Strategy = iota
	// EAO (Entry per Aggregate Object) stores the aggregate (except its
	// partitioned fields) as one entry.
	EAO
)

func (s Strategy) String() string {
	if s == EAO {
		return "eao"
	}
	return "etf"
}

// Schema is everything noamgen knows about one Go package.
type Schema struct {
	PkgPath    string // import path of the package
	PkgName    string // package name
	Dir        string // directory of the package
	Aggregates []*Aggregate
	// Decls are the package's own top-level declarations (test files
	// included, noamgen's generated files excluded), by name, so that the
	// generator can refuse names it would declare twice.
	Decls map[string]token.Position
}

// Aggregate finds an aggregate by Go type name.
func (s *Schema) Aggregate(name string) *Aggregate {
	for _, a := range s.Aggregates {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Aggregate is one aggregate class: a Go struct type marked with
// a blank field _ struct{} tagged noam:"aggregate,...". It maps to one collection of blocks.
type Aggregate struct {
	Name       string         // Go type name, e.g. "Game"
	Collection string         // collection name, e.g. "Game"
	Strategy   Strategy       // EAO or ETF
	Pos        token.Position // position of the type name
	// CollectionPos is the position of the marker tag that names the
	// collection (collection=NAME); not valid when the type name does.
	CollectionPos token.Position
	File          string     // file declaring the type
	StructType    types.Type // the named struct type

	// Fields are the persisted top-level fields in declaration order,
	// including the id and version fields. Skipped fields are not listed.
	Fields []*Field
	// ID is the block key field.
	ID *Field
	// Version is the optional optimistic-concurrency version entry.
	Version *Field
	// Created and Updated are the optional timestamp fields
	// (`noam:"created"`, `noam:"updated"`, time.Time, ETF only): Create
	// sets both, every write sets Updated in the same atomic write.
	Created, Updated *Field
	// Expires is the optional expiry field (`noam:"expires"`, time.Time):
	// from the moment it holds passes, the aggregate is absent from every
	// read; the zero time means never.
	Expires *Field
	// IDParts are the parts of a composite block key, when the id field is a
	// struct (e.g. a comment keyed by post and sequence number); nil for a
	// scalar block key. Parts are encoded in order.
	IDParts []KeyPart
	// Counter is set for `noam:"id,counter"`: block keys are allocated from
	// an atomic per-collection counter (enumerable keys). For a composite
	// key, the last part is allocated per value of the other parts (the
	// scope), so the children of one parent get ids 1, 2, 3, ...
	Counter bool
	// UUID is "v7" or "v4" for `noam:"id,uuid"` (uuid=v4): Create gives an
	// aggregate whose id is the zero value a new UUID of that version; ""
	// otherwise. The id is a string or a [16]byte.
	UUID string
	// Lookups are the index tables maintained for the aggregate.
	Lookups []*Lookup

	// StructFields lists every field of the Go struct in order (persisted or
	// not), so that generated code can assert at compile time that the struct
	// has not changed since generation.
	StructFields []StructField
}

// StructField is one field of the aggregate's Go struct as declared.
type StructField struct {
	Name string
	Type types.Type
}

// Field is a persisted top-level field of an aggregate.
type Field struct {
	GoName string     // Go field name, e.g. "FirstName"
	Key    string     // entry key / stored name, e.g. "firstName"
	Type   types.Type // field type
	Pos    token.Position

	IsID      bool
	IsVersion bool
	// IsCreated and IsUpdated mark the timestamp fields: ordinary
	// entries that only the runtime writes (no setter, no TUpdate field).
	IsCreated, IsUpdated bool
	// IsExpires marks the expiry field: an ordinary entry (it has a
	// setter) that the repository reads to hide expired aggregates.
	IsExpires bool
	// IsAdd marks a signed integer field that writes may add to
	// (`noam:"add"`, ETF only): it gets AddF and TUpdate.AddF besides
	// its setter.
	IsAdd bool

	// Partition is set for `partition=FIELD` slice fields: each element is
	// its own entry FIELD[i]. Elem is the element type.
	Partition bool
	Elem      types.Type

	// Refs lists the references to other aggregates held by this field or
	// by values nested in it (paths relative to the field).
	Refs []Ref
}

// Ref is a reference to another aggregate's block key.
type Ref struct {
	// Path is the access path of the referencing value inside the aggregate,
	// e.g. "firstPlayer" or "games[].opponent".
	Path string
	// Target is the referenced aggregate's type name.
	Target string
	// GoPath is the Go selector path from the aggregate value, with "[]"
	// marking a slice step, e.g. "Games[].Opponent".
	GoPath string
	Type   types.Type     // type of the referencing value (the key type)
	Pos    token.Position // the field declaring the ref
	Decl   string         // that field as Type.Field, e.g. "GameRef.Opponent"
}

// KeyPart is one part of a composite block key.
type KeyPart struct {
	GoName string
	Key    string
	Type   types.Type
}

// Scope is the scope of a counter: the composite key parts before the
// counted one (nil for a scalar counter).
func (a *Aggregate) Scope() []KeyPart {
	if len(a.IDParts) == 0 {
		return nil
	}
	return a.IDParts[:len(a.IDParts)-1]
}

// Lookup is an index table: it maps the values of one or more fields (the
// parts) to the block keys of the aggregates holding them, and is kept
// right by every generated write.
type Lookup struct {
	// Name is the lookup's name, e.g. "city" or "cityStars"; method names
	// are built from it (ListByCityStars).
	Name string
	// Title is the exported form of the name in method and type names
	// (GetBySKU, ListByAddressZip, HotelCityStarsQuery): the Go field
	// path, with its initialisms, for a lookup named after its field;
	// the name with its first letter upper-cased for a lookup given a
	// name (lookup=cityStars). Name, not Title, names what is stored.
	Title  string
	Unique bool
	Parts  []LookupPart
	Pos    token.Position
	// IndexZero is set for `noam:"lookup,unique,zeros"`: the zero value of
	// a unique lookup is indexed like any other (held by at most one
	// aggregate). By default a unique lookup leaves zero values out, as SQL
	// does NULL: any number of aggregates may hold one, and GetByF of the
	// zero value is runtime.ErrNotFound. Only unique lookups have it.
	IndexZero bool
	// Table is set for `noam:"lookup,table"`: the lookup is kept in an
	// index table (a collection of its own, maintained by every write) on
	// every store, also where the store has native secondary indexes
	// (MongoDB). Choose it when the collection is sharded and the lookup
	// must be globally unique or must not fan out to every shard: a
	// native unique index on a sharded collection must start with the
	// shard key. Stores without native secondary indexes (bbolt, Redis,
	// DynamoDB) always use index tables.
	Table bool
}

// Multi reports whether an aggregate can have several values of the lookup
// (its part goes through a slice).
func (l *Lookup) Multi() bool {
	for _, p := range l.Parts {
		if p.Multi {
			return true
		}
	}
	return false
}

// LookupPart is one indexed value of a lookup.
type LookupPart struct {
	// Path is the access path of the value, e.g. "city", "address.city",
	// "games[].game".
	Path string
	// GoPath is the Go selector path from the aggregate, "[]" marking a
	// slice step, e.g. "Games[].Game".
	GoPath string
	// Name is the Go name of the part in generated query types, e.g. "City".
	Name  string
	Type  types.Type // type of the indexed value (a string or integer type)
	Field *Field     // the top-level field that holds the value
	Multi bool       // the path goes through a slice
}

// LookupsOf lists the lookups that have a part inside field f.
func (a *Aggregate) LookupsOf(f *Field) []*Lookup {
	var out []*Lookup
	for _, l := range a.Lookups {
		for _, p := range l.Parts {
			if p.Field == f {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// Entry is one entry class of an aggregate's blocks.
type Entry struct {
	// Key is the entry key: a field key, "" for the EAO root entry, or
	// "rounds[]" for the elements of a partitioned field.
	Key string
	// Fields are the top-level fields whose values make up the entry.
	Fields []*Field
	// Partition is set when the entry stands for each element of a
	// partitioned slice field.
	Partition bool
	// Version is set for the version entry.
	Version bool
	// Timestamp is "created" or "updated" for a timestamp entry, "" for
	// any other.
	Timestamp string
}

// FieldKey is the key of the field behind the entry class: Key, but for a
// partition the field key ("rounds"), which is also the key of the
// partition's element count entry.
func (e Entry) FieldKey() string {
	if e.Partition {
		return e.Fields[0].Key
	}
	return e.Key
}

// ElemKey is the key of element i of a partition entry class: "rounds[3]".
func (e Entry) ElemKey(i int) string { return ElemKey(e.FieldKey(), i) }

// ElemNotation is the elements of a partition entry class in the
// notation of documentation: "rounds[i]".
func (e Entry) ElemNotation() string { return e.FieldKey() + "[i]" }

// Keys lists the entries of the class that a block whose partitions hold
// n elements stores: its key, or for a partition the element count
// ("rounds") and the elements "rounds[0]".."rounds[n-1]".
func (e Entry) Keys(n int) []string {
	if !e.Partition {
		return []string{e.Key}
	}
	out := make([]string, 0, 1+n)
	out = append(out, e.FieldKey())
	for i := range n {
		out = append(out, e.ElemKey(i))
	}
	return out
}

// ElemKey is the entry key of element i of the partitioned field with key
// key: "rounds[3]". runtime.ElemKey writes the same at run time.
func ElemKey(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// WriteOut lists the entry keys of a block whose partitions hold n
// elements each, in the order of Entries: the root entry "" under EAO
// (under ETF one key per field), the element count and elements of each
// partition, the version. Every store writes exactly these entries, in its
// own physical form; runtime.Desc.Entries lists them for an aggregate.
func (a *Aggregate) WriteOut(n int) []string {
	var out []string
	for _, e := range a.Entries() {
		out = append(out, e.Keys(n)...)
	}
	return out
}

// Entries lists the aggregate's entry classes, the layout every store
// writes: under EAO one root entry "" for every non-partitioned field but
// the id and the version, under ETF one entry per such field; then one
// entry class per partitioned field (an element count and one entry per
// element, key "f[]"); then the version entry, which is always an entry of
// its own (so that entry-level writes bump it without rewriting the root).
// The id is the block key, not an entry.
func (a *Aggregate) Entries() []Entry {
	var out []Entry
	if a.Strategy == EAO {
		out = append(out, Entry{Key: "", Fields: a.Root()})
	}
	for _, f := range a.Fields {
		switch {
		case f.IsID, f.IsVersion:
		case f.Partition:
			out = append(out, Entry{Key: f.Key + "[]", Fields: []*Field{f}, Partition: true})
		case a.Strategy == ETF:
			out = append(out, Entry{Key: f.Key, Fields: []*Field{f}, Timestamp: f.Timestamp()})
		}
	}
	if a.Version != nil {
		out = append(out, Entry{Key: a.Version.Key, Fields: []*Field{a.Version}, Version: true})
	}
	return out
}

// Timestamp is "created" or "updated" for a timestamp field, "" for any
// other.
func (f *Field) Timestamp() string {
	switch {
	case f.IsCreated:
		return "created"
	case f.IsUpdated:
		return "updated"
	}
	return ""
}

// Settable lists the fields that get their own entry-level setter: the
// non-id, non-version, non-partitioned fields of an ETF aggregate but the
// timestamps, which only the runtime writes.
func (a *Aggregate) Settable() []*Field {
	if a.Strategy == EAO {
		return nil
	}
	var out []*Field
	for _, f := range a.Fields {
		if !f.IsID && !f.IsVersion && !f.Partition && f.Timestamp() == "" {
			out = append(out, f)
		}
	}
	return out
}

// Addable lists the fields writes may add to (noam:"add"): settable
// signed integer fields of an ETF aggregate.
func (a *Aggregate) Addable() []*Field {
	var out []*Field
	for _, f := range a.Settable() {
		if f.IsAdd {
			out = append(out, f)
		}
	}
	return out
}

// Partitions lists the partitioned fields.
func (a *Aggregate) Partitions() []*Field {
	var out []*Field
	for _, f := range a.Fields {
		if f.Partition {
			out = append(out, f)
		}
	}
	return out
}

// Root lists the fields of the EAO root entry: all persisted fields but
// the id, the version and the partitioned ones.
func (a *Aggregate) Root() []*Field {
	var out []*Field
	for _, f := range a.Fields {
		if !f.IsID && !f.Partition && !f.IsVersion {
			out = append(out, f)
		}
	}
	return out
}

// Refs lists every reference held by the aggregate.
func (a *Aggregate) Refs() []Ref {
	var out []Ref
	for _, f := range a.Fields {
		out = append(out, f.Refs...)
	}
	return out
}

// KeyKind classifies a block key type for key codecs.
type KeyKind int

const (
	KeyString KeyKind = iota // string kinds
	KeyInt                   // signed integer kinds
	KeyUint                  // unsigned integer kinds
)

// KindOf reports the key kind of an id type (its underlying basic type).
func KindOf(t types.Type) KeyKind {
	b, _ := t.Underlying().(*types.Basic)
	if b == nil {
		return KeyString
	}
	switch {
	case b.Info()&types.IsString != 0:
		return KeyString
	case b.Info()&types.IsUnsigned != 0:
		return KeyUint
	default:
		return KeyInt
	}
}
