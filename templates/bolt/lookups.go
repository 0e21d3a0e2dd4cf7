package bolt

import (
	"fmt"
	"go/types"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	t "github.com/noamgen/noamgen/templates"
)

// Names of the lookup declarations of one aggregate.

// lookupVar names the boltstore.Lookup variable of lookup l.
func (g *gen) lookupVar(l *model.Lookup) string {
	return t.LowerFirst(g.a.Name) + t.LookupTitle(l) + "BoltLookup"
}

// readFields names the function reading some fields of a block.
func (g *gen) readFields() string { return "read" + g.a.Name + "BoltFields" }

// readIndexed names the function reading the fields every lookup indexes.
func (g *gen) readIndexed() string { return "read" + g.a.Name + "BoltIndexed" }

// index names the function moving the entries of every lookup.
func (g *gen) index() string { return "index" + g.a.Name + "Bolt" }

// fieldKey is the key ScanFields reads field f by: its entry key, or the
// root entry ("") for a field of an EAO root.
func (g *gen) fieldKey(f *model.Field) string {
	if g.a.Strategy == model.EAO && !f.Partition {
		return ""
	}
	return f.Key
}

// lookupFields lists the ScanFields keys of the fields that the lookups ls
// index, sorted and without duplicates.
func (g *gen) lookupFields(ls ...*model.Lookup) []string {
	var out []string
	for _, l := range ls {
		for _, p := range l.Parts {
			out = append(out, g.fieldKey(p.Field))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func lits(ss []string) []jen.Code {
	var out []jen.Code
	for _, s := range ss {
		out = append(out, jen.Lit(s))
	}
	return out
}

func lookupNames(ls []*model.Lookup) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return strings.Join(out, ", ")
}

// lookupFuncs declares the lookups' boltstore.Lookup variables and the
// functions that writes use to keep them right.
func (g *gen) lookupFuncs(f *jen.File) {
	a := g.a
	var vars []jen.Code
	for _, l := range a.Lookups {
		layout := "key the encoded value and block key, value empty"
		if l.Unique {
			layout = "key the encoded value, value the block key of the one aggregate holding it"
		}
		fields := []jen.Code{jen.Id("Name").Op(":").Lit(t.LookupName(a, l))}
		if l.Unique {
			fields = append(fields, jen.Id("Unique").Op(":").True())
		}
		fields = append(fields,
			jen.Id("Parts").Op(":").Lit(len(l.Parts)),
			jen.Id("Keys").Op(":").Id(t.LookupKeys(a, l)),
		)
		vars = append(vars, t.Doc("%s is the index table %s (bucket %q: %s).", g.lookupVar(l), t.LookupName(a, l), t.LookupName(a, l), layout).
			Id(g.lookupVar(l)).Op("=").Add(store("Lookup").Types(jen.Id(a.Name))).Values(fields...))
	}
	f.Var().Defs(vars...)
	f.Line()

	b := jen.Id("blk").Op("*").Add(store("Block"))
	f.Add(t.Doc("%s reads only the given fields of block blk (entry keys, %q for the root entry) into a %s, for a write to compute the lookup values it changes. It returns nil if the block does not exist.", g.readFields(), "", a.Name)).
		Func().Id(g.readFields()).Params(b.Clone(), jen.Id("fields").Op("...").String()).Params(jen.Op("*").Id(a.Name), jen.Error()).Block(
		jen.If(jen.Op("!").Add(blk()).Dot("Exists").Call()).Block(jen.Return(jen.Nil(), jen.Nil())),
		jen.Id(g.v).Op(":=").Op("&").Id(a.Name).Values(),
		jen.If(jen.Err().Op(":=").Add(blk()).Dot("ScanFields").Call(g.decodeInto(jen.Id(g.v)), jen.Id("fields").Op("...")), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Err()),
		),
		jen.Return(jen.Id(g.v), jen.Nil()),
	)
	f.Line()
	all := g.lookupFields(a.Lookups...)
	f.Add(t.Doc("%s reads the fields of block blk that the lookups of %s index (%s), or returns nil if the block does not exist.", g.readIndexed(), a.Name, fieldList(all))).
		Func().Id(g.readIndexed()).Params(b.Clone()).Params(jen.Op("*").Id(a.Name), jen.Error()).Block(
		jen.Return(jen.Id(g.readFields()).Call(append([]jen.Code{blk()}, lits(all)...)...)),
	)
	f.Line()
	var moves []jen.Code
	for _, l := range a.Lookups {
		moves = append(moves, store("Reindex").Call(blk(), jen.Id(g.lookupVar(l)), jen.Id("old"), jen.Id(g.v)))
	}
	f.Add(t.Doc("%s moves the entries of every lookup of %s for block blk from the values of old to those of %s (nil for none: a new or deleted block).", g.index(), a.Name, g.v)).
		Func().Id(g.index()).Params(b.Clone(), jen.List(jen.Id("old"), jen.Id(g.v)).Op("*").Id(a.Name)).Block(moves...)
}

func fieldList(keys []string) string {
	var out []string
	for _, k := range keys {
		if k == "" {
			k = "the root entry"
		}
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}

// conv renders v converted to type to, unless it has it already.
func conv(to types.Type, v jen.Code) jen.Code {
	if b, ok := to.(*types.Basic); ok && b.Kind() == types.Int64 {
		return v
	}
	return t.Type(to).Parens(v)
}

// toInt64 renders v, of type from, converted to int64.
func toInt64(from types.Type, v jen.Code) jen.Code {
	if b, ok := from.(*types.Basic); ok && b.Kind() == types.Int64 {
		return v
	}
	return jen.Int64().Parens(v)
}

// counter renders the boltstore.Counter literal of a counter-keyed aggregate.
func (g *gen) counter() jen.Code {
	a := g.a
	idT := t.IDType(a)
	var split, with []jen.Code
	if len(a.IDParts) == 0 {
		split = []jen.Code{jen.Return(jen.Nil(), toInt64(a.ID.Type, jen.Id("id")))}
		with = []jen.Code{jen.Return(conv(a.ID.Type, jen.Id("n")))}
	} else {
		scope := jen.Nil()
		for _, p := range a.Scope() {
			scope = t.EncodeValue(p.Type, scope, jen.Id("id").Dot(p.GoName))
		}
		last := a.IDParts[len(a.IDParts)-1]
		split = []jen.Code{jen.Return(scope, toInt64(last.Type, jen.Id("id").Dot(last.GoName)))}
		with = []jen.Code{
			jen.Id("id").Dot(last.GoName).Op("=").Add(conv(last.Type, jen.Id("n"))),
			jen.Return(jen.Id("id")),
		}
	}
	idParam := jen.Id("id")
	if len(a.IDParts) == 0 {
		idParam = jen.Id("_")
	}
	return store("Counter").Types(idT).Add(t.Multi(
		jen.Id("Split").Op(":").Func().Params(jen.Id("id").Add(idT)).Params(jen.Index().Byte(), jen.Int64()).Block(split...),
		jen.Id("With").Op(":").Func().Params(idParam.Add(idT), jen.Id("n").Int64()).Add(idT).Block(with...),
	))
}

// reindex renders the statements of a write to the fields of lookups ls
// (setters, SetAt): read the old values of the fields they index into old,
// let apply make the new aggregate (named g.v) from it, and move the
// lookups' entries.
func (g *gen) reindex(what string, ls []*model.Lookup, apply ...jen.Code) []jen.Code {
	out := []jen.Code{
		jen.Comment(fmt.Sprintf("Lookup %s indexes %s: move its entries to the new values.", lookupNames(ls), what)),
		jen.List(jen.Id("old"), jen.Err()).Op(":=").Id(g.readFields()).Call(append([]jen.Code{blk()}, lits(g.lookupFields(ls...))...)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Id(g.v).Op(":=").Op("*").Id("old"),
	}
	out = append(out, apply...)
	for _, l := range ls {
		out = append(out, store("Reindex").Call(blk(), jen.Id(g.lookupVar(l)), jen.Id("old"), jen.Op("&").Id(g.v)))
	}
	return out
}

// updateLookups renders the part of Update that moves the entries of the
// lookups on the fields u sets.
func (g *gen) updateLookups() []jen.Code {
	a := g.a
	u := jen.Id("u")
	// set is the condition that u sets field f.
	set := func(f *model.Field) (jen.Code, bool) {
		switch {
		case f.Partition:
			return jen.Len(u.Clone().Dot(t.AtField(f))).Op(">").Lit(0), true
		case a.Strategy == model.EAO:
			return u.Clone().Dot("Root").Op("!=").Nil(), true
		case !f.IsID && !f.IsVersion:
			return u.Clone().Dot(f.GoName).Op("!=").Nil(), true
		}
		return nil, false
	}
	var reads []jen.Code
	var affected []*model.Field
	for _, l := range a.Lookups {
		var conds []jen.Code
		seen := map[string]bool{}
		for _, p := range l.Parts {
			c, ok := set(p.Field)
			key := g.fieldKey(p.Field)
			if !ok || seen[key] {
				continue
			}
			seen[key] = true
			conds = append(conds, c)
			if !slices.Contains(affected, p.Field) {
				affected = append(affected, p.Field)
			}
		}
		if len(conds) == 0 {
			continue
		}
		cond := jen.Null()
		for i, c := range conds {
			if i > 0 {
				cond.Op("||")
			}
			cond.Add(c)
		}
		reads = append(reads, jen.If(cond).Block(
			jen.Id("fields").Op("=").Append(append([]jen.Code{jen.Id("fields")}, lits(g.lookupFields(l))...)...),
		))
	}
	if len(reads) == 0 {
		return nil
	}
	var apply []jen.Code
	rootDone := false
	for _, f := range a.Fields {
		if !slices.Contains(affected, f) {
			continue
		}
		switch {
		case f.Partition:
			at := u.Clone().Dot(t.AtField(f))
			apply = append(apply,
				jen.Id(g.v).Dot(f.GoName).Op("=").Qual("slices", "Clone").Call(jen.Id("old").Dot(f.GoName)),
				jen.For(jen.List(jen.Id("i"), jen.Id("e")).Op(":=").Range().Add(at)).Block(
					jen.If(jen.Id("i").Op(">=").Lit(0).Op("&&").Id("i").Op("<").Len(jen.Id(g.v).Dot(f.GoName))).Block(
						jen.Id(g.v).Dot(f.GoName).Index(jen.Id("i")).Op("=").Id("e"),
					),
				),
			)
		case a.Strategy == model.EAO:
			if !rootDone {
				rootDone = true
				apply = append(apply, jen.If(u.Clone().Dot("Root").Op("!=").Nil()).Block(
					jen.Id("new"+title(g.root)).Call(u.Clone().Dot("Root")).Dot("copyTo").Call(jen.Op("&").Id(g.v)),
				))
			}
		default:
			apply = append(apply, jen.If(u.Clone().Dot(f.GoName).Op("!=").Nil()).Block(
				jen.Id(g.v).Dot(f.GoName).Op("=").Op("*").Add(u.Clone().Dot(f.GoName)),
			))
		}
	}
	out := []jen.Code{
		jen.Comment("The lookups on the fields u sets change with them: read the old values"),
		jen.Comment("of the fields they index, apply u to them and move the lookups' entries"),
		jen.Comment("(the lookups on fields u leaves alone find the same values)."),
		jen.Var().Id("fields").Index().String(),
	}
	out = append(out, reads...)
	body := []jen.Code{
		jen.List(jen.Id("old"), jen.Err()).Op(":=").Id(g.readFields()).Call(blk(), jen.Id("fields").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Id(g.v).Op(":=").Op("*").Id("old"),
	}
	body = append(body, apply...)
	body = append(body, jen.Id(g.index()).Call(blk(), jen.Id("old"), jen.Op("&").Id(g.v)))
	return append(out, jen.If(jen.Len(jen.Id("fields")).Op(">").Lit(0)).Block(body...))
}

// lookupValue renders the encoded value of lookup l from expressions, one per part.
func lookupValue(l *model.Lookup, vals []jen.Code) jen.Code {
	out := jen.Nil()
	for i, p := range l.Parts {
		out = t.EncodeValue(p.Type, out, vals[i])
	}
	return out
}

// lookupBody renders the bodies of the lookup, batch, scope, repair and
// set-up methods.
func (g *gen) lookupBody(m t.Method) []jen.Code {
	a := g.a
	ctx, c, req := jen.Id("ctx"), jen.Id("r").Dot("c"), jen.Id("req")
	switch m.Kind {
	case t.MGetMany:
		return []jen.Code{jen.Return(store("GetMany").Call(ctx, c, jen.Id("ids"), jen.Id(g.read)))}
	case t.MListBy:
		l := m.Lookup
		var rng jen.Code
		if len(l.Parts) == 1 {
			rng = t.RT("NewKeyRange").Call(lookupValue(l, []jen.Code{jen.Id("v")}))
		} else {
			rng = jen.Id(t.LookupRange(a, l)).Call(jen.Id("q"))
		}
		return []jen.Code{jen.Return(store("ListBy").Call(ctx, c, jen.Lit(m.Name), jen.Id(g.lookupVar(l)), rng, req, jen.Id(g.read)))}
	case t.MGetBy:
		l := m.Lookup
		var vals []jen.Code
		for _, p := range l.Parts {
			vals = append(vals, jen.Id(t.ParamName(p.Name)))
		}
		return []jen.Code{jen.Return(store("GetBy").Call(ctx, c, jen.Lit(m.Name), jen.Id(g.lookupVar(l)), lookupValue(l, vals), jen.Id(g.read)))}
	case t.MListScope:
		var parts []jen.Code
		for _, p := range a.Scope() {
			parts = append(parts, jen.Id(p.GoName).Op(":").Id(t.ParamName(p.GoName)))
		}
		id := t.IDType(a).(*jen.Statement).Clone().Values(parts...)
		return []jen.Code{jen.Return(store("ListScope").Call(ctx, c, jen.Lit(m.Name), id, req, jen.Id(g.read)))}
	case t.MRepair:
		args := []jen.Code{ctx, c, jen.Id(g.readIndexed())}
		for _, l := range a.Lookups {
			args = append(args, jen.Id(g.lookupVar(l)))
		}
		return []jen.Code{jen.Return(store("Repair").Call(args...))}
	case t.MEnsure:
		args := []jen.Code{ctx}
		for _, l := range a.Lookups {
			args = append(args, jen.Id(g.lookupVar(l)).Dot("Name"))
		}
		return []jen.Code{jen.Return(c.Clone().Dot("Ensure").Call(args...))}
	}
	panic(fmt.Sprintf("bolt: unknown method kind %d (%s)", m.Kind, m.Name))
}
