package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
)

// The schema record each store keeps per collection (runtime.SchemaRecord,
// encoded as JSON), where the adapters document it: a sample reads it
// with the blocks.
const (
	// SchemaBucket is the bbolt bucket of the records, keyed by collection.
	SchemaBucket = "_noam_schema"
	// SchemaCollection is the MongoDB collection of the records,
	// {_id: collection, rec: the record}.
	SchemaCollection = "_noam_schema"
	// SchemaTable is the DynamoDB table of the records (after the table
	// prefix), {_id S: collection, rec B: the record}.
	SchemaTable = "_noam_schema"
)

// SchemaKey is the Redis key of collection's record.
func SchemaKey(collection string) string { return "noam:schema:{" + collection + "}" }

// Recorded is the layout a store has recorded for an aggregate's
// collection (what EnsureIndexes last served) beside the current one, the
// model's.
type Recorded struct {
	// Layout is the recorded layout; nil when there is no record
	// (EnsureIndexes has not run on this store).
	Layout  *runtime.Layout `json:"layout"`
	Current runtime.Layout  `json:"current"`
	// History are the older layouts blocks may still be stored in, until
	// a complete Migrate.
	History []runtime.Layout `json:"history,omitempty"`
	// Changes lists what changed from Layout to Current
	// (runtime.Layout.Changes).
	Changes []string `json:"changes,omitempty"`
}

// LayoutOf is the layout the repositories generated for a serve, as
// runtime.LayoutOf computes it from their descriptor.
func LayoutOf(a *model.Aggregate) runtime.Layout {
	l := runtime.Layout{Collection: a.Collection, Strategy: a.Strategy.String(), Counter: a.Counter}
	if a.Version != nil {
		l.Version = a.Version.Key
	}
	for _, f := range a.Fields {
		switch {
		case f.IsID || f.IsVersion:
		case f.Partition:
			l.Partitions = append(l.Partitions, f.Key)
		default:
			l.Fields = append(l.Fields, f.Key)
		}
	}
	for _, lk := range a.Lookups {
		ll := runtime.LookupLayout{Name: lk.Name, Unique: lk.Unique, Table: lk.Table, Zeros: lk.IndexZero}
		for _, p := range lk.Parts {
			if !slices.Contains(ll.Fields, p.Field.Key) {
				ll.Fields = append(ll.Fields, p.Field.Key)
			}
		}
		l.Lookups = append(l.Lookups, ll)
	}
	return l
}

// recordedOf decodes a stored schema record (nil: none) for a.
func recordedOf(a *model.Aggregate, raw []byte) (*Recorded, error) {
	rec, err := runtime.DecodeSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("collection %s: %w", a.Collection, err)
	}
	out := &Recorded{Current: LayoutOf(a)}
	if rec == nil {
		return out, nil
	}
	out.Layout, out.History = &rec.Layout, rec.History
	out.Changes = rec.Layout.Changes(out.Current)
	return out, nil
}

// LayoutLine writes a layout on one line: "etf: name, email; partitioned:
// scores; version: version; lookups: email(email) unique, city(city)".
func LayoutLine(l runtime.Layout) string {
	parts := []string{l.Strategy + ": " + orNone(l.Fields)}
	if len(l.Partitions) > 0 {
		parts = append(parts, "partitioned: "+strings.Join(l.Partitions, ", "))
	}
	if l.Version != "" {
		parts = append(parts, "version: "+l.Version)
	}
	if l.Counter {
		parts = append(parts, "counter")
	}
	var lks []string
	for _, lk := range l.Lookups {
		s := lk.String()
		if lk.Building {
			s += " (building)"
		}
		lks = append(lks, s)
	}
	if len(lks) > 0 {
		parts = append(parts, "lookups: "+strings.Join(lks, ", "))
	}
	return strings.Join(parts, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no field"
	}
	return strings.Join(s, ", ")
}

// recordedMD writes the recorded layout beside the current one.
func recordedMD(b *strings.Builder, r *Recorded) {
	if r.Layout == nil {
		b.WriteString("Recorded layout: none. EnsureIndexes has not run on this store: until it does, reads through a lookup and writes that claim unique values fail with runtime.ErrNotReady.\n\n")
		b.WriteString("- current: " + code(LayoutLine(r.Current)) + "\n\n")
		return
	}
	b.WriteString("- recorded: " + code(LayoutLine(*r.Layout)) + "\n")
	b.WriteString("- current: " + code(LayoutLine(r.Current)) + "\n\n")
	if len(r.Changes) == 0 {
		b.WriteString("The recorded layout is the current one.\n\n")
	} else {
		b.WriteString("What changed (EnsureIndexes records the current layout, builds the added lookups and drops the removed ones):\n\n")
		for _, c := range r.Changes {
			b.WriteString("- " + c + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.History) > 0 {
		b.WriteString("Blocks may still be stored in older layouts (read right or refused with runtime.ErrLayout; `noamgen migrate` rewrites them):\n\n")
		for _, h := range r.History {
			b.WriteString("- " + code(LayoutLine(h)) + "\n")
		}
		b.WriteString("\n")
	}
}
