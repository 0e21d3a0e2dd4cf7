package templates

import (
	"fmt"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
)

// Names of lookup-related declarations.

// LookupTitle is the exported form of a lookup's name in method and type
// names (cityStars -> CityStars, a lookup on field SKU -> SKU).
func LookupTitle(l *model.Lookup) string {
	if l.Title != "" {
		return l.Title
	}
	return strings.ToUpper(l.Name[:1]) + l.Name[1:]
}

// ListBy and GetBy name the lookup methods.
func ListBy(l *model.Lookup) string { return "ListBy" + LookupTitle(l) }
func GetBy(l *model.Lookup) string  { return "GetBy" + LookupTitle(l) }

// LookupQuery names the query type of a composite lookup (HotelCityStarsQuery).
func LookupQuery(a *model.Aggregate, l *model.Lookup) string {
	return a.Name + LookupTitle(l) + "Query"
}

// LookupValues names the generated function returning an aggregate's
// encoded lookup values (without the block key) for lookup l.
func LookupValues(a *model.Aggregate, l *model.Lookup) string {
	return Private(a, LookupTitle(l)+"Values")
}

// LookupRange names the generated function turning a lookup query into a key range.
func LookupRange(a *model.Aggregate, l *model.Lookup) string {
	return Private(a, LookupTitle(l)+"Range")
}

// LookupName is the qualified name of a lookup, used for cursors and by
// stores to name index tables: "Hotel.cityStars".
func LookupName(a *model.Aggregate, l *model.Lookup) string { return a.Collection + "." + l.Name }

// ListScope names the method listing the children of one counter scope.
func ListScope(a *model.Aggregate) string {
	var b strings.Builder
	b.WriteString("ListBy")
	for _, p := range a.Scope() {
		b.WriteString(p.GoName)
	}
	return b.String()
}

// CountScope names the method counting the children of one counter scope.
func CountScope(a *model.Aggregate) string { return "Count" + strings.TrimPrefix(ListScope(a), "List") }

// RefsFunc names the generated function collecting an aggregate's references to target.
func RefsFunc(a *model.Aggregate, target string) string { return a.Name + target + "Refs" }

// Targets lists the aggregates a references, in first-seen order.
func Targets(a *model.Aggregate) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range a.Refs() {
		if !seen[r.Target] {
			seen[r.Target] = true
			out = append(out, r.Target)
		}
	}
	return out
}

// EncodeValue renders an expression appending value v (of type t, a string
// or integer type) to b with the runtime key codec.
func EncodeValue(t types.Type, b, v jen.Code) *jen.Statement {
	switch model.KindOf(t) {
	case model.KeyInt:
		if isBasic(t, types.Int64) {
			return RT("AppendInt").Call(b, v)
		}
		return RT("AppendInt").Call(b, jen.Int64().Parens(v))
	case model.KeyUint:
		if isBasic(t, types.Uint64) {
			return RT("AppendUint").Call(b, v)
		}
		return RT("AppendUint").Call(b, jen.Uint64().Parens(v))
	}
	if isBasic(t, types.String) {
		return RT("AppendString").Call(b, v)
	}
	return RT("AppendString").Call(b, jen.String().Parens(v))
}

func isBasic(t types.Type, k types.BasicKind) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Kind() == k
}

// decodeValue renders statements reading a value of type t from the key
// reader r into the assignable target.
func decodeValue(t types.Type, target jen.Code) []jen.Code {
	method, conv := readMethod(t)
	val := jen.Id("v")
	if conv {
		val = Type(t).Parens(jen.Id("v"))
	}
	return []jen.Code{
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Id("r").Dot(method).Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("id"), jen.Err())),
		jen.Add(target).Op("=").Add(val),
	}
}

// readMethod is the KeyReader method reading values of type t, and whether
// its result needs a conversion to t.
func readMethod(t types.Type) (string, bool) {
	switch model.KindOf(t) {
	case model.KeyInt:
		return "Int", !isBasic(t, types.Int64)
	case model.KeyUint:
		return "Uint", !isBasic(t, types.Uint64)
	}
	return "String", !isBasic(t, types.String)
}

// walk renders code that visits every value at goPath (steps separated by
// ".", "[]" marking a slice step) inside expr of type t, skipping nil
// pointers; leaf renders the statements for one value and its type.
func walk(t types.Type, expr *jen.Statement, steps []string, depth int, leaf func(v *jen.Statement, t types.Type) []jen.Code) []jen.Code {
	// Dereference pointers.
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return []jen.Code{jen.If(expr.Clone().Op("!=").Nil()).Block(walk(p.Elem(), jen.Parens(jen.Op("*").Add(expr)), steps, depth, leaf)...)}
	}
	if len(steps) == 0 {
		return leaf(expr, t)
	}
	step := steps[0]
	if step == "[]" {
		var elem types.Type
		switch u := t.Underlying().(type) {
		case *types.Slice:
			elem = u.Elem()
		case *types.Array:
			elem = u.Elem()
		default:
			panic(fmt.Sprintf("templates: slice step on %s", t))
		}
		x := jen.Id(fmt.Sprintf("x%d", depth))
		return []jen.Code{jen.For(jen.List(jen.Id("_"), x.Clone()).Op(":=").Range().Add(expr)).Block(walk(elem, x, steps[1:], depth+1, leaf)...)}
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		panic(fmt.Sprintf("templates: field step %s on %s", step, t))
	}
	for i := 0; i < st.NumFields(); i++ {
		if st.Field(i).Name() == step {
			return walk(st.Field(i).Type(), expr.Clone().Dot(step), steps[1:], depth, leaf)
		}
	}
	panic(fmt.Sprintf("templates: no field %s in %s", step, t))
}

// splitPath turns "Games[].Game" into ["Games", "[]", "Game"].
func splitPath(goPath string) []string {
	var out []string
	for _, s := range strings.Split(goPath, ".") {
		n := 0
		for strings.HasSuffix(s, "[]") {
			s = strings.TrimSuffix(s, "[]")
			n++
		}
		out = append(out, s)
		for ; n > 0; n-- {
			out = append(out, "[]")
		}
	}
	return out
}

// lookupDecls adds the store-independent declarations of a's lookups, ref
// collectors and counters to f.
func lookupDecls(f *jen.File, s *model.Schema, a *model.Aggregate) {
	v := Var(a)
	for _, l := range a.Lookups {
		// Key function.
		var body []jen.Code
		var parts []*jen.Statement
		var build func(i int) []jen.Code
		build = func(i int) []jen.Code {
			if i == len(l.Parts) {
				key := jen.Nil()
				for j, p := range l.Parts {
					key = EncodeValue(p.Type, key, parts[j])
				}
				// Zero values too: which values a lookup indexes is the
				// runtime's rule (runtime.Lookup.Keys).
				return []jen.Code{jen.Id("keys").Op("=").Append(jen.Id("keys"), key)}
			}
			return walk(a.StructType, jen.Id(v), splitPath(l.Parts[i].GoPath), i*4, func(val *jen.Statement, _ types.Type) []jen.Code {
				parts = append(parts[:i], val)
				return build(i + 1)
			})
		}
		body = append(body, jen.Var().Id("keys").Index().Index().Byte())
		body = append(body, build(0)...)
		ret := jen.Return(jen.Id("keys"))
		if l.Multi() {
			ret = jen.Return(RT("SortKeys").Call(jen.Id("keys")))
		}
		body = append(body, ret)
		f.Add(Doc("%s returns the values of lookup %s held by %s, zero values included, each encoded with the key codec (without the block key)%s.", LookupValues(a, l), LookupName(a, l), v,
			map[bool]string{true: ", sorted and without duplicates", false: ""}[l.Multi()])).
			Func().Id(LookupValues(a, l)).Params(jen.Id(v).Op("*").Id(a.Name)).Index().Index().Byte().Block(body...)
		f.Line()

		// Query type and range function.
		if len(l.Parts) > 1 {
			var fields []jen.Code
			for _, p := range l.Parts {
				fields = append(fields, Doc("%s is the condition on %s.", p.Name, p.Path).Id(p.Name).Add(RT("Cond")).Types(Type(p.Type)))
			}
			f.Add(Doc("%s selects %s aggregates by lookup %s (%s, in this order): Eq conditions on a leading run of parts, then at most one range condition; the zero condition matches anything. Results come in (%s, block key) order. Set the fields (%s) or chain the methods (%s), which take each part's own type, so that a constant converts.",
				LookupQuery(a, l), a.Name, l.Name, partPaths(l), partPaths(l), exampleLiteral(a, l), exampleChain(a, l))).Type().Id(LookupQuery(a, l)).Struct(fields...)
			f.Line()
			queryMethods(f, a, l)
			rng := jen.Id("r").Op(":=").Add(RT("NewKeyRange")).Call(jen.Nil())
			stmts := []jen.Code{rng}
			for _, p := range l.Parts {
				stmts = append(stmts, jen.Id("r").Op("=").Add(RT("Narrow")).Call(jen.Id("r"), jen.Lit(p.Path), jen.Id("q").Dot(p.Name), encoderFunc(p.Type)))
			}
			stmts = append(stmts, jen.Return(jen.Id("r")))
			f.Add(Doc("%s is the key range selected by q.", LookupRange(a, l))).
				Func().Id(LookupRange(a, l)).Params(jen.Id("q").Id(LookupQuery(a, l))).Op("*").Add(RT("KeyRange")).Block(stmts...)
			f.Line()
		}
	}

	// Reference collectors (application-side joins).
	for _, target := range Targets(a) {
		tgt := s.Aggregate(target)
		if tgt == nil || tgt.ID == nil {
			continue
		}
		keyT := Type(tgt.ID.Type)
		// Locals are named per function, clear of the aggregate's names.
		taken := map[string]bool{v: true, Plural(v): true}
		local := func(name string) string {
			for taken[name] {
				name += "_"
			}
			taken[name] = true
			return name
		}
		out, zero, seen, add, k := local("out"), local("zero"), local("seen"), local("add"), local("k")
		var visits []jen.Code
		for _, r := range a.Refs() {
			if r.Target != target {
				continue
			}
			visits = append(visits, walk(a.StructType, jen.Id(v), splitPath(r.GoPath), 0, func(val *jen.Statement, t types.Type) []jen.Code {
				return walk(t, val, refSteps(t), 10, func(kv *jen.Statement, _ types.Type) []jen.Code {
					return []jen.Code{jen.Id(add).Call(kv)}
				})
			})...)
		}
		f.Add(Doc("%s collects the distinct %s keys that %s aggregates reference, in first-seen order, skipping zero keys: pass them to %sRepository.GetMany to resolve all references in one round trip.",
			RefsFunc(a, target), target, a.Name, target)).
			Func().Id(RefsFunc(a, target)).Params(jen.Id(Plural(v)).Op("...").Op("*").Id(a.Name)).Index().Add(keyT).Block(
			jen.Var().Id(out).Index().Add(keyT),
			jen.Var().Id(zero).Add(keyT),
			jen.Id(seen).Op(":=").Map(keyT).Bool().Values(),
			jen.Id(add).Op(":=").Func().Params(jen.Id(k).Add(keyT)).Block(
				jen.If(jen.Id(k).Op("!=").Id(zero).Op("&&").Op("!").Id(seen).Index(jen.Id(k))).Block(
					jen.Id(seen).Index(jen.Id(k)).Op("=").True(),
					jen.Id(out).Op("=").Append(jen.Id(out), jen.Id(k)),
				),
			),
			jen.For(jen.List(jen.Id("_"), jen.Id(v)).Op(":=").Range().Id(Plural(v))).Block(
				append([]jen.Code{jen.If(jen.Id(v).Op("==").Nil()).Block(jen.Continue())}, visits...)...,
			),
			jen.Return(jen.Id(out)),
		)
		f.Line()
	}
}

// refSteps are the steps from a ref field's value to its keys: a slice of
// keys is ranged over.
func refSteps(t types.Type) []string {
	if _, ok := t.Underlying().(*types.Slice); ok {
		return []string{"[]"}
	}
	return nil
}

// Plural is the name of a slice of v values.
func Plural(v string) string {
	if strings.HasSuffix(v, "s") {
		return v + "es"
	}
	return v + "s"
}

func partPaths(l *model.Lookup) string {
	var out []string
	for _, p := range l.Parts {
		out = append(out, p.Path)
	}
	return strings.Join(out, ", ")
}

// encoderFunc renders a func([]byte, T) []byte appending a value of type t.
func encoderFunc(t types.Type) jen.Code {
	return jen.Func().Params(jen.Id("b").Index().Byte(), jen.Id("v").Add(Type(t))).Index().Byte().Block(
		jen.Return(EncodeValue(t, jen.Id("b"), jen.Id("v"))),
	)
}

// lookupPaths renders the descriptor items of l that stores with native
// secondary indexes read: Table, IndexZero and the document path, kind and
// multiplicity of each part.
func lookupPaths(l *model.Lookup) []jen.Code {
	var items []jen.Code
	if l.Table {
		items = append(items, jen.Id("Table").Op(":").True())
	}
	if l.IndexZero {
		items = append(items, jen.Id("IndexZero").Op(":").True())
	}
	var paths []jen.Code
	for _, p := range l.Parts {
		kind := "PartString"
		switch model.KindOf(p.Type) {
		case model.KeyInt:
			kind = "PartInt"
		case model.KeyUint:
			kind = "PartUint"
		}
		vals := []jen.Code{jen.Id("Path").Op(":").Lit(strings.ReplaceAll(p.Path, "[]", "")), jen.Id("Kind").Op(":").Add(RT(kind))}
		if p.Multi {
			vals = append(vals, jen.Id("Multi").Op(":").True())
		}
		paths = append(paths, jen.Values(vals...))
	}
	return append(items, jen.Id("Paths").Op(":").Index().Add(RT("LookupPath")).Values(paths...))
}

// condOps are the condition constructors of runtime (Eq, Gt, ...), with
// what each matches, for the query methods generated per part.
var condOps = []struct{ name, doc string }{
	{"Eq", "== v"}, {"Gt", "> v"}, {"Gte", ">= v"}, {"Lt", "< v"}, {"Lte", "<= v"}, {"Between", "in [lo, hi)"},
}

// queryMethods writes, for each part of composite lookup l, one method per
// condition constructor on the query type (StarsGte(4)): the parameter has
// the part's type, so an untyped constant converts to it, where
// runtime.Gte(4) would be a Cond[int] whatever the part's type.
func queryMethods(f *jen.File, a *model.Aggregate, l *model.Lookup) {
	q := LookupQuery(a, l)
	for _, p := range l.Parts {
		for _, op := range condOps {
			name := p.Name + op.name
			params := []jen.Code{jen.Id("v").Add(Type(p.Type))}
			args := []jen.Code{jen.Id("v")}
			if op.name == "Between" {
				params = []jen.Code{jen.List(jen.Id("lo"), jen.Id("hi")).Add(Type(p.Type))}
				args = []jen.Code{jen.Id("lo"), jen.Id("hi")}
			}
			f.Add(Doc("%s returns q with the condition %s %s.", name, p.Path, op.doc)).
				Func().Params(jen.Id("q").Id(q)).Id(name).Params(params...).Id(q).Block(
				jen.Id("q").Dot(p.Name).Op("=").Add(RT(op.name)).Call(args...),
				jen.Return(jen.Id("q")),
			)
			f.Line()
		}
	}
}

// exampleLiteral and exampleChain spell a query on the first two parts of
// l for its doc comment.
func exampleLiteral(a *model.Aggregate, l *model.Lookup) string {
	return fmt.Sprintf("%s{%s: runtime.Eq(x)}", LookupQuery(a, l), l.Parts[0].Name)
}

func exampleChain(a *model.Aggregate, l *model.Lookup) string {
	return fmt.Sprintf("%s{}.%sEq(x).%sGte(y)", LookupQuery(a, l), l.Parts[0].Name, l.Parts[1].Name)
}
