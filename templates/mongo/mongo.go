// Package mongo shapes MongoDB repositories (go.mongodb.org/mongo-driver/v2).
//
// Mapping (NoAM section 7.3, Fig. 10): one collection per aggregate class,
// one document per block with the block key as _id, one top-level field per
// entry. Partitioned fields are arrays written element by element; their
// lengths live under _len so that an append learns its index atomically.
//
// Lookups are collections of index entries, kept by the protocol of
// runtime/mongostore (mongostore.Indexed): the generated code says which
// fields hold lookup values, how to compute them (the store-independent
// <agg><Lookup>Keys functions) and how each write changes them; writes
// that touch no lookup field keep their single-command form. Counters live
// in mongostore.CountersCollection.
package mongo

import (
	"fmt"
	"go/types"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	t "github.com/noamgen/noamgen/templates"
)

const (
	bsonPkg    = "go.mongodb.org/mongo-driver/v2/bson"
	mongoPkg   = "go.mongodb.org/mongo-driver/v2/mongo"
	optionsPkg = "go.mongodb.org/mongo-driver/v2/mongo/options"
	storePkg   = "github.com/noamgen/noamgen/runtime/mongostore"
)

func init() {
	t.Register(t.Store{
		Name:  "mongo",
		Title: "Mongo",
		Imports: map[string]string{
			bsonPkg: "bson", mongoPkg: "mongo", optionsPkg: "options", storePkg: "mongostore",
		},
		Generate: generate,
	})
}

// gen holds the names used while generating one aggregate's repository.
type gen struct {
	a    *model.Aggregate
	repo string // GameMongoRepository
	doc  string // gameMongoDoc
	lens string // gameMongoLens
	conv string // method of doc converting to the aggregate, e.g. "game"
	v    string // aggregate parameter name
	idx  bool   // the aggregate has lookups: writes go through r.lookups
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	g := &gen{
		a:    a,
		repo: t.StoreRepo(a, "Mongo"),
		doc:  t.Unexported(a, "MongoDoc"),
		lens: t.Unexported(a, "MongoLens"),
		conv: "aggregate",
		v:    t.Var(a),
		idx:  len(a.Lookups) > 0,
	}
	g.types(f)
	for _, m := range t.Methods(a) {
		f.Line()
		f.Add(t.Doc("%s", m.Doc)).Func().Params(jen.Id("r").Op("*").Id(g.repo)).Add(m.Signature()).Block(g.body(m)...)
		if m.Kind == t.MCreate && a.Counter {
			f.Line()
			f.Add(t.Doc("create stores the new block %s, whose key is set, for operation op.", g.v)).
				Func().Params(jen.Id("r").Op("*").Id(g.repo)).Id("create").Params(t.Ctx(), jen.Id("op").String(), jen.Id(g.v).Op("*").Id(a.Name)).Error().
				Block(g.insert(jen.Id("op"))...)
		}
	}
}

func bsonD(elems ...jen.Code) *jen.Statement { return jen.Qual(bsonPkg, "D").Values(elems...) }

func bsonE(key, value jen.Code) *jen.Statement {
	return jen.Values(jen.Id("Key").Op(":").Add(key), jen.Id("Value").Op(":").Add(value))
}

func byID(id jen.Code) *jen.Statement { return jen.Qual(storePkg, "ByID").Call(id) }

func rtFail(op string, a *model.Aggregate, id jen.Code, kind string) *jen.Statement {
	k := jen.Nil()
	if kind != "" {
		k = t.RT(kind)
	}
	return t.RT("Fail").Call(jen.Lit(op), jen.Lit(a.Name), id, k, jen.Nil())
}

func storeErr(op string, a *model.Aggregate, id jen.Code) *jen.Statement {
	return jen.Qual(storePkg, "Err").Call(jen.Lit(op), jen.Lit(a.Name), id, jen.Err())
}

func (g *gen) types(f *jen.File) {
	a := g.a
	doc := fmt.Sprintf("%s is the MongoDB implementation of %s. Each %s block is one document of collection %q with the block key as _id and one top-level field per entry (%s).",
		g.repo, t.Repo(a), a.Name, a.Collection, t.EntryList(a))
	if g.idx {
		var tables []string
		for _, l := range a.Lookups {
			tables = append(tables, fmt.Sprintf("%q", storeTable(a, l)))
		}
		what := "Its index tables are the collections"
		if len(tables) == 1 {
			what = "Its index table is the collection"
		}
		doc += fmt.Sprintf(" %s %s, kept right by the protocol of package mongostore (the documents carry its hidden fields _seq and _inc).", what, joinAnd(tables))
	}
	if a.Counter {
		doc += " Block keys are allocated from counters in collection \"noam_counters\" (mongostore.CountersCollection)."
	}
	fields := []jen.Code{jen.Id("coll").Op("*").Qual(mongoPkg, "Collection")}
	vals := []jen.Code{jen.Id("coll").Op(":").Id("coll")}
	if g.idx {
		fields = append(fields, jen.Id("lookups").Op("*").Add(g.indexedType()))
		vals = append(vals, jen.Id("lookups").Op(":").Qual(storePkg, "NewIndexed").Call(g.indexedSpec()))
	}
	if a.Counter {
		fields = append(fields, jen.Id("counters").Op("*").Qual(mongoPkg, "Collection"))
		vals = append(vals, jen.Id("counters").Op(":").Qual(storePkg, "Counters").Call(jen.Id("db")))
	}
	f.Add(t.Doc("%s", doc)).Type().Id(g.repo).Struct(fields...)
	f.Line()
	f.Add(t.Doc("New%s returns a repository over db's %q collection.", g.repo, a.Collection)).Func().Id("New"+g.repo).Params(jen.Id("db").Op("*").Qual(mongoPkg, "Database")).Op("*").Id(g.repo).Block(
		jen.Id("coll").Op(":=").Qual(storePkg, "Collection").Call(jen.Id("db"), jen.Lit(a.Collection)),
		jen.Return(jen.Op("&").Id(g.repo).Add(t.Multi(vals...))),
	)
	f.Line()
	f.Comment("Collection returns the underlying collection.")
	f.Func().Params(jen.Id("r").Op("*").Id(g.repo)).Id("Collection").Params().Op("*").Qual(mongoPkg, "Collection").Block(jen.Return(jen.Id("r").Dot("coll")))
	f.Line()
	f.Var().Id("_").Id(t.Repo(a)).Op("=").Parens(jen.Op("*").Id(g.repo)).Parens(jen.Nil())
	f.Line()

	// Document type.
	docType := t.Doc("%s is the stored form of a %s block.", g.doc, a.Name)
	fields = nil
	for _, fl := range a.Fields {
		key := fl.Key
		if fl.IsID {
			key = "_id"
		}
		fields = append(fields, jen.Id(fl.GoName).Add(t.Type(fl.Type)).Tag(map[string]string{"bson": key}))
	}
	parts := a.Partitions()
	if len(parts) > 0 {
		fields = append(fields, jen.Id("Len").Id(g.lens).Tag(map[string]string{"bson": "_len"}))
	}
	if g.idx {
		fields = append(fields, jen.Id(stampField).Qual(storePkg, "Stamp").Tag(map[string]string{"bson": ",inline"}))
	}
	f.Add(docType).Type().Id(g.doc).Struct(fields...)
	f.Line()
	if len(parts) > 0 {
		doc := t.Doc("%s holds the lengths of %s's partitioned arrays.", g.lens, a.Name)
		var lf []jen.Code
		for _, p := range parts {
			lf = append(lf, jen.Id(p.GoName).Int().Tag(map[string]string{"bson": p.Key}))
		}
		f.Add(doc).Type().Id(g.lens).Struct(lf...)
		f.Line()
	}

	// Conversions.
	convDoc := t.Doc("new%s converts %s to its document.", title(g.doc), g.v)
	vals = nil
	for _, fl := range a.Fields {
		vals = append(vals, jen.Id(fl.GoName).Op(":").Id(g.v).Dot(fl.GoName))
	}
	if len(parts) > 0 {
		var lv []jen.Code
		for _, p := range parts {
			lv = append(lv, jen.Id(p.GoName).Op(":").Len(jen.Id(g.v).Dot(p.GoName)))
		}
		vals = append(vals, jen.Id("Len").Op(":").Id(g.lens).Values(lv...))
	}
	f.Add(convDoc).Func().Id("new" + title(g.doc)).Params(jen.Id(g.v).Op("*").Id(a.Name)).Op("*").Id(g.doc).Block(
		jen.Return(jen.Op("&").Id(g.doc).Add(t.Multi(vals...))),
	)
	f.Line()
	back := []jen.Code{}
	for _, fl := range a.Fields {
		back = append(back, jen.Id(fl.GoName).Op(":").Id("d").Dot(fl.GoName))
	}
	f.Add(t.Doc("%s converts the document back to a %s.", g.conv, a.Name)).Func().Params(jen.Id("d").Op("*").Id(g.doc)).Id(g.conv).Params().Op("*").Id(a.Name).Block(
		jen.Return(jen.Op("&").Id(a.Name).Add(t.Multi(back...))),
	)
}

func title(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// versionInc is the $inc element that bumps the version, or nil.
func (g *gen) versionInc() []jen.Code {
	if g.a.Version == nil {
		return nil
	}
	return []jen.Code{bsonE(jen.Lit(g.a.Version.Key), jen.Lit(1))}
}

func (g *gen) versionKey() jen.Code {
	if g.a.Version == nil {
		return jen.Lit("")
	}
	return jen.Lit(g.a.Version.Key)
}

func (g *gen) body(m t.Method) []jen.Code {
	a := g.a
	id := jen.Id("id")
	switch m.Kind {
	case t.MGet:
		return []jen.Code{
			jen.Var().Id("d").Id(g.doc),
			jen.If(jen.Err().Op(":=").Id("r").Dot("coll").Dot("FindOne").Call(jen.Id("ctx"), byID(id)).Dot("Decode").Call(jen.Op("&").Id("d")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), storeErr("Get", a, id)),
			),
			jen.Return(jen.Id("d").Dot(g.conv).Call(), jen.Nil()),
		}
	case t.MCreate:
		if a.Counter {
			return g.allocating("Create")
		}
		return g.insert(jen.Lit("Create"))
	case t.MPut:
		vid := jen.Id(g.v).Dot(a.ID.GoName)
		if a.Counter {
			cond := g.countedZero()
			if a.Version != nil {
				cond = cond.Op("&&").Id(g.v).Dot(a.Version.GoName).Op("==").Lit(0)
			}
			counted, typ := g.counted(jen.Id(g.v))
			out := []jen.Code{
				jen.If(cond).Block(g.allocate("Put")...),
				jen.If(jen.Err().Op(":=").Qual(storePkg, "Raise").Call(jen.Id("ctx"), jen.Id("r").Dot("counters"), jen.Lit("Put"), jen.Lit(a.Name), vid, g.counterID(jen.Id(g.v)), toInt64(typ, counted)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			}
			return append(out, g.put()...)
		}
		return g.put()
	case t.MDelete:
		if g.idx {
			return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("Delete").Call(jen.Id("ctx"), jen.Lit("Delete"), id))}
		}
		return []jen.Code{
			jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("DeleteOne").Call(jen.Id("ctx"), byID(id)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr("Delete", a, id))),
			jen.If(jen.Id("res").Dot("DeletedCount").Op("==").Lit(0)).Block(jen.Return(rtFail("Delete", a, id, "ErrNotFound"))),
			jen.Return(jen.Nil()),
		}
	case t.MSet:
		if g.idx && len(a.LookupsOf(m.Field)) > 0 {
			fields := []jen.Code{jen.Id("Set").Op(":").Add(bsonD(bsonE(jen.Lit(m.Field.Key), jen.Id("v"))))}
			if inc := g.versionInc(); inc != nil {
				fields = append(fields, jen.Id("Inc").Op(":").Add(bsonD(inc...)))
			}
			fields = append(fields, jen.Id("Apply").Op(":").Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Block(
				jen.Id(g.v).Dot(m.Field.GoName).Op("=").Id("v"),
			))
			return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("Change").Call(jen.Id("ctx"), jen.Lit(m.Name), id, g.change(fields...)))}
		}
		update := []jen.Code{bsonE(jen.Lit("$set"), bsonD(bsonE(jen.Lit(m.Field.Key), jen.Id("v"))))}
		if inc := g.versionInc(); inc != nil {
			update = append(update, bsonE(jen.Lit("$inc"), bsonD(inc...)))
		}
		return g.updateOne(m.Name, byID(id), bsonD(update...))
	case t.MAppend:
		if g.idx && len(a.LookupsOf(m.Field)) > 0 {
			var fields []jen.Code
			if inc := g.versionInc(); inc != nil {
				fields = append(fields, jen.Id("Inc").Op(":").Add(bsonD(inc...)))
			}
			fields = append(fields, jen.Id("Apply").Op(":").Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Block(
				jen.Id(g.v).Dot(m.Field.GoName).Op("=").Append(jen.Id(g.v).Dot(m.Field.GoName), jen.Id("e")),
			))
			return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("Append").Call(jen.Id("ctx"), jen.Lit(m.Name), id, jen.Lit(m.Field.Key), jen.Id("e"), g.change(fields...)))}
		}
		return []jen.Code{
			jen.Return(jen.Qual(storePkg, "Append").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(m.Name), jen.Lit(a.Name), id, jen.Lit(m.Field.Key), jen.Id("e"), g.versionKey())),
		}
	case t.MSetAt:
		fl := m.Field
		update := []jen.Code{bsonE(jen.Lit("$set"), bsonD(bsonE(jen.Id("elem").Dot("Path").Call(), jen.Id("e"))))}
		if inc := g.versionInc(); inc != nil {
			update = append(update, bsonE(jen.Lit("$inc"), bsonD(inc...)))
		}
		if g.idx && len(a.LookupsOf(fl)) > 0 {
			fields := []jen.Code{
				jen.Id("Filter").Op(":").Add(bsonD(bsonE(jen.Lit("_id"), id), bsonE(jen.Id("elem").Dot("Path").Call(), bsonD(bsonE(jen.Lit("$exists"), jen.True()))))),
				jen.Id("Set").Op(":").Add(bsonD(bsonE(jen.Id("elem").Dot("Path").Call(), jen.Id("e")))),
			}
			if inc := g.versionInc(); inc != nil {
				fields = append(fields, jen.Id("Inc").Op(":").Add(bsonD(inc...)))
			}
			fields = append(fields,
				jen.Id("Elems").Op(":").Index().Qual(storePkg, "Elem").Values(jen.Id("elem")),
				jen.Id("Apply").Op(":").Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Block(
					jen.If(jen.Id("i").Op(">=").Lit(0).Op("&&").Id("i").Op("<").Len(jen.Id(g.v).Dot(fl.GoName))).Block(
						jen.Id(g.v).Dot(fl.GoName).Index(jen.Id("i")).Op("=").Id("e"),
					),
				))
			return []jen.Code{
				jen.Id("elem").Op(":=").Qual(storePkg, "Elem").Values(jen.Id("Field").Op(":").Lit(fl.Key), jen.Id("Index").Op(":").Id("i")),
				jen.Comment("The filter makes sure the element exists: $set would otherwise pad the array."),
				jen.Return(jen.Id("r").Dot("lookups").Dot("Change").Call(jen.Id("ctx"), jen.Lit(m.Name), id, g.change(fields...))),
			}
		}
		out := []jen.Code{
			jen.Id("elem").Op(":=").Qual(storePkg, "Elem").Values(jen.Id("Field").Op(":").Lit(fl.Key), jen.Id("Index").Op(":").Id("i")),
			jen.Comment("The filter makes sure the element exists: $set would otherwise pad the array."),
			jen.Id("filter").Op(":=").Add(bsonD(bsonE(jen.Lit("_id"), id), bsonE(jen.Id("elem").Dot("Path").Call(), bsonD(bsonE(jen.Lit("$exists"), jen.True()))))),
			jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("UpdateOne").Call(jen.Id("ctx"), jen.Id("filter"), bsonD(update...)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr(m.Name, a, id))),
			jen.If(jen.Id("res").Dot("MatchedCount").Op("==").Lit(0)).Block(
				jen.Return(jen.Qual(storePkg, "NoMatch").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(m.Name), jen.Lit(a.Name), id, g.versionKey(), jen.Lit(0), jen.Index().Qual(storePkg, "Elem").Values(jen.Id("elem")))),
			),
			jen.Return(jen.Nil()),
		}
		return out
	case t.MListElems:
		fl := m.Field
		return []jen.Code{
			jen.Return(jen.Qual(storePkg, "Elements").Types(t.Type(fl.Elem)).Call(
				jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(m.Name), jen.Lit(a.Name), id,
				jen.Id(t.KeyAppender(a)).Call(jen.Nil(), id), jen.Lit(fl.Key), jen.Id("req"))),
		}
	case t.MUpdate:
		return g.update()
	case t.MList:
		return []jen.Code{
			jen.Return(jen.Qual(storePkg, "List").Call(
				jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(a.Name), jen.Id(t.ListQuery(a)), jen.Id(t.KeyCodecVar(a)), jen.Id("req"),
				jen.Parens(jen.Op("*").Id(g.doc)).Dot(g.conv),
				jen.Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Add(t.IDType(a)).Block(jen.Return(jen.Id(g.v).Dot(a.ID.GoName))),
			)),
		}
	case t.MAll:
		return []jen.Code{
			jen.Return(jen.Qual(storePkg, "All").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(a.Name), jen.Parens(jen.Op("*").Id(g.doc)).Dot(g.conv))),
		}
	case t.MGetMany:
		return []jen.Code{jen.Return(jen.Qual(storePkg, "GetMany").Call(
			jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(a.Name), jen.Id("ids"), jen.Parens(jen.Op("*").Id(g.doc)).Dot(g.conv), g.keyOf()))}
	case t.MListBy:
		l := m.Lookup
		var rng jen.Code
		if len(l.Parts) == 1 {
			rng = t.RT("NewKeyRange").Call(t.EncodeValue(l.Parts[0].Type, jen.Nil(), jen.Id("v")))
		} else {
			rng = jen.Id(t.LookupRange(a, l)).Call(jen.Id("q"))
		}
		return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("ListBy").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Lit(l.Name), rng, jen.Id("req")))}
	case t.MGetBy:
		l := m.Lookup
		key := jen.Nil()
		for _, p := range l.Parts {
			key = t.EncodeValue(p.Type, key, jen.Id(t.ParamName(p.Name)))
		}
		return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("GetBy").Call(jen.Id("ctx"), jen.Lit(m.Name), jen.Lit(l.Name), key))}
	case t.MListScope:
		scope := jen.Nil()
		var parts []jen.Code
		for _, p := range a.Scope() {
			name := jen.Id(t.ParamName(p.GoName))
			scope = t.EncodeValue(p.Type, scope, name)
			parts = append(parts, jen.Id(p.GoName).Op(":").Add(name))
		}
		last := a.IDParts[len(a.IDParts)-1]
		parts = append(parts, jen.Id(last.GoName).Op(":").Add(fromInt64(last.Type, jen.Id("n"))))
		counted, typ := g.counted(jen.Id(g.v))
		return []jen.Code{jen.Return(jen.Qual(storePkg, "ListScope").Call(
			jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Id("r").Dot("counters"), jen.Lit(m.Name), jen.Lit(a.Name), scope,
			jen.Func().Params(jen.Id("n").Int64()).Add(t.IDType(a)).Block(jen.Return(t.IDType(a).(*jen.Statement).Clone().Values(parts...))),
			jen.Id("req"), jen.Parens(jen.Op("*").Id(g.doc)).Dot(g.conv),
			jen.Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Int64().Block(jen.Return(toInt64(typ, counted))),
		))}
	case t.MRepair:
		return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("Repair").Call(jen.Id("ctx")))}
	case t.MEnsure:
		var more []jen.Code
		if a.Counter {
			more = append(more, jen.Qual(storePkg, "CountersCollection"))
		}
		if g.idx {
			return []jen.Code{jen.Return(jen.Id("r").Dot("lookups").Dot("EnsureIndexes").Call(append([]jen.Code{jen.Id("ctx")}, more...)...))}
		}
		args := append([]jen.Code{jen.Id("ctx"), jen.Id("r").Dot("coll").Dot("Database").Call(), jen.Lit(a.Name), jen.Lit(a.Collection)}, more...)
		return []jen.Code{jen.Return(jen.Qual(storePkg, "EnsureCollections").Call(args...))}
	}
	panic(fmt.Sprintf("mongo: no body for method %s (kind %d)", m.Name, m.Kind))
}

// put is the body of Put for a block whose key is set.
func (g *gen) put() []jen.Code {
	a := g.a
	vid := jen.Id(g.v).Dot(a.ID.GoName)
	if g.idx {
		mk := []jen.Code{jen.Id("d").Op(":=").Id("new" + title(g.doc)).Call(jen.Id(g.v))}
		versioned, version := jen.False(), jen.Lit(0)
		if a.Version != nil {
			versioned, version = jen.True(), jen.Id(g.v).Dot(a.Version.GoName)
			mk = append(mk, jen.Id("d").Dot(a.Version.GoName).Op("=").Id(g.v).Dot(a.Version.GoName).Op("+").Lit(1))
		}
		mk = append(mk, jen.Id("d").Dot(stampField).Op("=").Id("stamp"), jen.Return(jen.Id("d")))
		call := jen.Id("r").Dot("lookups").Dot("Put").Call(jen.Id("ctx"), jen.Lit("Put"), vid, jen.Id(g.v), versioned, version,
			jen.Func().Params(jen.Id("stamp").Qual(storePkg, "Stamp")).Any().Block(mk...))
		if a.Version == nil {
			return []jen.Code{jen.Return(call)}
		}
		return []jen.Code{
			jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id(g.v).Dot(a.Version.GoName).Op("++"),
			jen.Return(jen.Nil()),
		}
	}
	if a.Version == nil {
		return []jen.Code{
			jen.Id("opts").Op(":=").Qual(optionsPkg, "Replace").Call().Dot("SetUpsert").Call(jen.True()),
			jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("ReplaceOne").Call(jen.Id("ctx"), byID(vid), jen.Id("new"+title(g.doc)).Call(jen.Id(g.v)), jen.Id("opts")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(storeErr("Put", a, vid)),
			),
			jen.Return(jen.Nil()),
		}
	}
	ver := a.Version.GoName
	return []jen.Code{
		jen.Id("d").Op(":=").Id("new" + title(g.doc)).Call(jen.Id(g.v)),
		jen.Id("d").Dot(ver).Op("=").Id(g.v).Dot(ver).Op("+").Lit(1),
		jen.If(jen.Id(g.v).Dot(ver).Op("==").Lit(0)).Block(
			jen.Comment("A new block: inserting fails if one exists already."),
			jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("InsertOne").Call(jen.Id("ctx"), jen.Id("d")), jen.Err().Op("!=").Nil()).Block(
				jen.If(jen.Qual(mongoPkg, "IsDuplicateKeyError").Call(jen.Err())).Block(
					jen.Return(t.RT("Fail").Call(jen.Lit("Put"), jen.Lit(a.Name), vid, t.RT("ErrConflict"), jen.Err())),
				),
				jen.Return(storeErr("Put", a, vid)),
			),
		).Else().Block(
			jen.Comment("Replace only the version the caller read."),
			jen.Id("filter").Op(":=").Add(bsonD(bsonE(jen.Lit("_id"), vid), bsonE(jen.Lit(a.Version.Key), jen.Id(g.v).Dot(ver)))),
			jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("ReplaceOne").Call(jen.Id("ctx"), jen.Id("filter"), jen.Id("d")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr("Put", a, vid))),
			jen.If(jen.Id("res").Dot("MatchedCount").Op("==").Lit(0)).Block(
				jen.Return(rtFail("Put", a, vid, "ErrConflict")),
			),
		),
		jen.Id(g.v).Dot(ver).Op("=").Id("d").Dot(ver),
		jen.Return(jen.Nil()),
	}
}

// updateOne runs an unconditional single-document update of block id.
func (g *gen) updateOne(op string, filter, update jen.Code) []jen.Code {
	id := jen.Id("id")
	return []jen.Code{
		jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("UpdateOne").Call(jen.Id("ctx"), filter, update),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr(op, g.a, id))),
		jen.If(jen.Id("res").Dot("MatchedCount").Op("==").Lit(0)).Block(jen.Return(rtFail(op, g.a, id, "ErrNotFound"))),
		jen.Return(jen.Nil()),
	}
}

func (g *gen) update() []jen.Code {
	a := g.a
	id := jen.Id("id")
	appendSet := func(key, val jen.Code) jen.Code {
		return jen.Id("set").Op("=").Append(jen.Id("set"), jen.Qual(bsonPkg, "E").Add(bsonE(key, val)))
	}
	out := []jen.Code{
		jen.Id("filter").Op(":=").Add(byID(id)),
		jen.Var().Id("set").Qual(bsonPkg, "D"),
	}
	if a.Strategy == model.EAO {
		var sets []jen.Code
		for _, fl := range a.Root() {
			sets = append(sets, appendSet(jen.Lit(fl.Key), jen.Id("u").Dot("Root").Dot(fl.GoName)))
		}
		out = append(out, jen.If(jen.Id("u").Dot("Root").Op("!=").Nil()).Block(sets...))
	}
	for _, fl := range a.Settable() {
		out = append(out, jen.If(jen.Id("u").Dot(fl.GoName).Op("!=").Nil()).Block(
			appendSet(jen.Lit(fl.Key), jen.Op("*").Id("u").Dot(fl.GoName)),
		))
	}
	parts := a.Partitions()
	if len(parts) > 0 {
		out = append(out, jen.Var().Id("elems").Index().Qual(storePkg, "Elem"))
		for _, fl := range parts {
			out = append(out, jen.For(jen.List(jen.Id("_"), jen.Id("i")).Op(":=").Range().Qual("slices", "Sorted").Call(jen.Qual("maps", "Keys").Call(jen.Id("u").Dot(t.AtField(fl))))).Block(
				jen.Id("elem").Op(":=").Qual(storePkg, "Elem").Values(jen.Id("Field").Op(":").Lit(fl.Key), jen.Id("Index").Op(":").Id("i")),
				jen.Id("elems").Op("=").Append(jen.Id("elems"), jen.Id("elem")),
				jen.Comment("Only existing elements are replaced: $set would otherwise pad the array."),
				jen.Id("filter").Op("=").Append(jen.Id("filter"), jen.Qual(bsonPkg, "E").Add(bsonE(jen.Id("elem").Dot("Path").Call(), bsonD(bsonE(jen.Lit("$exists"), jen.True()))))),
				appendSet(jen.Id("elem").Dot("Path").Call(), jen.Id("u").Dot(t.AtField(fl)).Index(jen.Id("i"))),
			))
		}
	}
	version := jen.Lit(0)
	if a.Version != nil {
		version = jen.Id("u").Dot("IfVersion")
		out = append(out, jen.If(jen.Id("u").Dot("IfVersion").Op("!=").Lit(0)).Block(
			jen.Id("filter").Op("=").Append(jen.Id("filter"), jen.Qual(bsonPkg, "E").Add(bsonE(jen.Lit(a.Version.Key), jen.Id("u").Dot("IfVersion")))),
		))
	}
	elems := jen.Nil()
	if len(parts) > 0 {
		elems = jen.Id("elems")
	}
	noMatch := jen.Qual(storePkg, "NoMatch").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit("Update"), jen.Lit(a.Name), id, g.versionKey(), version, elems)
	out = append(out,
		jen.If(jen.Len(jen.Id("set")).Op("==").Lit(0)).Block(
			jen.Comment("Nothing to write: only check that the block exists (at the expected version)."),
			jen.List(jen.Id("n"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("CountDocuments").Call(jen.Id("ctx"), jen.Id("filter")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr("Update", a, id))),
			jen.If(jen.Id("n").Op("==").Lit(0)).Block(jen.Return(noMatch)),
			jen.Return(jen.Nil()),
		),
	)
	if g.idx {
		out = append(out, g.updateLookups(version, elems)...)
	}
	update := []jen.Code{bsonE(jen.Lit("$set"), jen.Id("set"))}
	if inc := g.versionInc(); inc != nil {
		update = append(update, bsonE(jen.Lit("$inc"), bsonD(inc...)))
	}
	out = append(out,
		jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("UpdateOne").Call(jen.Id("ctx"), jen.Id("filter"), bsonD(update...)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr("Update", a, id))),
		jen.If(jen.Id("res").Dot("MatchedCount").Op("==").Lit(0)).Block(jen.Return(noMatch)),
		jen.Return(jen.Nil()),
	)
	return out
}

// stampField is the document field holding the hidden fields of the lookup
// protocol (mongostore.Stamp, inline: _seq and _inc).
const stampField = "NoamStamp"

// storeTable names the collection of a lookup's index table (as
// mongostore.TableName does).
func storeTable(a *model.Aggregate, l *model.Lookup) string { return a.Collection + "__" + l.Name }

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := ""
	for i, it := range items {
		switch {
		case i == 0:
		case i == len(items)-1:
			out += " and "
		default:
			out += ", "
		}
		out += it
	}
	return out
}

// indexedType renders mongostore.Indexed[K, doc, *A].
func (g *gen) indexedType() *jen.Statement {
	return jen.Qual(storePkg, "Indexed").Types(t.IDType(g.a), jen.Id(g.doc), jen.Op("*").Id(g.a.Name))
}

// change renders mongostore.Change[*A]{fields}.
func (g *gen) change(fields ...jen.Code) *jen.Statement {
	return jen.Qual(storePkg, "Change").Types(jen.Op("*").Id(g.a.Name)).Add(t.Multi(fields...))
}

// keyOf renders a function literal returning an aggregate's block key.
func (g *gen) keyOf() *jen.Statement {
	return jen.Func().Params(jen.Id(g.v).Op("*").Id(g.a.Name)).Add(t.IDType(g.a)).Block(jen.Return(jen.Id(g.v).Dot(g.a.ID.GoName)))
}

// lookupFields lists the top-level fields holding lookup values, in field order.
func lookupFields(a *model.Aggregate) []*model.Field {
	var out []*model.Field
	for _, f := range a.Fields {
		if len(a.LookupsOf(f)) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// indexedSpec renders the mongostore.Indexed value describing the lookups.
func (g *gen) indexedSpec() *jen.Statement {
	a := g.a
	var fields []jen.Code
	for _, f := range lookupFields(a) {
		fields = append(fields, jen.Lit(f.Key))
	}
	var lookups []jen.Code
	for _, l := range a.Lookups {
		vals := []jen.Code{jen.Id("Name").Op(":").Lit(l.Name)}
		if l.Unique {
			vals = append(vals, jen.Id("Unique").Op(":").True())
		}
		vals = append(vals, jen.Id("Keys").Op(":").Id(t.LookupKeys(a, l)))
		lookups = append(lookups, jen.Values(vals...))
	}
	vals := []jen.Code{
		jen.Id("Agg").Op(":").Lit(a.Name),
		jen.Id("Coll").Op(":").Id("coll"),
		jen.Id("Codec").Op(":").Id(t.KeyCodecVar(a)),
	}
	if a.Version != nil {
		vals = append(vals, jen.Id("VersionKey").Op(":").Lit(a.Version.Key))
	}
	vals = append(vals,
		jen.Id("Fields").Op(":").Index().String().Values(fields...),
		jen.Id("Lookups").Op(":").Index().Qual(storePkg, "Lookup").Types(jen.Op("*").Id(a.Name)).Add(t.Multi(lookups...)),
		jen.Id("Convert").Op(":").Parens(jen.Op("*").Id(g.doc)).Dot(g.conv),
		jen.Id("KeyOf").Op(":").Add(g.keyOf()),
	)
	return g.indexedType().Add(t.Multi(vals...))
}

// isInt64 reports whether t is int64 itself.
func isInt64(typ types.Type) bool {
	b, ok := typ.(*types.Basic)
	return ok && b.Kind() == types.Int64
}

// toInt64 converts an integer expression of type typ to int64.
func toInt64(typ types.Type, x jen.Code) jen.Code {
	if isInt64(typ) {
		return x
	}
	return jen.Int64().Parens(x)
}

// fromInt64 converts the int64 expression x to type typ.
func fromInt64(typ types.Type, x jen.Code) jen.Code {
	if isInt64(typ) {
		return x
	}
	return t.Type(typ).Parens(x)
}

// counted is the key part a counter allocates (the id, or the last part of
// a composite id) as an expression on the aggregate expression v, and its type.
func (g *gen) counted(v jen.Code) (*jen.Statement, types.Type) {
	a := g.a
	if len(a.IDParts) == 0 {
		return jen.Add(v).Dot(a.ID.GoName), a.ID.Type
	}
	last := a.IDParts[len(a.IDParts)-1]
	return jen.Add(v).Dot(a.ID.GoName).Dot(last.GoName), last.Type
}

// counterID renders the counter of the aggregate v's scope.
func (g *gen) counterID(v jen.Code) *jen.Statement {
	scope := jen.Nil()
	for _, p := range g.a.Scope() {
		scope = t.EncodeValue(p.Type, scope, jen.Add(v).Dot(g.a.ID.GoName).Dot(p.GoName))
	}
	return jen.Qual(storePkg, "CounterID").Call(jen.Lit(g.a.Collection), scope)
}

// insert is the body that inserts the new block g.v, whose key is set, for
// operation op (an expression), setting its version to 1.
func (g *gen) insert(op jen.Code) []jen.Code {
	a := g.a
	vid := jen.Id(g.v).Dot(a.ID.GoName)
	mk := []jen.Code{jen.Id("d").Op(":=").Id("new" + title(g.doc)).Call(jen.Id(g.v))}
	if a.Version != nil {
		mk = append(mk, jen.Id("d").Dot(a.Version.GoName).Op("=").Lit(1))
	}
	var out []jen.Code
	var call *jen.Statement
	if g.idx {
		mk = append(mk, jen.Id("d").Dot(stampField).Op("=").Id("stamp"), jen.Return(jen.Id("d")))
		call = jen.Id("r").Dot("lookups").Dot("Create").Call(jen.Id("ctx"), op, vid, jen.Id(g.v),
			jen.Func().Params(jen.Id("stamp").Qual(storePkg, "Stamp")).Any().Block(mk...))
	} else {
		out = mk
		call = jen.Qual(storePkg, "Insert").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), op, jen.Lit(a.Name), vid, jen.Id("d"))
	}
	if a.Version == nil {
		return append(out, jen.Return(call))
	}
	return append(out,
		jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Id(g.v).Dot(a.Version.GoName).Op("=").Lit(1),
		jen.Return(jen.Nil()))
}

// countedZero renders the condition that g.v's counted key part is 0.
func (g *gen) countedZero() *jen.Statement {
	counted, _ := g.counted(jen.Id(g.v))
	return counted.Op("==").Lit(0)
}

// allocating is the body of Create for a counter-keyed aggregate: an
// explicit key raises the counter, a zero one is allocated.
func (g *gen) allocating(op string) []jen.Code {
	a := g.a
	counted, typ := g.counted(jen.Id(g.v))
	vid := jen.Id(g.v).Dot(a.ID.GoName)
	out := []jen.Code{
		jen.If(counted.Clone().Op("!=").Lit(0)).Block(
			jen.If(jen.Err().Op(":=").Qual(storePkg, "Raise").Call(jen.Id("ctx"), jen.Id("r").Dot("counters"), jen.Lit(op), jen.Lit(a.Name), vid, g.counterID(jen.Id(g.v)), toInt64(typ, counted)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Return(jen.Id("r").Dot("create").Call(jen.Id("ctx"), jen.Lit(op), jen.Id(g.v))),
		),
	}
	return append(out, g.allocate(op)...)
}

// allocate returns the statements allocating g.v's counted key part and
// creating the block with it; the caller's value is only changed on success.
func (g *gen) allocate(op string) []jen.Code {
	a := g.a
	alloc := g.v + "Alloc"
	counted, typ := g.counted(jen.Id(alloc))
	return []jen.Code{
		jen.Return(jen.Qual(storePkg, "Allocate").Call(jen.Id("ctx"), jen.Id("r").Dot("counters"), jen.Lit(op), jen.Lit(a.Name), g.counterID(jen.Id(g.v)),
			jen.Func().Params(jen.Id("n").Int64()).Error().Block(
				jen.Id(alloc).Op(":=").Op("*").Id(g.v),
				counted.Op("=").Add(fromInt64(typ, jen.Id("n"))),
				jen.If(jen.Err().Op(":=").Id("r").Dot("create").Call(jen.Id("ctx"), jen.Lit(op), jen.Op("&").Id(alloc)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Op("*").Id(g.v).Op("=").Id(alloc),
				jen.Return(jen.Nil()),
			))),
	}
}

// updateLookups returns the statements of Update that hand a change of
// lookup fields to the lookup protocol; version and elems are the
// expressions of the version condition and the elements written.
func (g *gen) updateLookups(version, elems jen.Code) []jen.Code {
	a := g.a
	v := jen.Id(g.v)
	var conds []jen.Code
	var apply []jen.Code
	if a.Strategy == model.EAO {
		var sets []jen.Code
		for _, fl := range a.Root() {
			if len(a.LookupsOf(fl)) > 0 {
				sets = append(sets, v.Clone().Dot(fl.GoName).Op("=").Id("u").Dot("Root").Dot(fl.GoName))
			}
		}
		if len(sets) > 0 {
			conds = append(conds, jen.Id("u").Dot("Root").Op("!=").Nil())
			apply = append(apply, jen.If(jen.Id("u").Dot("Root").Op("!=").Nil()).Block(sets...))
		}
	}
	for _, fl := range a.Settable() {
		if len(a.LookupsOf(fl)) > 0 {
			conds = append(conds, jen.Id("u").Dot(fl.GoName).Op("!=").Nil())
			apply = append(apply, jen.If(jen.Id("u").Dot(fl.GoName).Op("!=").Nil()).Block(
				v.Clone().Dot(fl.GoName).Op("=").Op("*").Id("u").Dot(fl.GoName),
			))
		}
	}
	for _, fl := range a.Partitions() {
		if len(a.LookupsOf(fl)) > 0 {
			at := jen.Id("u").Dot(t.AtField(fl))
			conds = append(conds, jen.Len(at).Op(">").Lit(0))
			apply = append(apply, jen.For(jen.List(jen.Id("i"), jen.Id("e")).Op(":=").Range().Add(at)).Block(
				jen.If(jen.Id("i").Op(">=").Lit(0).Op("&&").Id("i").Op("<").Len(v.Clone().Dot(fl.GoName))).Block(
					v.Clone().Dot(fl.GoName).Index(jen.Id("i")).Op("=").Id("e"),
				),
			))
		}
	}
	if len(conds) == 0 {
		return nil
	}
	cond := jen.Add(conds[0])
	for _, c := range conds[1:] {
		cond = cond.Op("||").Add(c)
	}
	fields := []jen.Code{
		jen.Id("Filter").Op(":").Id("filter"),
		jen.Id("Set").Op(":").Id("set"),
	}
	if inc := g.versionInc(); inc != nil {
		fields = append(fields, jen.Id("Inc").Op(":").Add(bsonD(inc...)))
	}
	if a.Version != nil {
		fields = append(fields, jen.Id("IfVersion").Op(":").Add(version))
	}
	if len(a.Partitions()) > 0 {
		fields = append(fields, jen.Id("Elems").Op(":").Add(elems))
	}
	fields = append(fields, jen.Id("Apply").Op(":").Func().Params(jen.Id(g.v).Op("*").Id(a.Name)).Block(apply...))
	return []jen.Code{
		jen.If(cond).Block(
			jen.Comment("Lookup values change: keep the index tables right."),
			jen.Return(jen.Id("r").Dot("lookups").Dot("Change").Call(jen.Id("ctx"), jen.Lit("Update"), jen.Id("id"), g.change(fields...))),
		),
	}
}
