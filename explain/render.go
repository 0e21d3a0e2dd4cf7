package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/templates"
)

// JSON writes r in the documented JSON format (see the package
// documentation), indented, with a final newline.
func JSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// storeTitle is a store's display name in Markdown (its declaration's
// Title).
func storeTitle(s string) string {
	if d, ok := templates.LayoutOf(s); ok && d.Title != "" {
		return d.Title
	}
	return s
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// code renders s as inline code in a table cell ("" as a dash).
func code(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + cell(s) + "`"
}

func codes(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	var out []string
	for _, s := range ss {
		out = append(out, code(s))
	}
	return strings.Join(out, ", ")
}

// Markdown writes r for people: a Mermaid diagram of the aggregates,
// references and index tables, then per aggregate its NoAM view, each
// store's layout with an example block, and a table of the methods.
func Markdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Storage layout of %s\n\n", r.Package)
	var titles []string
	for _, s := range r.Stores {
		titles = append(titles, storeTitle(s))
	}
	fmt.Fprintf(&b, "Written by `noamgen explain` (format %d) for %s: what each aggregate looks like in the NoAM model and in each store, and what every generated method reads, writes and costs. Do not edit; regenerate it.\n\n", r.Version, strings.Join(titles, " and "))
	diagram(&b, r)
	for _, a := range r.Aggregates {
		aggregateMD(&b, r, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeID makes a Mermaid node id: aggregates keep their name, index
// tables and counters get a prefix so that no name can clash.
func nodeID(s string) string {
	return strings.NewReplacer(".", "_", "-", "_", " ", "_").Replace(s)
}

// label escapes the text of a Mermaid label (inside double quotes).
func label(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

func diagram(b *strings.Builder, r *Report) {
	b.WriteString("```mermaid\nflowchart LR\n")
	for _, a := range r.Aggregates {
		fmt.Fprintf(b, "  %s[(\"%s<br/>%s, key %s\")]\n", nodeID(a.Name), a.Name, a.Strategy, label(a.BlockKey.GoType))
	}
	for _, a := range r.Aggregates {
		for _, ref := range a.Refs {
			fmt.Fprintf(b, "  %s -- \"%s\" --> %s\n", nodeID(a.Name), label(ref.Path), nodeID(ref.Target))
		}
		for _, l := range a.Lookups {
			id := "ix_" + nodeID(a.Collection+"."+l.Name)
			var paths []string
			for _, p := range l.Parts {
				paths = append(paths, p.Path)
			}
			what := "lookup"
			if l.Unique {
				what = "unique lookup"
			}
			if l.Table {
				what += ", table"
			}
			fmt.Fprintf(b, "  %s{{\"%s.%s<br/>%s\"}}\n", id, a.Collection, l.Name, what)
			fmt.Fprintf(b, "  %s -. \"%s\" .-> %s\n", nodeID(a.Name), label(strings.Join(paths, ", ")), id)
		}
		if a.BlockKey.Counter {
			id := "ctr_" + nodeID(a.Collection)
			fmt.Fprintf(b, "  %s[/\"counter of %s\"/]\n", id, a.Collection)
			fmt.Fprintf(b, "  %s -. \"allocates %s\" .-> %s\n", id, a.BlockKey.Field, nodeID(a.Name))
		}
	}
	b.WriteString("```\n\n")
}

func aggregateMD(b *strings.Builder, r *Report, a *Aggregate) {
	fmt.Fprintf(b, "## %s\n\n", a.Name)
	var facts []string
	facts = append(facts, "collection `"+a.Collection+"`", "strategy "+strings.ToUpper(a.Strategy))
	if len(a.Partitions) > 0 {
		facts = append(facts, "partitioned by "+codes(a.Partitions))
	}
	if a.Version != "" {
		facts = append(facts, "version entry `"+a.Version+"`")
	}
	if a.Created != "" {
		facts = append(facts, "created timestamp `"+a.Created+"` (set by Create, kept by Put)")
	}
	if a.Updated != "" {
		facts = append(facts, "updated timestamp `"+a.Updated+"` (set by every write, in its atomic write)")
	}
	key := fmt.Sprintf("block key `%s %s`", a.BlockKey.Field, a.BlockKey.GoType)
	if len(a.BlockKey.Parts) > 0 {
		var ps []string
		for _, p := range a.BlockKey.Parts {
			ps = append(ps, p.Key+" "+p.GoType)
		}
		key += " with parts `" + strings.Join(ps, ", ") + "`"
	}
	if a.BlockKey.Counter {
		key += ", allocated by a counter"
		if len(a.BlockKey.Scope) > 0 {
			key += " per " + codes(a.BlockKey.Scope)
		}
	}
	facts = append(facts, key)
	fmt.Fprintf(b, "NoAM view: %s.\n\n```\n%s\n```\n\n", strings.Join(facts, ", "), a.Notation)
	b.WriteString("| entry | kind | Go fields | Go type |\n|---|---|---|---|\n")
	for _, e := range a.Entries {
		var names, ts []string
		for _, f := range e.Fields {
			names = append(names, f.Field)
			ts = append(ts, f.GoType)
		}
		gt := strings.Join(ts, ", ")
		if e.Kind == "root" {
			gt = "struct of the fields"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(e.Notation), e.Kind, cell(strings.Join(names, ", ")), code(gt))
	}
	b.WriteString("\n")
	if len(a.Lookups) > 0 {
		b.WriteString("Lookups:\n\n| lookup | parts | options |\n|---|---|---|\n")
		for _, l := range a.Lookups {
			var parts, opts []string
			for _, p := range l.Parts {
				parts = append(parts, p.Path+" "+p.GoType)
			}
			if l.Unique {
				opts = append(opts, "unique")
			}
			if l.Zeros {
				opts = append(opts, "zeros indexed")
			}
			if l.Table {
				opts = append(opts, "table")
			}
			if l.Multi {
				opts = append(opts, "one entry per element")
			}
			o := strings.Join(opts, ", ")
			if o == "" {
				o = "-"
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", code(l.Name), codes(parts), o)
		}
		b.WriteString("\n")
	}
	if len(a.Refs) > 0 {
		b.WriteString("References (resolved with GetMany, one round trip):\n\n| path | to | Go type |\n|---|---|---|\n")
		for _, ref := range a.Refs {
			fmt.Fprintf(b, "| %s | %s | %s |\n", code(ref.Path), ref.Target, code(ref.GoType))
		}
		b.WriteString("\n")
	}
	for _, s := range r.Stores {
		physicalMD(b, s, a.Stores[s])
	}
	methodsMD(b, r, a)
	for _, s := range r.Stores {
		if smp := a.Samples[s]; smp != nil {
			sampleMD(b, s, smp)
		}
	}
}

func physicalMD(b *strings.Builder, store string, p access.Physical) {
	fmt.Fprintf(b, "### %s\n\n%s\n\n", storeTitle(store), p.Summary)
	b.WriteString("| name | kind | holds | key | value | example |\n|---|---|---|---|---|---|\n")
	for _, c := range p.Containers {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", code(c.Name), c.Kind, cell(c.Role), code(c.Key), cell(orDash(c.Value)), code(c.Example))
	}
	b.WriteString("\nThe example block:\n\n| key | entry | value |\n|---|---|---|\n")
	for _, e := range p.Example {
		fmt.Fprintf(b, "| %s | %s | %s |\n", code(e.Key), code(e.Entry), cell(e.Value))
	}
	b.WriteString("\n")
	if len(p.Indexes) > 0 {
		b.WriteString("Native indexes:\n\n| lookup | collection | keys | options |\n|---|---|---|---|\n")
		for _, ix := range p.Indexes {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(ix.Lookup), code(ix.Collection), code("{"+strings.Join(ix.Keys, ", ")+"}"), cell(orDash(strings.Join(ix.Options, "; "))))
		}
		b.WriteString("\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func methodsMD(b *strings.Builder, r *Report, a *Aggregate) {
	fmt.Fprintf(b, "### Methods of %sRepository\n\n", a.Name)
	b.WriteString("What each method reads and writes, whatever the store (`f[*]`: every element, `f[n]`: a new element; index entries by lookup):\n\n")
	b.WriteString("| method | blocks | reads | writes | deletes | index entries read | index entries written |\n|---|---|---|---|---|---|---|\n")
	for _, m := range a.Methods {
		ac := m.Access
		writes := ac.Writes
		if ac.Counter {
			writes = append(append([]string{}, writes...), "counter")
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", m.Name, ac.Blocks, codes(ac.Reads), codes(writes), codes(ac.Deletes), codes(ac.ReadsIndex), codes(ac.WritesIndex))
	}
	b.WriteString("\nPer store: the operations, round trips and what is atomic.\n\n| method |")
	for _, s := range r.Stores {
		fmt.Fprintf(b, " %s |", storeTitle(s))
	}
	b.WriteString("\n|---|")
	for range r.Stores {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, m := range a.Methods {
		fmt.Fprintf(b, "| %s |", m.Name)
		for _, s := range r.Stores {
			c := m.Stores[s]
			var lines []string
			for _, op := range c.Ops {
				lines = append(lines, code(op))
			}
			lines = append(lines, "round trips: **"+cell(c.RoundTrips)+"**", "atomic: "+cell(c.Atomic))
			fmt.Fprintf(b, " %s |", strings.Join(lines, "<br>"))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func sampleMD(b *strings.Builder, store string, s *Sample) {
	fmt.Fprintf(b, "### Sample of %s (%s): %d blocks\n\n", storeTitle(store), cell(s.Source), s.Blocks)
	b.WriteString("| entry | stored | total bytes | largest bytes | mean bytes |\n|---|---|---|---|---|\n")
	for _, e := range s.Entries {
		name := e.Entry
		switch {
		case name == "":
			name = "ε / marker"
		case strings.HasSuffix(name, "[]"):
			name = strings.TrimSuffix(name, "[]") + "[i]"
		}
		mean := int64(0)
		if e.Count > 0 {
			mean = e.Bytes / int64(e.Count)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d |\n", code(name), e.Count, e.Bytes, e.Max, mean)
	}
	b.WriteString("\n")
	if len(s.Largest) > 0 {
		b.WriteString("Largest blocks: ")
		var parts []string
		for _, l := range s.Largest {
			parts = append(parts, fmt.Sprintf("%s %d bytes", code(l.Key), l.Bytes))
		}
		b.WriteString(strings.Join(parts, ", ") + ".\n\n")
	}
	if len(s.Partitions) > 0 {
		b.WriteString("Largest partitions: ")
		var parts []string
		for _, p := range s.Partitions {
			parts = append(parts, fmt.Sprintf("%s of %s: %d elements, %d bytes", code(p.Field), code(p.Key), p.Elements, p.Bytes))
		}
		b.WriteString(strings.Join(parts, "; ") + ".\n\n")
	}
	if s.MaxValueBytes > 0 {
		fmt.Fprintf(b, "The store's limit: %d bytes per %s.\n\n", s.MaxValueBytes, s.LimitOf)
	} else {
		b.WriteString("The store declares no size limit.\n\n")
	}
	warn := append([]string(nil), s.Warnings...)
	sort.Strings(warn)
	for _, w := range warn {
		fmt.Fprintf(b, "- **Warning:** %s\n", cell(w))
	}
	if len(warn) > 0 {
		b.WriteString("\n")
	}
	if s.Lookups != "" {
		fmt.Fprintf(b, "Lookup mapping recorded for the collection: %s.\n\n", code(s.Lookups))
	}
	if s.Recorded != nil {
		fmt.Fprintf(b, "#### Layout recorded in %s\n\n", storeTitle(store))
		recordedMD(b, s.Recorded)
	}
}
