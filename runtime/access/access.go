// Package access declares, as data, how a store adapter lays out the
// blocks of an aggregate class and what each repository operation sends to
// the store: the commands in order, how many requests they are (round
// trips), and what is atomic. Each adapter keeps its declaration in a leaf
// package of its own (runtime/<store>store/layout), which imports nothing
// but this package, so that the generator and `noamgen explain` can read
// it without linking a database driver.
//
// One renderer reads every declaration: Render gives the text `noamgen
// explain` shows (package explain), and Requests evaluates the same steps
// to the number of requests an operation sends for given data, which the
// conformance suite (runtime/storetest) compares with what the adapter
// really sends. A declaration that says one request where the adapter
// sends two fails that check.
//
// Texts are templates: $-variables are replaced by the aggregate's names
// (see Vars), so that one declaration serves every aggregate class.
package access

import (
	"slices"
	"strings"
)

// Method is a repository operation, named as in explain's JSON format.
type Method string

// The operations of a generated repository (runtime.Repo).
const (
	Get       Method = "get"
	GetMany   Method = "getMany"
	Create    Method = "create"
	Put       Method = "put"
	Delete    Method = "delete"
	Set       Method = "set"       // one top-level field (SetX)
	Add       Method = "add"       // add to one number field (AddX)
	SetAt     Method = "setAt"     // one element of a partition (SetXAt)
	Append    Method = "append"    // one element at the end of a partition
	Update    Method = "update"    // several entries at once
	ListElems Method = "listElems" // a page of one partition's elements
	List      Method = "list"
	All       Method = "all"
	ListScope Method = "listScope" // the blocks of one scope of a counter
	ListBy    Method = "listBy"
	GetBy     Method = "getBy"
	Repair    Method = "repair"
	Ensure    Method = "ensureIndexes"
	Migrate   Method = "migrate" // rewrite blocks stored in an older layout

	Count      Method = "count"      // the number of blocks
	CountBy    Method = "countBy"    // the number of blocks a lookup finds
	CountScope Method = "countScope" // the number of blocks of one scope of a counter
	CreateMany Method = "createMany"
	PutMany    Method = "putMany"
	DeleteMany Method = "deleteMany"
	Sweep      Method = "sweep" // remove expired blocks
)

// Cond is a condition on the aggregate class and the operation, as a set
// of facts that must all hold (the zero Cond always holds).
type Cond uint32

const (
	// HasLookups: the aggregate has lookups; NoLookups: none.
	HasLookups Cond = 1 << iota
	NoLookups
	// HasTables: some lookup is kept in an index table (all are, on a
	// store without native indexes; on MongoDB those with the table
	// option); NoTables: none is.
	HasTables
	NoTables
	// HasNative: some lookup is a native index (Store.Native).
	HasNative
	HasVersion
	NoVersion
	// HasCounter: block keys come from a counter; Scoped: per scope.
	HasCounter
	NoCounter
	Scoped
	NotScoped
	HasPartitions
	EAO
	ETF
	// Writes: the operation writes entries of an index table (of the
	// lookups it changes); NoWrites: of none.
	Writes
	NoWrites
	// WritesUnique: of a unique lookup.
	WritesUnique
	// WritesNative: the operation may change the entries of a lookup
	// kept in a native index (of a lookup it changes, as Writes).
	WritesNative
	// ByTable: the lookup of GetBy or ListBy is an index table; ByNative:
	// a native index.
	ByTable
	ByNative
	// UniqueLookup, OtherLookup: for a step repeated per lookup (Each),
	// the lookup is unique, or not.
	UniqueLookup
	OtherLookup
	// Indexed: the aggregate has index tables, or scope items of a
	// counter in one (Store.ScopeItems); NotIndexed: neither.
	Indexed
	NotIndexed
	// HasCreated: the aggregate has a created timestamp (a Put keeps
	// the stored one).
	HasCreated
	// HasExpires: the aggregate has an expires field (reads leave the
	// expired blocks out); NoExpires: it has none.
	HasExpires
	NoExpires
)

// Lookup is one lookup of an aggregate class.
type Lookup struct {
	Name   string
	Unique bool
	// Table: kept in an index table (noam:"lookup,table"); on stores
	// without native indexes every lookup is.
	Table bool
	// Paths are the indexed paths in order ("city", "games[].game").
	Paths []string
	// Multi: a path goes through a slice.
	Multi bool
	// Zeros: a unique lookup that indexes zero values.
	Zeros bool
}

// Field is a persisted top-level field of an aggregate (the id left out).
type Field struct {
	Key       string
	Type      string // Go type, as explain shows it
	Elem      string // a partition's element type
	Partition bool
	Version   bool
	// Created, Updated: the timestamp fields (noam:"created",
	// noam:"updated").
	Created, Updated bool
	// Expires: the expiry field (noam:"expires").
	Expires bool
}

// Shape is an aggregate class as declarations see it, whatever the
// language it was read from (the model, or a runtime.Desc).
type Shape struct {
	Collection string
	EAO        bool
	// Key is the example block key explain shows (2345, or 2345/3 for a
	// composite key): each part's key ("" for a scalar key) and value, a
	// string or an int64.
	Key     []KeyValue
	Fields  []Field
	Lookups []Lookup
	Counter bool
	// Scope names the parts a counter counts within (composite keys).
	Scope []string
}

// KeyValue is one part of an example block key.
type KeyValue struct {
	Key   string
	Value any
}

// Op is one operation of one aggregate class: what Render and Requests
// evaluate a declaration for.
type Op struct {
	Method Method
	// Field is the entry key of the field Set, Add, SetAt, Append and
	// ListElems work on.
	Field string
	// Lookup is the lookup of GetBy and ListBy.
	Lookup string
	// Writes names the lookups whose index entries the operation may
	// change (explain's Access.WritesIndex).
	Writes []string
}

// Term is a quantity a request count depends on, the unit of a
// round-trip formula ("1 per page"). Each is written for the facts of
// one operation; "$index" terms are counted per lookup (Step.Each).
type Term string

// The terms declarations use. A new one needs a value in every
// conformance scenario (runtime/storetest) that meets it.
const (
	PerGained       Term = "per index entry gained"
	PerLost         Term = "per index entry lost"
	PerValueGained  Term = "per new value of $index"
	IfGains         Term = "if $index gains entries"
	IfLoses         Term = "if $index loses entries"
	PerEntry        Term = "per index entry of the block"
	IfAllocates     Term = "if the counter allocates the key"
	IfKeyGiven      Term = "if the key's number is given"
	IfIndexedChange Term = "if the changes touch an indexed field"
	// IfNativePartial: the changes set some but not all fields of a
	// lookup kept in a native index whose entry the write sets itself
	// (DynamoDB's GSIs): the others are read first.
	IfNativePartial  Term = "if the changes set some but not all fields of a GSI lookup (and no indexed field)"
	IfRecreated      Term = "if the block was created again meanwhile"
	IfAppendFallback Term = "if the single-request append is refused"
	// IfProjectionRefused: the first findAndModify with a projection on a
	// client of a server that refuses it (FerretDB v1) is sent again
	// without one.
	IfProjectionRefused Term = "the first time per client on a server that refuses findAndModify projections (FerretDB)"
	// IfSliceRefused: the first find with a $slice projection on a client
	// of a server that refuses it (FerretDB v1) is sent again without.
	IfSliceRefused Term = "the first time per client on a server that refuses $slice projections (FerretDB)"
	// IfNoProjection: the server has no projection in findAndModify
	// (FerretDB v1): an append reads the length, then updates.
	IfNoProjection Term = "on a server without findAndModify projections (FerretDB)"
	PerPage        Term = "per page"
	PerBatch       Term = "per batch of entries"
	PerStale       Term = "per stale entry removed"
	PerRetry       Term = "per retry of unprocessed keys"
	Per100Keys     Term = "per 100 keys"
	Per100Elements Term = "per 100 elements"
	PerMaster      Term = "per master"
	PerCollection  Term = "per collection and index"
	PerTable       Term = "per table (create, then describe until active)"
	PerBlocks      Term = "per 100 blocks"
	PerRepairBatch Term = "per batch of blocks and entries"
	// PerMigrateBatch, PerMigrateBlock, PerMigrated: Migrate's batches of
	// blocks (MigrateOptions.Batch), the blocks read, those rewritten.
	PerMigrateBatch Term = "per batch of blocks"
	PerMigrateBlock Term = "per block"
	PerMigrated     Term = "per block rewritten"
	// PerExpired: the expired blocks Sweep removes, each on its own
	// (its batches of blocks are PerMigrateBatch).
	PerExpired Term = "per expired block"
	// Per25Items: the items of a batch write (CreateMany, PutMany,
	// DeleteMany) by 25 (DynamoDB's BatchWriteItem); PerItemCall: the
	// requests of each item's single call, as its method (create, put,
	// delete) declares them.
	Per25Items  Term = "per 25 items"
	PerItemCall Term = "per request of each item's single call"
	// Per100Actions: the writes of a batch packed into transactions of up
	// to 100 actions (DynamoDB's TransactWriteItems).
	Per100Actions Term = "per 100 transaction actions"
	// PerScope, PerScopeGiven: the counter scopes of a CreateMany with
	// a counter (one counter per scope; one for a counter without
	// scopes) that have items to allocate, and those whose items give
	// numbers explicitly (the counter is raised to the largest).
	PerScope      Term = "per counter scope with keys to allocate"
	PerScopeGiven Term = "per counter scope with numbers given"
	// PerItemWrite: the requests of each item's single call but its
	// counter's (the batch moved the counter already).
	PerItemWrite Term = "per request of each item's single call, its counter's left out"
	// PerPipeline: the pipelines a batch's commands go in, bounded in
	// commands and bytes (Redis: redisstore.MaxPipelineCommands,
	// MaxPipelineBytes); one for a batch within both bounds.
	PerPipeline Term = "per pipeline of up to 1,000 commands and 4 MB, sent one after the other"
)

// Once reports whether t counts only the first time an operation meets it
// on a client (the client then remembers what the server refused).
func (t Term) Once() bool { return t == IfProjectionRefused || t == IfSliceRefused }

// Mode is the deployment a step belongs to, for stores whose requests
// differ between deployments (Redis: a single node, a cluster).
type Mode string

// Step is one command (or pipeline, or script run) of an operation.
type Step struct {
	// Op is what is sent, as a template; "" adds requests without a line
	// of its own.
	Op string
	// When: the step is taken only when the condition holds.
	When Cond
	// Mode, when set, limits the step to one deployment.
	Mode Mode
	// N is the number of requests (0 for an embedded store's step), per
	// Per when set.
	N   int
	Per Term
	// Each repeats the step for every lookup the operation changes
	// (Op.Writes; on a store with native indexes only those in tables),
	// with $index and $lookup set.
	Each bool
	// Entries repeats the step for every entry of the block but the EAO
	// root: $entry is its key ("firstPlayer", "rounds"), and again with
	// "/*" for the elements of a partition ("rounds/*").
	Entries bool
}

// Cost is what one operation does on the store, under conditions.
type Cost struct {
	Methods []Method
	When    Cond
	Steps   []Step
	// Atomic says what happens all-or-nothing (a template).
	Atomic string
	// Desc says how a descending page (runtime.PageRequest.Desc) differs
	// (a template). Requests counts ascending pages: a descending one
	// sends as many unless Desc says otherwise (the conformance suite's
	// DeclaredRequests checks ascending pages only).
	Desc string
}

// Container is a collection, bucket, table or key family of the layout.
type Container struct {
	When Cond
	// Each: "" once; "lookup" for every lookup; "unique" for every unique
	// lookup ($index, $lookup, $value, $indexKey set).
	Each                                  string
	Kind, Name, Role, Key, Value, Example string
}

// Stored is a row of the example block: a key (or document field) and
// what it holds.
type Stored struct {
	When Cond
	// Each: "" one row; "field" every field of its own (ETF) or of the
	// root (EAO) but partitions and the version; "partition" every
	// partition; "element" every example element of every partition;
	// "version" the version.
	Each              string
	Key, Entry, Value string
}

// Note is a fact about the layout.
type Note struct {
	When Cond
	Text string
}

// Index is a native secondary index of a lookup (MongoDB).
type Index struct {
	Keys    []string // indexed paths, in order
	Options []string
}

// Store is one adapter's declaration.
type Store struct {
	// Name is the store's flag name ("bolt"), Title its display name.
	Name, Title string
	// Embedded: the store runs in the process (no round trips).
	Embedded bool
	// Modes lists the deployments whose requests differ ("node",
	// "cluster"), nil when there is one.
	Modes []Mode
	// Native: lookups without the table option are native indexes of the
	// block's own collection.
	Native bool
	// NativeLookup, when set, says which lookups are native indexes of
	// the block's own table instead (DynamoDB: the non-unique lookups of
	// one value per block, without the table option, are global
	// secondary indexes); the others are index tables.
	NativeLookup func(l Lookup) bool
	// NativeName names the store's native index in generated docs ("a
	// native secondary index"); NativeEventual: reads through it are
	// eventually consistent (DynamoDB's GSIs), which the docs say.
	NativeName     string
	NativeEventual bool
	// KeyStyle renders the example block key ($block).
	KeyStyle KeyStyle
	// Names are templates of the store's names.
	Names Names
	// Elements is how many elements the example block's partitions hold.
	Elements int
	// ScopeItems: a counter per scope keeps one index item per block
	// (for ListBy<scope>), under the lookup protocol.
	ScopeItems bool
	// Sorted: the example block's rows are shown in the store's key order
	// (field names bytewise, elements by index).
	Sorted bool

	Summary    string
	Containers []Container
	Block      []Stored
	// NativeIndex describes the native index of a lookup, nil when the
	// store has none.
	NativeIndex func(l Lookup) Index
	Notes       []Note
	Costs       []Cost
	// ClearExpired is what the store's DeleteExpired sends for a block
	// that has not expired: the repository's writes of a block by key
	// (Put, Set, Add, SetAt, Append, Update, Delete) of an aggregate with an expires
	// field take these steps first, to remove the block had it expired
	// (runtime/expire.go, clearExpired), so that the write finds it
	// absent.
	ClearExpired []Step
}

// clearsExpired reports whether m is a write of a block by key, which
// takes the store's ClearExpired steps first for an aggregate with an
// expires field.
func clearsExpired(m Method) bool {
	switch m {
	case Put, Set, Add, SetAt, Append, Update, Delete:
		return true
	}
	return false
}

// Names are templates of the names a store derives from the aggregate.
type Names struct {
	// Index is the container of a lookup's entries ($lookup set).
	Index string
	// Counter is the example block's counter.
	Counter string
}

// KeyStyle is how a store writes a block key.
type KeyStyle int

const (
	// KeyPath: 2345, or 2345/3 for a composite key.
	KeyPath KeyStyle = iota
	// KeyDocument: a document _id: "2345", 2345, {post: 2345, seq: 3}.
	KeyDocument
	// KeyTag: inside a Redis hash tag: 2345, or "thread",3.
	KeyTag
	// KeyAttribute: a DynamoDB key attribute: N "2345" for an integer,
	// B (...) for the order-preserving bytes of the others.
	KeyAttribute
)

// Holds reports whether c holds for operation op of s under store st.
func (c Cond) Holds(st *Store, s *Shape, op Op) bool {
	has := func(f Cond) bool { return c&f != 0 }
	tables, native := 0, 0
	for _, l := range s.Lookups {
		if st.isTable(l) {
			tables++
		} else {
			native++
		}
	}
	version, parts, created, expires := false, false, false, false
	for _, f := range s.Fields {
		version = version || f.Version
		parts = parts || f.Partition
		created = created || f.Created
		expires = expires || f.Expires
	}
	written := st.written(s, op)
	unique := false
	for _, l := range written {
		unique = unique || l.Unique
	}
	writesNative := len(st.writtenNative(s, op)) > 0
	by, byOK := s.lookup(op.Lookup)
	checks := []struct {
		c  Cond
		ok bool
	}{
		{HasLookups, len(s.Lookups) > 0}, {NoLookups, len(s.Lookups) == 0},
		{HasTables, tables > 0}, {NoTables, tables == 0}, {HasNative, native > 0},
		{HasVersion, version}, {NoVersion, !version},
		{HasCounter, s.Counter}, {NoCounter, !s.Counter},
		{Scoped, s.Counter && len(s.Scope) > 0}, {NotScoped, !s.Counter || len(s.Scope) == 0},
		{HasPartitions, parts}, {EAO, s.EAO}, {ETF, !s.EAO},
		{Writes, len(written) > 0}, {NoWrites, len(written) == 0}, {WritesUnique, unique},
		{WritesNative, writesNative},
		{ByTable, byOK && st.isTable(by)}, {ByNative, byOK && !st.isTable(by)},
		{Indexed, st.indexed(s)}, {NotIndexed, !st.indexed(s)},
		{HasCreated, created}, {HasExpires, expires}, {NoExpires, !expires},
	}
	for _, k := range checks {
		if has(k.c) && !k.ok {
			return false
		}
	}
	return true
}

// IsTable reports whether the store keeps lookup l in an index table.
func (st *Store) IsTable(l Lookup) bool { return st.isTable(l) }

func (st *Store) isTable(l Lookup) bool {
	if st.NativeLookup != nil {
		return !st.NativeLookup(l)
	}
	return !st.Native || l.Table
}

// indexed reports whether s has index tables, or scope items.
func (st *Store) indexed(s *Shape) bool {
	for _, l := range s.Lookups {
		if st.isTable(l) {
			return true
		}
	}
	return st.ScopeItems && s.Counter && len(s.Scope) > 0
}

func (s *Shape) lookup(name string) (Lookup, bool) {
	for _, l := range s.Lookups {
		if l.Name == name {
			return l, true
		}
	}
	return Lookup{}, false
}

// written lists the lookups op changes that the store keeps in tables.
func (st *Store) written(s *Shape, op Op) []Lookup {
	var out []Lookup
	for _, n := range op.Writes {
		if l, ok := s.lookup(n); ok && st.isTable(l) {
			out = append(out, l)
		}
	}
	return out
}

// writtenNative is the lookups kept in native indexes whose entries op
// may change.
func (st *Store) writtenNative(s *Shape, op Op) []Lookup {
	var out []Lookup
	for _, n := range op.Writes {
		if l, ok := s.lookup(n); ok && !st.isTable(l) {
			out = append(out, l)
		}
	}
	return out
}

// Cost returns the cost that applies to op, and false when the
// declaration has none (a declaration must cover every operation; the
// conformance check and explain's tests say so).
func (st *Store) Cost(s *Shape, op Op) (Cost, bool) {
	for _, c := range st.Costs {
		if c.When.Holds(st, s, op) && contains(c.Methods, op.Method) {
			return c, true
		}
	}
	return Cost{}, false
}

func contains(ms []Method, m Method) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// step is a step of an operation with its variables bound.
type step struct {
	Step
	op     string
	term   string
	lookup string
}

// steps expands the steps of c that hold for op: Each steps once per
// lookup written.
func (st *Store) steps(s *Shape, op Op, c Cost, v Vars) []step {
	var out []step
	all := c.Steps
	if clearsExpired(op.Method) && HasExpires.Holds(st, s, op) {
		all = append(slices.Clip(st.ClearExpired), c.Steps...)
	}
	if (op.Method == PutMany || op.Method == DeleteMany) && HasExpires.Holds(st, s, op) {
		// The batch's blocks read first (runtime/expire.go,
		// clearExpiredMany), to remove those that expired.
		read := op
		read.Method, read.Writes = GetMany, nil
		if gc, ok := st.Cost(s, read); ok {
			all = append(slices.Clip(gc.Steps), all...)
		}
	}
	for _, p := range all {
		if !p.When.Holds(st, s, op) {
			continue
		}
		if p.Entries {
			for _, f := range s.Fields {
				keys := []string{f.Key}
				switch {
				case f.Partition:
					keys = append(keys, f.Key+"/*")
				case s.EAO && !f.Version:
					continue // in the root entry
				}
				for _, k := range keys {
					out = append(out, step{Step: p, op: v.with("entry", k).Expand(p.Op), term: v.Expand(string(p.Per))})
				}
			}
			continue
		}
		if !p.Each {
			out = append(out, step{Step: p, op: v.Expand(p.Op), term: v.Expand(string(p.Per))})
			continue
		}
		for _, l := range st.written(s, op) {
			if (p.When&UniqueLookup != 0 && !l.Unique) || (p.When&OtherLookup != 0 && l.Unique) {
				continue
			}
			lv := v.With(st, l)
			out = append(out, step{Step: p, op: lv.Expand(p.Op), term: lv.Expand(string(p.Per)), lookup: l.Name})
		}
	}
	return out
}

// Facts gives the value of a term for an operation's data: term is the
// declaration's Term, lookup the lookup of an Each step ("" otherwise).
// ok is false for a term the caller does not know.
type Facts func(term Term, lookup string) (n int, ok bool)

// Requests evaluates the requests op sends in deployment mode ("" for a
// store with one) when facts hold; it fails on a term facts does not know
// and on an operation the declaration does not cover.
func (st *Store) Requests(s *Shape, op Op, mode Mode, facts Facts) (int, error) {
	c, ok := st.Cost(s, op)
	if !ok {
		return 0, &MissingError{Store: st.Name, Method: op.Method}
	}
	total := 0
	for _, p := range st.steps(s, op, c, Vars{}) {
		if p.Mode != "" && p.Mode != mode {
			continue
		}
		if p.Per == "" {
			total += p.N
			continue
		}
		n, ok := facts(p.Per, p.lookup)
		if !ok {
			return 0, &TermError{Store: st.Name, Method: op.Method, Term: p.Per, Lookup: p.lookup}
		}
		total += p.N * n
	}
	return total, nil
}

// MissingError is a declaration without a cost for a method.
type MissingError struct {
	Store  string
	Method Method
}

func (e *MissingError) Error() string {
	return "access: the " + e.Store + " declaration has no cost for " + string(e.Method)
}

// TermError is a term the facts of an operation do not give.
type TermError struct {
	Store  string
	Method Method
	Term   Term
	Lookup string
}

func (e *TermError) Error() string {
	s := "access: " + e.Store + " " + string(e.Method) + ": no value for the term " + strings.ReplaceAll(string(e.Term), "$index", "the index")
	if e.Lookup != "" {
		s += " of lookup " + e.Lookup
	}
	return s
}
