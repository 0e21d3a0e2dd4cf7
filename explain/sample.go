package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/noamgen/noamgen/model"
)

// A sampler reads at most n blocks of a from the store named by conn
// (values by templates.Conn.Name: the store's registration lists its
// settings) without writing anything; it returns nil, nil when conn does
// not name a store to sample. Sampling needs the store's driver, so it
// lives here (sample_<store>.go), never in the templates or the stores'
// declarations.
type sampler func(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error)

var samplers = map[string]sampler{}

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
	// Recorded is the layout the store has recorded for the collection,
	// beside the current one.
	Recorded *Recorded `json:"recorded,omitempty"`
	// Lookups is how the store keeps the collection's lookups as its
	// schema record says (MongoDB: "native", "unique-tables" or
	// "index-tables", decided at the first EnsureIndexes), "" when it
	// records none.
	Lookups string `json:"lookups,omitempty"`
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

// Sample reads at most n real blocks of every aggregate from each store of
// r whose connection settings conn names (by templates.Conn.Name, e.g. "bolt"
// for a bbolt file, "mongo" and "db" for MongoDB) and records their sizes
// in Aggregate.Samples. Stores conn does not name are left out. Nothing
// is written to any store.
func (r *Report) Sample(ctx context.Context, n int, conn map[string]string) error {
	if n <= 0 {
		return fmt.Errorf("the sample size must be positive, not %d", n)
	}
	for _, a := range r.Aggregates {
		for _, st := range r.Stores {
			sm, ok := samplers[st]
			if !ok {
				continue
			}
			s, err := sm(ctx, a.model, conn, n)
			if err != nil {
				return fmt.Errorf("sampling %s on %s: %w", a.Name, st, err)
			}
			if s == nil {
				continue
			}
			if a.Samples == nil {
				a.Samples = map[string]*Sample{}
			}
			a.Samples[st] = s
		}
	}
	return nil
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
