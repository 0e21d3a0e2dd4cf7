// Package mongo shapes MongoDB repositories (go.mongodb.org/mongo-driver/v2).
//
// Mapping (NoAM section 7.3, Fig. 10): one collection per aggregate class,
// one document per block with the block key as _id, one top-level field per
// entry. Partitioned fields are arrays written element by element; their
// lengths live under _len so that an append learns its index atomically.
package mongo

import (

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
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	g := &gen{
		a:    a,
		repo: t.StoreRepo(a, "Mongo"),
		doc:  t.Unexported(a, "MongoDoc"),
		lens: t.Unexported(a, "MongoLens"),
		conv: "aggregate",
		v:    t.Var(a),
	}
	g.types(f)
	for _, m := range t.Methods(a) {
		f.Line()
		f.Add(t.Doc("%s", m.Doc)).Func().Params(jen.Id("r").Op("*").Id(g.repo)).Add(m.Signature()).Block(g.body(m)...)
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
	f.Add(t.Doc("%s is the MongoDB implementation of %s. Each %s block is one document of collection %q with the block key as _id and one top-level field per entry (%s).",
		g.repo, t.Repo(a), a.Name, a.Collection, t.EntryList(a))).Type().Id(g.repo).Struct(jen.Id("coll").Op("*").Qual(mongoPkg, "Collection"))
	f.Line()
	f.Add(t.Doc("New%s returns a repository over db's %q collection.", g.repo, a.Collection)).Func().Id("New" + g.repo).Params(jen.Id("db").Op("*").Qual(mongoPkg, "Database")).Op("*").Id(g.repo).Block(
		jen.Return(jen.Op("&").Id(g.repo).Values(jen.Id("coll").Op(":").Qual(storePkg, "Collection").Call(jen.Id("db"), jen.Lit(a.Collection)))),
	)
	f.Line()
	f.Comment("Collection returns the underlying collection.")
	f.Func().Params(jen.Id("r").Op("*").Id(g.repo)).Id("Collection").Params().Op("*").Qual(mongoPkg, "Collection").Block(jen.Return(jen.Id("r").Dot("coll")))
	f.Line()
	f.Var().Id("_").Id(t.Repo(a)).Op("=").Parens(jen.Op("*").Id(g.repo)).Parens(jen.Nil())
	f.Line()

	// Document type.
	doc := t.Doc("%s is the stored form of a %s block.", g.doc, a.Name)
	var fields []jen.Code
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
	f.Add(doc).Type().Id(g.doc).Struct(fields...)
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
	doc = t.Doc("new%s converts %s to its document.", title(g.doc), g.v)
	var vals []jen.Code
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
	f.Add(doc).Func().Id("new" + title(g.doc)).Params(jen.Id(g.v).Op("*").Id(a.Name)).Op("*").Id(g.doc).Block(
		jen.Return(jen.Op("&").Id(g.doc).Add(t.Multi(vals...))),
	)
	f.Line()
	doc = t.Doc("%s converts the document back to a %s.", g.conv, a.Name)
	var back []jen.Code
	for _, fl := range a.Fields {
		back = append(back, jen.Id(fl.GoName).Op(":").Id("d").Dot(fl.GoName))
	}
	f.Add(doc).Func().Params(jen.Id("d").Op("*").Id(g.doc)).Id(g.conv).Params().Op("*").Id(a.Name).Block(
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
		vid := jen.Id(g.v).Dot(a.ID.GoName)
		out := []jen.Code{jen.Id("d").Op(":=").Id("new" + title(g.doc)).Call(jen.Id(g.v))}
		if a.Version != nil {
			out = append(out, jen.Id("d").Dot(a.Version.GoName).Op("=").Lit(1))
		}
		out = append(out,
			jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("InsertOne").Call(jen.Id("ctx"), jen.Id("d")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(storeErr("Create", a, vid)),
			))
		if a.Version != nil {
			out = append(out, jen.Id(g.v).Dot(a.Version.GoName).Op("=").Lit(1))
		}
		return append(out, jen.Return(jen.Nil()))
	case t.MPut:
		vid := jen.Id(g.v).Dot(a.ID.GoName)
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
	case t.MDelete:
		return []jen.Code{
			jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("r").Dot("coll").Dot("DeleteOne").Call(jen.Id("ctx"), byID(id)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(storeErr("Delete", a, id))),
			jen.If(jen.Id("res").Dot("DeletedCount").Op("==").Lit(0)).Block(jen.Return(rtFail("Delete", a, id, "ErrNotFound"))),
			jen.Return(jen.Nil()),
		}
	case t.MSet:
		update := []jen.Code{bsonE(jen.Lit("$set"), bsonD(bsonE(jen.Lit(m.Field.Key), jen.Id("v"))))}
		if inc := g.versionInc(); inc != nil {
			update = append(update, bsonE(jen.Lit("$inc"), bsonD(inc...)))
		}
		return g.updateOne(m.Name, byID(id), bsonD(update...))
	case t.MAppend:
		return []jen.Code{
			jen.Return(jen.Qual(storePkg, "Append").Call(jen.Id("ctx"), jen.Id("r").Dot("coll"), jen.Lit(m.Name), jen.Lit(a.Name), id, jen.Lit(m.Field.Key), jen.Id("e"), g.versionKey())),
		}
	case t.MSetAt:
		fl := m.Field
		update := []jen.Code{bsonE(jen.Lit("$set"), bsonD(bsonE(jen.Id("elem").Dot("Path").Call(), jen.Id("e"))))}
		if inc := g.versionInc(); inc != nil {
			update = append(update, bsonE(jen.Lit("$inc"), bsonD(inc...)))
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
	}
	return t.Unimplemented(m) // TODO(issue 4): remove once every kind is implemented
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
