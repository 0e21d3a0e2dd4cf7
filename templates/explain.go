package templates

import (
	"context"
	"fmt"
	"go/types"
	"sort"
	"strings"

	"github.com/noamgen/noamgen/model"
)

// This file is the hook of `noamgen explain`: each store describes its
// physical layout, what each repository method costs on it, and how to
// sample real blocks, next to its template (templates/<store>/explain.go),
// and registers that description with RegisterExplain from its init. The
// store-independent part (the NoAM view, the entries each method reads and
// writes) is computed by package explain from the model.

// Explainer is one store's part of `noamgen explain`.
type Explainer struct {
	// Title is the store's name in explain's headings ("MongoDB").
	Title string
	// Layout describes how the store holds the blocks of a: the
	// collections, buckets or tables it uses and their key shapes, with
	// concrete example keys for block key ex (see ExampleKey).
	Layout func(a *model.Aggregate) Physical
	// Cost says what method m of a does on the store: its operations,
	// round trips and what is atomic. acc is the store-independent access
	// of m (the entries and index entries it reads and writes).
	Cost func(a *model.Aggregate, m Method, acc Access) Cost
	// Conn lists the settings Sample needs to reach a real store (the
	// command adds one flag each); nil when the store cannot be sampled.
	Conn []ConnSetting
	// Sample reads at most n blocks of a from the store named by conn
	// (values by ConnSetting.Name) without writing anything. It returns
	// nil, nil when conn does not name a store to sample.
	Sample func(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error)
}

// ConnSetting is one connection setting of a store's sample: the command
// line flag -Name, with Env as its default when set.
type ConnSetting struct {
	Name  string
	Env   string
	Usage string
}

// Physical is a store's layout of one aggregate class.
type Physical struct {
	// Summary says in a sentence how blocks map to the store.
	Summary string `json:"summary"`
	// Containers are the collections, buckets or tables the aggregate
	// uses: its blocks first, then index tables and counters.
	Containers []Container `json:"containers"`
	// Example shows the stored form of one example block, key by key
	// (bbolt) or as a document (MongoDB).
	Example []Stored `json:"example"`
	// Indexes are the store's native secondary indexes (MongoDB), if any.
	Indexes []Index `json:"indexes,omitempty"`
	// Notes are facts about the layout a reader should know.
	Notes []string `json:"notes,omitempty"`
}

// Container is one collection, bucket or table.
type Container struct {
	Kind string `json:"kind"` // "bucket", "collection", ...
	Name string `json:"name"`
	Role string `json:"role"` // "blocks", "index table of lookup name", "counters"
	// Key is the shape of its keys (or documents), Value of its values.
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	// Example is one key (or document) of it in readable form.
	Example string `json:"example,omitempty"`
}

// Stored is one stored item of the example block: a key and what its
// value holds, or a document field and its value.
type Stored struct {
	Key   string `json:"key"`
	Entry string `json:"entry"` // the NoAM entry it holds ("" for none)
	Value string `json:"value"`
}

// Index is a native secondary index.
type Index struct {
	Collection string   `json:"collection"`
	Lookup     string   `json:"lookup"`
	Keys       []string `json:"keys"` // indexed paths in order
	Options    []string `json:"options,omitempty"`
}

// Access is what a method reads and writes, store-independently: NoAM
// entries of the block (entry keys in the paper's notation: "firstPlayer",
// "rounds[i]", "rounds[*]" for every element, "ε" for the EAO root) and
// index entries of lookups (by lookup name).
type Access struct {
	Reads       []string `json:"reads,omitempty"`
	Writes      []string `json:"writes,omitempty"`
	Deletes     []string `json:"deletes,omitempty"`
	ReadsIndex  []string `json:"readsIndex,omitempty"`
	WritesIndex []string `json:"writesIndex,omitempty"`
	// Blocks says how many blocks the method touches: "one", "page" (a
	// page of blocks), "many" (the given keys) or "all".
	Blocks  string `json:"blocks"`
	Counter bool   `json:"counter,omitempty"` // allocates a block key from the counter
	Version bool   `json:"version,omitempty"` // checks or bumps the version entry
}

// Cost is what one method does on one store.
type Cost struct {
	// Ops are the store operations in order, e.g. "findAndModify Game
	// {$push rounds, $inc _len.rounds, version}".
	Ops []string `json:"ops"`
	// RoundTrips is the number of requests to the server ("0" for an
	// embedded store), as a formula when it depends on the data.
	RoundTrips string `json:"roundTrips"`
	// Atomic says what happens all-or-nothing.
	Atomic string `json:"atomic"`
}

// Sample is what Sample read from a real store.
type Sample struct {
	Source string `json:"source"` // the store sampled, e.g. the file or database
	Blocks int    `json:"blocks"` // blocks read
	// Entries summarises the sizes of each entry class ("rounds[]" for the
	// elements of rounds), in layout order.
	Entries []EntrySize `json:"entries"`
	// Largest are the largest blocks read, largest first (at most 5).
	Largest []BlockSize `json:"largest"`
	// Partitions are the largest partitioned fields of one block (all
	// elements and the count), largest first (at most 5).
	Partitions []PartitionSize `json:"partitions,omitempty"`
	// MaxValueBytes is the store's limit (runtime.Caps), 0 for none.
	MaxValueBytes int `json:"maxValueBytes"`
	// LimitOf says what MaxValueBytes limits ("document", "value").
	LimitOf  string   `json:"limitOf,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// EntrySize is the size of one entry class over the sampled blocks.
type EntrySize struct {
	Entry string `json:"entry"`
	Count int    `json:"count"`
	Bytes int64  `json:"bytes"` // total
	Max   int    `json:"max"`
}

// BlockSize is the size of one block.
type BlockSize struct {
	Key   string `json:"key"`
	Bytes int    `json:"bytes"`
}

// PartitionSize is the size of one partitioned field of one block.
type PartitionSize struct {
	Key      string `json:"key"` // block key
	Field    string `json:"field"`
	Elements int    `json:"elements"`
	Bytes    int    `json:"bytes"`
}

var explainers = map[string]Explainer{}

// RegisterExplain makes a store's explainer available to `noamgen
// explain`; stores call it from init (in templates/<store>/explain.go).
func RegisterExplain(store string, e Explainer) {
	if _, dup := explainers[store]; dup {
		panic("templates: explainer of store " + store + " registered twice")
	}
	explainers[store] = e
}

// ExplainerOf returns the explainer of a store, if it registered one.
func ExplainerOf(store string) (Explainer, bool) {
	e, ok := explainers[store]
	return e, ok
}

// ExplainedStores lists the stores with an explainer, sorted.
func ExplainedStores() []string {
	var out []string
	for n := range explainers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// KeyValue is one part of an example block key: the part's key ("" for a
// scalar block key) and its value, a string or an int64.
type KeyValue struct {
	Key   string
	Value any
}

// ExampleKey is the block key explain shows for a, the same on every
// store: 2345 (the paper's game), "2345" for a string key; a composite
// key's parts are 2345, 3, 4, ... ("2345", "3", ... for strings).
func ExampleKey(a *model.Aggregate) []KeyValue {
	val := func(t types.Type, n int) any {
		if model.KindOf(t) == model.KeyString {
			return fmt.Sprint(n)
		}
		return int64(n)
	}
	if len(a.IDParts) == 0 {
		return []KeyValue{{Value: val(a.ID.Type, 2345)}}
	}
	var out []KeyValue
	for i, p := range a.IDParts {
		n := 2345
		if i > 0 {
			n = i + 2
		}
		out = append(out, KeyValue{Key: p.Key, Value: val(p.Type, n)})
	}
	return out
}

// ExampleKeyText renders ExampleKey(a) as the paper writes a block key:
// "2345", or "2345/3" for a composite key.
func ExampleKeyText(a *model.Aggregate) string {
	var parts []string
	for _, kv := range ExampleKey(a) {
		parts = append(parts, fmt.Sprint(kv.Value))
	}
	return strings.Join(parts, "/")
}

// SampleSizes accumulates the sizes of sampled blocks into a Sample, the
// same way for every store: a store's Sample calls Entry for each stored
// entry, Block after each block, and Fill at the end.
type SampleSizes struct {
	order       []string
	byEntry     map[string]*EntrySize
	partitioned map[string]bool
	blocks      []BlockSize
	parts       []PartitionSize
}

// NewSampleSizes starts a sample of a's blocks.
func NewSampleSizes(a *model.Aggregate) *SampleSizes {
	s := &SampleSizes{byEntry: map[string]*EntrySize{}, partitioned: map[string]bool{}}
	for _, e := range a.Entries() {
		if e.Partition {
			k := strings.TrimSuffix(e.Key, "[]")
			s.partitioned[k] = true
			s.order = append(s.order, k)
		}
		s.order = append(s.order, e.Key)
	}
	if a.Strategy == model.ETF {
		s.order = append([]string{""}, s.order...)
	}
	return s
}

// Entry counts one stored entry of class name ("" for the root or
// marker, "f" for a field or a partition's count, "f[]" for an element)
// of n bytes.
func (s *SampleSizes) Entry(name string, n int) {
	e := s.byEntry[name]
	if e == nil {
		e = &EntrySize{Entry: name}
		s.byEntry[name] = e
	}
	e.Count++
	e.Bytes += int64(n)
	e.Max = max(e.Max, n)
}

// Partitioned reports whether name is a partitioned field.
func (s *SampleSizes) Partitioned(name string) bool { return s.partitioned[name] }

// Block records one block of n bytes with the sizes of its partitions.
func (s *SampleSizes) Block(key string, n int, parts []PartitionSize) {
	s.blocks = append(s.blocks, BlockSize{Key: key, Bytes: n})
	s.parts = append(s.parts, parts...)
}

// Fill writes the summary into out: entry classes in layout order, the
// five largest blocks and partitions, and a warning for every entry class
// and block over half of out.MaxValueBytes.
func (s *SampleSizes) Fill(out *Sample) {
	for _, k := range s.order {
		if e := s.byEntry[k]; e != nil {
			out.Entries = append(out.Entries, *e)
			delete(s.byEntry, k)
		}
	}
	var rest []string
	for k := range s.byEntry {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		out.Entries = append(out.Entries, *s.byEntry[k]) // entries of removed fields
	}
	sort.SliceStable(s.blocks, func(i, j int) bool { return s.blocks[i].Bytes > s.blocks[j].Bytes })
	out.Largest = s.blocks[:min(5, len(s.blocks))]
	sort.SliceStable(s.parts, func(i, j int) bool {
		if s.parts[i].Bytes != s.parts[j].Bytes {
			return s.parts[i].Bytes > s.parts[j].Bytes
		}
		if s.parts[i].Key != s.parts[j].Key {
			return s.parts[i].Key < s.parts[j].Key
		}
		return s.parts[i].Field < s.parts[j].Field
	})
	out.Partitions = s.parts[:min(5, len(s.parts))]
	if out.MaxValueBytes <= 0 {
		return
	}
	if out.LimitOf == "document" {
		// The limit is per block: every block over half of it.
		for _, b := range s.blocks {
			if b.Bytes > out.MaxValueBytes/2 {
				out.Warnings = append(out.Warnings, fmt.Sprintf("block %s: %d bytes, over half the store's limit of %d bytes per %s", b.Key, b.Bytes, out.MaxValueBytes, out.LimitOf))
			}
		}
		return
	}
	for _, e := range out.Entries {
		if e.Max > out.MaxValueBytes/2 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("entry %s: a value of %d bytes, over half the store's limit of %d bytes per %s", e.Entry, e.Max, out.MaxValueBytes, out.LimitOf))
		}
	}
}

// TypeText renders a Go type for explain output: names from a's own
// package unqualified, others by package name ([]GameRef, time.Time).
func TypeText(a *model.Aggregate, t types.Type) string {
	var own *types.Package
	if n, ok := a.StructType.(*types.Named); ok {
		own = n.Obj().Pkg()
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p == own {
			return ""
		}
		return p.Name()
	})
}
