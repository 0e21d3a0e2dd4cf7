// Package explain describes what noamgen's repositories store and do, from
// the same model as generation: for each aggregate the abstract NoAM view
// (collection, block key, entries, strategy, partitions, version, lookups,
// references, counter), for each chosen store its physical layout with
// example keys, and for each generated method the entries and index
// entries it reads and writes, its round trips and what is atomic. It is
// `noamgen explain`; Markdown renders it for people (a pull request),
// JSON for tools.
//
// The abstract part is computed here from the model (model.Aggregate.Entries
// is the layout every store writes, runtime.Desc.Entries its instance).
// Each store's part is rendered here, the same way for every store, from
// the store's declaration: data in runtime/<store>store/layout (package
// runtime/access) that the store's template registers with
// templates.RegisterLayout, and that the conformance suite checks against
// the requests the adapter really sends. Sampling real blocks needs the
// drivers, so it lives here (sample_<store>.go), not in the templates.
//
// # JSON format
//
// JSON writes the Report below with encoding/json, indented by two spaces.
// Report.Version (currently 1) changes whenever a field is renamed or
// removed or its meaning changes; new fields may be added within a
// version. Field names are the json tags of Report and of the types it
// holds (access.Physical, access.Rendered, Access, Sample):
//
//	{
//	  "version": 1,
//	  "package": "import path", "stores": ["bolt", "mongo"],
//	  "aggregates": [{
//	    "name": "Game", "collection": "Game", "strategy": "etf",
//	    "blockKey": {"field": "ID", "goType": "string", "counter": false, "parts": [...]},
//	    "notation": "Game:2345 -> {...}",
//	    "entries": [{"key": "firstPlayer", "notation": "firstPlayer", "fields": [{"field": "FirstPlayer", "key": "firstPlayer", "goType": "string"}], "kind": "field|root|count|elements|version"}],
//	    "partitions": ["rounds"], "version": "version",
//	    "lookups": [{"name": "city", "unique": false, "zeros": false, "table": false, "multi": false, "parts": [{"path": "city", "goType": "string"}]}],
//	    "refs": [{"path": "firstPlayer", "target": "Player", "goType": "string"}],
//	    "methods": [{"name": "SetFirstPlayer", "kind": "set", "access": {Access}, "stores": {"bolt": {access.Rendered}}}],
//	    "stores": {"bolt": {access.Physical}},
//	    "samples": {"bolt": {Sample, "recorded": {"layout": {runtime.Layout} or null, "current": {...}, "history": [...], "changes": ["strategy etf -> eao"]}}}
//	  }]
//	}
package explain

import (
	"fmt"
	"go/types"
	"strings"

	"github.com/noamgen/noamgen/generator"
	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/access"
	dynamolayout "github.com/noamgen/noamgen/runtime/dynamostore/layout"
	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/stores" // registers every store
)

// FormatVersion is the version of the JSON format (Report.Version).
const FormatVersion = 1

// Report is everything explain says about one package.
type Report struct {
	Version    int          `json:"version"`
	Package    string       `json:"package"`
	Stores     []string     `json:"stores"`
	Aggregates []*Aggregate `json:"aggregates"`
}

// Aggregate is one aggregate class.
type Aggregate struct {
	Name       string   `json:"name"`
	Collection string   `json:"collection"`
	Strategy   string   `json:"strategy"`
	BlockKey   BlockKey `json:"blockKey"`
	// Notation is the block in the paper's notation, e.g.
	// "Game:2345 -> {firstPlayer, secondPlayer, rounds, rounds[0], rounds[1], ..., version}".
	Notation   string   `json:"notation"`
	Entries    []Entry  `json:"entries"`
	Partitions []string `json:"partitions,omitempty"`
	Version    string   `json:"version,omitempty"` // the version entry's key
	// Created and Updated are the timestamp entries' keys (noam:"created",
	// noam:"updated").
	Created string   `json:"created,omitempty"`
	Updated string   `json:"updated,omitempty"`
	Lookups []Lookup `json:"lookups,omitempty"`
	Refs    []Ref    `json:"refs,omitempty"`
	Methods []Method `json:"methods"`
	// Stores holds each store's physical layout, by store name.
	Stores map[string]access.Physical `json:"stores"`
	// Samples holds what -sample read, by store name.
	Samples map[string]*Sample `json:"samples,omitempty"`

	model *model.Aggregate
}

// BlockKey is the block key: the id field and, for a composite key, its parts.
type BlockKey struct {
	Field   string    `json:"field"`
	GoType  string    `json:"goType"`
	Counter bool      `json:"counter,omitempty"`
	Parts   []KeyPart `json:"parts,omitempty"`
	// Scope lists the parts a counter counts within (composite keys).
	Scope []string `json:"scope,omitempty"`
}

// KeyPart is one part of a composite block key.
type KeyPart struct {
	Field  string `json:"field"`
	Key    string `json:"key"`
	GoType string `json:"goType"`
}

// Entry is one entry class of the layout.
type Entry struct {
	// Key is the entry key as the stores write it: the field key, "" for
	// the EAO root entry, "rounds" for a partition's element count and
	// "rounds[]" for its elements.
	Key string `json:"key"`
	// Notation is the key in the paper's notation: "ε", "rounds[i]".
	Notation string       `json:"notation"`
	Kind     string       `json:"kind"` // field, root, count, elements, version, created, updated
	Fields   []EntryField `json:"fields"`
}

// EntryField is a Go field an entry holds.
type EntryField struct {
	Field  string `json:"field"`
	Key    string `json:"key"`
	GoType string `json:"goType"` // the element type for elements
}

// Lookup is an index table (or native index) of the aggregate.
type Lookup struct {
	Name   string       `json:"name"`
	Unique bool         `json:"unique,omitempty"`
	Zeros  bool         `json:"zeros,omitempty"` // unique lookup indexing zero values
	Table  bool         `json:"table,omitempty"` // noam:"lookup,table"
	Multi  bool         `json:"multi,omitempty"` // values go through a slice
	Parts  []LookupPart `json:"parts"`
}

// LookupPart is one indexed value.
type LookupPart struct {
	Path   string `json:"path"`
	GoType string `json:"goType"`
}

// Ref is a reference to another aggregate.
type Ref struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	GoType string `json:"goType"`
}

// Method is one generated repository method.
type Method struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Access Access `json:"access"`
	// Stores holds what the method does on each store, by store name.
	Stores map[string]access.Rendered `json:"stores"`
}

// Config says what to explain.
type Config struct {
	// Stores are the stores to describe (default: every registered store).
	Stores []string
	// DynamoSingleTable, when set, draws DynamoDB in the single-table
	// design with this table (dynamostore.Options.SingleTable).
	DynamoSingleTable string
}

// Build explains schema s. It refuses what generation refuses, with the
// same errors (a parser.ErrorList for positioned ones), and stores without
// an explainer.
func Build(s *model.Schema, cfg Config) (*Report, error) {
	stores := cfg.Stores
	if len(stores) == 0 {
		stores = templates.StoreNames()
	}
	var sel []string
	seen := map[string]bool{}
	for _, name := range stores {
		if _, ok := templates.Lookup(name); !ok {
			return nil, fmt.Errorf("unknown store %q (known: %s)", name, strings.Join(templates.StoreNames(), ", "))
		}
		if _, ok := templates.LayoutOf(name); !ok {
			return nil, fmt.Errorf("store %q declares no layout (templates.RegisterLayout in templates/%s)", name, name)
		}
		if !seen[name] {
			seen[name] = true
			sel = append(sel, name)
		}
	}
	if _, err := generator.Generate(s, generator.Config{Stores: sel}); err != nil {
		return nil, err
	}
	r := &Report{Version: FormatVersion, Package: s.PkgPath, Stores: sel}
	qual := func(p *types.Package) string {
		if p.Path() == s.PkgPath {
			return ""
		}
		return p.Name()
	}
	ts := func(t types.Type) string { return types.TypeString(t, qual) }
	decls := map[string]*access.Store{}
	for _, st := range sel {
		decls[st], _ = templates.LayoutOf(st)
	}
	if cfg.DynamoSingleTable != "" && decls["dynamo"] != nil {
		decls["dynamo"] = dynamolayout.SingleTableStore(cfg.DynamoSingleTable)
	}
	for _, a := range s.Aggregates {
		r.Aggregates = append(r.Aggregates, aggregate(a, sel, decls, ts))
	}
	return r, nil
}

func aggregate(a *model.Aggregate, stores []string, decls map[string]*access.Store, ts func(types.Type) string) *Aggregate {
	out := &Aggregate{
		Name: a.Name, Collection: a.Collection, Strategy: a.Strategy.String(),
		BlockKey: BlockKey{Field: a.ID.GoName, GoType: ts(a.ID.Type), Counter: a.Counter},
		Notation: Notation(a),
		Stores:   map[string]access.Physical{},
		model:    a,
	}
	for _, p := range a.IDParts {
		out.BlockKey.Parts = append(out.BlockKey.Parts, KeyPart{Field: p.GoName, Key: p.Key, GoType: ts(p.Type)})
	}
	if a.Counter {
		for _, p := range a.Scope() {
			out.BlockKey.Scope = append(out.BlockKey.Scope, p.Key)
		}
	}
	for _, e := range a.Entries() {
		field := func(f *model.Field, elem bool) EntryField {
			t := f.Type
			if elem {
				t = f.Elem
			}
			return EntryField{Field: f.GoName, Key: f.Key, GoType: ts(t)}
		}
		switch {
		case e.Key == "":
			ent := Entry{Key: "", Notation: "ε", Kind: "root"}
			for _, f := range e.Fields {
				ent.Fields = append(ent.Fields, field(f, false))
			}
			out.Entries = append(out.Entries, ent)
		case e.Partition:
			f := e.Fields[0]
			out.Entries = append(out.Entries,
				Entry{Key: f.Key, Notation: f.Key, Kind: "count", Fields: []EntryField{{Field: f.GoName, Key: f.Key, GoType: "int (element count)"}}},
				Entry{Key: e.Key, Notation: f.Key + "[i]", Kind: "elements", Fields: []EntryField{field(f, true)}})
			out.Partitions = append(out.Partitions, f.Key)
		case e.Version:
			out.Entries = append(out.Entries, Entry{Key: e.Key, Notation: e.Key, Kind: "version", Fields: []EntryField{field(e.Fields[0], false)}})
			out.Version = e.Key
		case e.Timestamp != "":
			// A field that only the repository writes: created by Create
			// (kept by Put), updated by every write.
			out.Entries = append(out.Entries, Entry{Key: e.Key, Notation: e.Key, Kind: e.Timestamp, Fields: []EntryField{field(e.Fields[0], false)}})
			if e.Timestamp == "created" {
				out.Created = e.Key
			} else {
				out.Updated = e.Key
			}
		default:
			out.Entries = append(out.Entries, Entry{Key: e.Key, Notation: e.Key, Kind: "field", Fields: []EntryField{field(e.Fields[0], false)}})
		}
	}
	for _, l := range a.Lookups {
		lk := Lookup{Name: l.Name, Unique: l.Unique, Zeros: l.IndexZero, Table: l.Table, Multi: l.Multi()}
		for _, p := range l.Parts {
			lk.Parts = append(lk.Parts, LookupPart{Path: p.Path, GoType: ts(p.Type)})
		}
		out.Lookups = append(out.Lookups, lk)
	}
	for _, ref := range a.Refs() {
		out.Refs = append(out.Refs, Ref{Path: ref.Path, Target: ref.Target, GoType: ts(ref.Type)})
	}
	shape := templates.ShapeOf(a)
	for _, st := range stores {
		out.Stores[st] = decls[st].Layout(shape)
	}
	for _, m := range templates.Methods(a) {
		acc := AccessOf(a, m)
		mm := Method{Name: m.Name, Kind: KindName(m.Kind), Access: acc, Stores: map[string]access.Rendered{}}
		for _, st := range stores {
			mm.Stores[st] = decls[st].Render(shape, opOf(m, acc))
		}
		out.Methods = append(out.Methods, mm)
	}
	return out
}

// Notation writes a block in the paper's notation, with the example block
// key: "Game:2345 -> {firstPlayer, secondPlayer, rounds, rounds[0],
// rounds[1], ..., version}"; an EAO root entry is "ε: {name, games}".
func Notation(a *model.Aggregate) string {
	var parts []string
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
			var fs []string
			for _, f := range e.Fields {
				fs = append(fs, f.Key)
			}
			parts = append(parts, "ε: {"+strings.Join(fs, ", ")+"}")
		case e.Partition:
			k := strings.TrimSuffix(e.Key, "[]")
			parts = append(parts, k, k+"[0]", k+"[1]", "...")
		default:
			parts = append(parts, e.Key)
		}
	}
	return fmt.Sprintf("%s:%s -> {%s}", a.Collection, access.KeyText(templates.ExampleKey(a)), strings.Join(parts, ", "))
}
