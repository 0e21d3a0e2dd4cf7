package templates

import (
	"fmt"
	"go/types"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
)

// This file renders the store-independent half of an aggregate's
// repository: its descriptor (runtime.Desc, built from typed accessors of
// its entries) and the implementation of the repository interface on any
// store adapter (the unexported _<agg>Repo type), whose methods are typed
// one-line calls into runtime.Repo. Store templates only add a constructor
// that opens their adapter with the descriptor.

// Names of the descriptor declarations.

// DescVar names the descriptor variable: _gameDesc.
func DescVar(a *model.Aggregate) string { return Private(a, "Desc") }

// RepoImpl names the store-independent implementation: _gameRepo.
func RepoImpl(a *model.Aggregate) string { return Private(a, "Repo") }

// EntryVar names the accessor of a field: _gameEntryFirstPlayer.
func EntryVar(a *model.Aggregate, f *model.Field) string {
	return Private(a, "Entry"+f.GoName)
}

// RootType names the root entry's value type of an EAO aggregate.
func RootType(a *model.Aggregate) string { return Private(a, "Root") }

// RootVar names the root entry's accessor.
func RootVar(a *model.Aggregate) string { return Private(a, "EntryRoot") }

// LookupVar names a lookup's descriptor: _hotelLookupCityStars.
func LookupVar(a *model.Aggregate, l *model.Lookup) string {
	return Private(a, "Lookup"+LookupTitle(l))
}

// ChangesFunc names the function turning a TUpdate into runtime.Update.
func ChangesFunc(a *model.Aggregate) string { return Private(a, "Changes") }

// GeneratedNames lists every top-level name the generated files of a
// declare, for collision checks: the store-independent file's, and those of
// the files of stores (their registrations).
func GeneratedNames(a *model.Aggregate, stores []string) []string {
	out := []string{Repo(a), KeyCodecVar(a), DescVar(a), RepoImpl(a), Opener(a), OpenersVar(a)}
	for _, n := range stores {
		name := StoreRepo(a, StoreTitle(n))
		out = append(out, name, "New"+name)
	}
	if len(a.IDParts) > 0 {
		out = append(out, KeyAppender(a), KeyReader(a))
	}
	if HasUpdate(a) {
		out = append(out, Update(a), ChangesFunc(a))
	}
	if a.Strategy == model.EAO {
		out = append(out, RootType(a), RootVar(a))
	}
	for _, f := range a.Fields {
		if !f.IsID && (a.Strategy == model.ETF || f.Partition || f.IsVersion) {
			out = append(out, EntryVar(a, f))
		}
	}
	for _, l := range a.Lookups {
		out = append(out, LookupValues(a, l), LookupVar(a, l))
		if len(l.Parts) > 1 {
			out = append(out, LookupQuery(a, l), LookupRange(a, l))
		}
	}
	return out
}

func accessor(a *model.Aggregate, f *model.Field) jen.Code {
	v := Var(a)
	ptrFn := func(t jen.Code) jen.Code {
		return jen.Func().Params(jen.Id(v).Op("*").Id(a.Name)).Op("*").Add(t).Block(jen.Return(jen.Op("&").Id(v).Dot(f.GoName)))
	}
	switch {
	case f.IsAdd:
		return RT("NewNumber").Call(jen.Lit(f.Key), jen.Lit(f.GoName), ptrFn(Type(f.Type)))
	case f.IsVersion:
		return RT("NewVersion").Call(jen.Lit(f.Key), jen.Lit(f.GoName), ptrFn(jen.Int64()))
	case f.Partition:
		return RT("NewPartition").Call(jen.Lit(f.Key), jen.Lit(f.GoName), ptrFn(jen.Index().Add(Type(f.Elem))))
	}
	return RT("NewField").Call(jen.Lit(f.Key), jen.Lit(f.GoName), ptrFn(Type(f.Type)))
}

// descriptor adds the entry accessors, the root type and the descriptor.
func descriptor(f *jen.File, a *model.Aggregate) {
	v := Var(a)
	idT := IDType(a)
	if a.Strategy == model.EAO {
		root := a.Root()
		var fields, keys []jen.Code
		var get, set []jen.Code
		for _, fl := range root {
			fields = append(fields, jen.Id(fl.GoName).Add(Type(fl.Type)).Tag(map[string]string{"bson": fl.Key}))
			keys = append(keys, jen.Lit(fl.Key))
			get = append(get, jen.Id(fl.GoName).Op(":").Id(v).Dot(fl.GoName))
			set = append(set, jen.Id(v).Dot(fl.GoName).Op("=").Id("root").Dot(fl.GoName))
		}
		f.Add(Doc("%s is the value of the root entry of a %s block (strategy eao): every field but the id, the version and the partitioned ones.", RootType(a), a.Name)).
			Type().Id(RootType(a)).Struct(fields...)
		f.Line()
		f.Add(Doc("%s is the root entry ε of a %s block.", RootVar(a), a.Name)).
			Var().Id(RootVar(a)).Op("=").Add(RT("NewRoot")).Call(
			jen.Index().String().Values(keys...),
			jen.Func().Params(jen.Id(v).Op("*").Id(a.Name)).Id(RootType(a)).Block(jen.Return(jen.Id(RootType(a)).Add(Multi(get...)))),
			jen.Func().Params(jen.Id(v).Op("*").Id(a.Name), jen.Id("root").Id(RootType(a))).Block(set...),
		)
		f.Line()
	}

	var vars []jen.Code
	var fieldList []jen.Code
	for _, fl := range a.Fields {
		if fl.IsID || fl.IsVersion {
			continue
		}
		// Under EAO a field is part of the root entry; its accessor still
		// exists for stores that map fields one by one (MongoDB).
		fieldList = append(fieldList, jen.Id(EntryVar(a, fl)))
		vars = append(vars, jen.Id(EntryVar(a, fl)).Op("=").Add(accessor(a, fl)))
	}
	if a.Version != nil {
		vars = append(vars, jen.Id(EntryVar(a, a.Version)).Op("=").Add(accessor(a, a.Version)))
	}
	if len(vars) > 0 {
		f.Add(Doc("The entries of a %s block (NoAM layout: %s), one accessor each.", a.Name, EntryList(a))).Var().Defs(vars...)
		f.Line()
	}

	var lookups []jen.Code
	for _, l := range a.Lookups {
		var fieldKeys []jen.Code
		var seen []string
		for _, p := range l.Parts {
			if !slices.Contains(seen, p.Field.Key) {
				seen = append(seen, p.Field.Key)
				fieldKeys = append(fieldKeys, jen.Lit(p.Field.Key))
			}
		}
		items := []jen.Code{jen.Id("Name").Op(":").Lit(l.Name)}
		if l.Unique {
			items = append(items, jen.Id("Unique").Op(":").True())
		}
		items = append(items,
			jen.Id("Parts").Op(":").Lit(len(l.Parts)),
			jen.Id("Fields").Op(":").Index().String().Values(fieldKeys...),
			jen.Id("Values").Op(":").Id(LookupValues(a, l)),
		)
		items = append(items, lookupPaths(l)...)
		lookups = append(lookups, jen.Id(LookupVar(a, l)).Op("=").Op("&").Add(RT("Lookup")).Types(jen.Id(a.Name)).Values(items...))
	}
	if len(lookups) > 0 {
		f.Add(Doc("The lookups of %s.", a.Name)).Var().Defs(lookups...)
		f.Line()
	}

	items := []jen.Code{jen.Id("Aggregate").Op(":").Lit(a.Name)}
	if a.Collection != a.Name {
		items = append(items, jen.Id("Collection").Op(":").Lit(a.Collection))
	}
	items = append(items,
		jen.Id("Keys").Op(":").Id(KeyCodecVar(a)),
		jen.Id("ID").Op(":").Func().Params(jen.Id(v).Op("*").Id(a.Name)).Op("*").Add(idT).Block(jen.Return(jen.Op("&").Id(v).Dot(a.ID.GoName))),
	)
	if a.Strategy == model.EAO {
		items = append(items, jen.Id("EAO").Op(":").True(), jen.Id("Root").Op(":").Id(RootVar(a)))
	}
	if len(fieldList) > 0 {
		items = append(items, jen.Id("Fields").Op(":").Index().Op("*").Add(RT("Field")).Types(jen.Id(a.Name)).Values(fieldList...))
	}
	if a.Version != nil {
		items = append(items, jen.Id("Version").Op(":").Id(EntryVar(a, a.Version)))
	}
	if a.Created != nil {
		items = append(items, jen.Id("Created").Op(":").Id(EntryVar(a, a.Created)))
	}
	if a.Updated != nil {
		items = append(items, jen.Id("Updated").Op(":").Id(EntryVar(a, a.Updated)))
	}
	if a.Expires != nil {
		items = append(items, jen.Id("Expires").Op(":").Id(EntryVar(a, a.Expires)))
	}
	if len(a.Lookups) > 0 {
		var ls []jen.Code
		for _, l := range a.Lookups {
			ls = append(ls, jen.Id(LookupVar(a, l)))
		}
		items = append(items, jen.Id("Lookups").Op(":").Index().Op("*").Add(RT("Lookup")).Types(jen.Id(a.Name)).Values(ls...))
	}
	if a.Counter {
		items = append(items, jen.Id("Counter").Op(":").Add(counter(a)))
	}
	if a.UUID != "" {
		version := map[string]string{"v7": "UUIDv7", "v4": "UUIDv4"}[a.UUID]
		items = append(items, jen.Id("NewID").Op(":").Add(RT("UUIDKey")).Types(idT).Call(RT(version)))
	}
	f.Add(Doc("%s describes %s to the store adapters: the same layout on every store.", DescVar(a), a.Name)).
		Var().Id(DescVar(a)).Op("=").Parens(jen.Op("&").Add(RT("Desc")).Types(jen.Id(a.Name), idT).Add(Multi(items...))).Dot("Init").Call()
	f.Line()
}

// counter renders the runtime.Counter of a counter-keyed aggregate.
func counter(a *model.Aggregate) jen.Code {
	idT := IDType(a)
	var split, with []jen.Code
	if len(a.IDParts) == 0 {
		split = []jen.Code{jen.Return(jen.Nil(), toInt64(a.ID.Type, jen.Id("id")))}
		with = []jen.Code{jen.Return(conv(a.ID.Type, jen.Id("n")))}
	} else {
		scope := jen.Nil()
		for _, p := range a.Scope() {
			scope = EncodeValue(p.Type, scope, jen.Id("id").Dot(p.GoName))
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
	return jen.Op("&").Add(RT("Counter")).Types(idT).Add(Multi(
		jen.Id("Split").Op(":").Func().Params(jen.Id("id").Add(idT)).Params(jen.Index().Byte(), jen.Int64()).Block(split...),
		jen.Id("With").Op(":").Func().Params(idParam.Add(idT), jen.Id("n").Int64()).Add(idT).Block(with...),
	))
}

func conv(to types.Type, v jen.Code) jen.Code {
	if b, ok := to.(*types.Basic); ok && b.Kind() == types.Int64 {
		return v
	}
	return Type(to).Parens(v)
}

func toInt64(from types.Type, v jen.Code) jen.Code {
	if b, ok := from.(*types.Basic); ok && b.Kind() == types.Int64 {
		return v
	}
	return jen.Int64().Parens(v)
}

// changes renders the function turning a TUpdate into a runtime.Update.
func changes(f *jen.File, a *model.Aggregate) {
	if !HasUpdate(a) {
		return
	}
	ch := jen.Id("c").Dot("Changes")
	body := []jen.Code{jen.Var().Id("c").Add(RT("Update")).Types(jen.Id(a.Name))}
	if a.Version != nil {
		body = append(body, jen.Id("c").Dot("IfVersion").Op("=").Id("u").Dot("IfVersion"))
	}
	if a.Strategy == model.EAO {
		root := []jen.Code{}
		for _, fl := range a.Root() {
			root = append(root, jen.Id(fl.GoName).Op(":").Id("u").Dot("Root").Dot(fl.GoName))
		}
		body = append(body, jen.If(jen.Id("u").Dot("Root").Op("!=").Nil()).Block(
			ch.Clone().Op("=").Append(ch.Clone(), RT("Set").Call(jen.Id(RootVar(a)), jen.Id(RootType(a)).Add(Multi(root...)))),
		))
	}
	for _, fl := range a.Settable() {
		body = append(body, jen.If(jen.Id("u").Dot(fl.GoName).Op("!=").Nil()).Block(
			ch.Clone().Op("=").Append(ch.Clone(), RT("Set").Call(jen.Id(EntryVar(a, fl)), jen.Op("*").Id("u").Dot(fl.GoName))),
		))
	}
	for _, fl := range a.Addable() {
		body = append(body, jen.If(jen.Id("u").Dot(Adder(fl)).Op("!=").Lit(0)).Block(
			ch.Clone().Op("=").Append(ch.Clone(), RT("AddTo").Call(jen.Id(EntryVar(a, fl)), jen.Id("u").Dot(Adder(fl)), jen.Nil())),
		))
	}
	for _, fl := range a.Partitions() {
		at := jen.Id("u").Dot(AtField(fl))
		body = append(body, jen.If(jen.Len(at.Clone()).Op(">").Lit(0)).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("i")).Op(":=").Range().Qual("slices", "Sorted").Call(jen.Qual("maps", "Keys").Call(at.Clone()))).Block(
				ch.Clone().Op("=").Append(ch.Clone(), RT("SetAt").Call(jen.Id(EntryVar(a, fl)), jen.Id("i"), at.Clone().Index(jen.Id("i")))),
			),
		))
	}
	body = append(body, jen.Return(jen.Id("c")))
	f.Add(Doc("%s turns u into the entry changes it stands for (elements in index order).", ChangesFunc(a))).
		Func().Id(ChangesFunc(a)).Params(jen.Id("u").Id(Update(a))).Add(RT("Update")).Types(jen.Id(a.Name)).Block(body...)
	f.Line()
}

// repoImpl renders the store-independent implementation of the interface.
func repoImpl(f *jen.File, a *model.Aggregate, stores []string) {
	impl := RepoImpl(a)
	f.Add(Doc("%s implements %s on any store adapter: each method is a typed call into runtime.Repo, which holds the descriptor and the adapter. %s embed it.", impl, Repo(a), implList(a, stores))).
		Type().Id(impl).Struct(jen.Id("r").Add(RT("Repo")).Types(jen.Id(a.Name), IDType(a)))
	f.Line()
	f.Var().Id("_").Id(Repo(a)).Op("=").Id(impl).Values()
	f.Line()
	r := jen.Id("r").Dot("r")
	for _, m := range Methods(a, stores...) {
		var call jen.Code
		switch m.Kind {
		case MGet:
			call = r.Clone().Dot("Get").Call(jen.Id("ctx"), jen.Id("id"))
		case MCreate, MPut:
			call = r.Clone().Dot(m.Name).Call(jen.Id("ctx"), jen.Id(Var(a)))
		case MDelete:
			call = r.Clone().Dot("Delete").Call(jen.Id("ctx"), jen.Id("id"))
		case MSet:
			call = r.Clone().Dot("Set").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id("id"), RT("Set").Call(jen.Id(EntryVar(a, m.Field)), jen.Id("v")))
		case MAdd:
			call = r.Clone().Dot("Add").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id("id"), jen.Id(EntryVar(a, m.Field)), jen.Id("delta"))
		case MAppend:
			call = r.Clone().Dot("Append").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id("id"), jen.Id(EntryVar(a, m.Field)), jen.Id("e"))
		case MSetAt:
			call = r.Clone().Dot("Set").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id("id"), RT("SetAt").Call(jen.Id(EntryVar(a, m.Field)), jen.Id("i"), jen.Id("e")))
		case MListElems:
			call = RT("ListElems").Types(Type(m.Field.Elem)).Call(jen.Id("ctx"), r.Clone(), jen.Lit(m.Name), jen.Id("id"), jen.Id(EntryVar(a, m.Field)), jen.Id("req"))
		case MUpdate:
			call = r.Clone().Dot("Update").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id("id"), jen.Id(ChangesFunc(a)).Call(jen.Id("u")))
		case MGetMany:
			call = r.Clone().Dot("GetMany").Call(jen.Id("ctx"), jen.Id("ids"))
		case MListBy:
			l := m.Lookup
			var rng jen.Code
			if len(l.Parts) == 1 {
				rng = RT("NewKeyRange").Call(EncodeValue(l.Parts[0].Type, jen.Nil(), jen.Id("v")))
			} else {
				rng = jen.Id(LookupRange(a, l)).Call(jen.Id("q"))
			}
			call = r.Clone().Dot("ListBy").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id(LookupVar(a, m.Lookup)), rng, jen.Id("req"))
		case MCountBy:
			l := m.Lookup
			var rng jen.Code
			if len(l.Parts) == 1 {
				rng = RT("NewKeyRange").Call(EncodeValue(l.Parts[0].Type, jen.Nil(), jen.Id("v")))
			} else {
				rng = jen.Id(LookupRange(a, l)).Call(jen.Id("q"))
			}
			call = r.Clone().Dot("CountBy").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id(LookupVar(a, m.Lookup)), rng)
		case MCount:
			call = r.Clone().Dot("Count").Call(jen.Id("ctx"))
		case MCreateMany, MPutMany:
			call = r.Clone().Dot(m.Name).Call(jen.Id("ctx"), jen.Id(Var(a)+"s"))
		case MDeleteMany:
			call = r.Clone().Dot("DeleteMany").Call(jen.Id("ctx"), jen.Id("ids"))
		case MSweep:
			call = r.Clone().Dot("Sweep").Call(jen.Id("ctx"), jen.Id("o"))
		case MGetBy:
			key := jen.Nil()
			for _, p := range m.Lookup.Parts {
				key = EncodeValue(p.Type, key, jen.Id(ParamName(p.Name)))
			}
			call = r.Clone().Dot("GetBy").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Id(LookupVar(a, m.Lookup)), key)
		case MListScope:
			var parts []jen.Code
			for _, p := range a.Scope() {
				parts = append(parts, jen.Id(p.GoName).Op(":").Id(ParamName(p.GoName)))
			}
			call = r.Clone().Dot("ListScope").Call(jen.Id("ctx"), jen.Lit(m.Name), IDType(a).(*jen.Statement).Clone().Values(parts...), jen.Id("req"))
		case MCountScope:
			var parts []jen.Code
			for _, p := range a.Scope() {
				parts = append(parts, jen.Id(p.GoName).Op(":").Id(ParamName(p.GoName)))
			}
			call = r.Clone().Dot("CountScope").Call(jen.Id("ctx"), jen.Lit(m.Name), IDType(a).(*jen.Statement).Clone().Values(parts...))
		case MRepair:
			call = r.Clone().Dot("Repair").Call(jen.Id("ctx"))
		case MEnsure:
			call = r.Clone().Dot("Ensure").Call(jen.Id("ctx"))
		case MMigrate:
			call = r.Clone().Dot("Migrate").Call(jen.Id("ctx"), jen.Id("o"))
		case MList:
			call = r.Clone().Dot("List").Call(jen.Id("ctx"), jen.Id("req"))
		case MAll:
			call = r.Clone().Dot("All").Call(jen.Id("ctx"))
		default:
			panic(fmt.Sprintf("templates: method kind %d has no call", m.Kind))
		}
		// The interface documents the method; here its first sentence says
		// what the call does.
		first, _, _ := strings.Cut(m.Doc, ". ")
		f.Add(Doc("%s.", strings.TrimSuffix(first, "."))).Func().Params(jen.Id("r").Id(impl)).Add(m.Signature()).Block(jen.Return(call))
		f.Line()
	}
}

// StoreRepoDecl renders a store's repository type and constructor: the
// type embeds the store-independent implementation and keeps the adapter.
// The constructor takes the store's client (parameter client of type
// clientType) and options, opens the adapter with open, the store
// package's Open, called with the client, the descriptor and the options,
// and passes the options to runtime.NewRepo too: each keeps its own.
// storeOpts names the store's options in the constructor's documentation
// ("" when it has none). An init function adds the constructor to the
// aggregate's stores, for New<T>Repository.
func StoreRepoDecl(f *jen.File, a *model.Aggregate, title, doc, over, storeOpts, client string, clientType, adapter, open jen.Code) {
	name := StoreRepo(a, title)
	st, _ := storeByTitle(title)
	doc += storeCosts(a, st.Name)
	f.Add(Doc("%s", doc)).Type().Id(name).Struct(
		jen.Id(RepoImpl(a)),
		jen.Id("store").Add(adapter),
	)
	f.Line()
	opts := "opts are the repository's options (runtime.WithHook, runtime.WithClock)"
	if storeOpts != "" {
		opts += " and the store's (" + storeOpts + ")"
	}
	f.Add(Doc("New%s returns the %s repository over %s. %s.", name, a.Name, over, opts)).
		Func().Id("New"+name).Params(jen.Id(client).Add(clientType), jen.Id("opts").Op("...").Add(RT("Option"))).Op("*").Id(name).Block(
		jen.Id("s").Op(":=").Add(open).Call(jen.Id(client), jen.Id(DescVar(a)), jen.Id("opts").Op("...")),
		jen.Return(jen.Op("&").Id(name).Values(jen.Id(RepoImpl(a)).Values(RT("NewRepo").Call(jen.Id(DescVar(a)), jen.Id("s"), jen.Id("opts").Op("..."))), jen.Id("s"))),
	)
	f.Line()
	f.Commentf("init adds %s to the stores %s picks from.", name, Opener(a))
	f.Func().Id("init").Params().Block(
		RT("AddOpener").Call(jen.Id(OpenersVar(a)), jen.Lit(st.Name), jen.Id("New"+name)),
	)
	f.Line()
}

// storeByTitle returns the registered store whose Title is title.
func storeByTitle(title string) (Store, bool) {
	for _, n := range StoreNames() {
		if st, ok := Lookup(n); ok && StoreTitle(n) == title {
			return st, true
		}
	}
	return Store{}, false
}
