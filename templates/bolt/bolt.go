// Package bolt shapes embedded repositories over bbolt (go.etcd.io/bbolt),
// for running without a database server.
//
// Mapping (NoAM section 7.1, Fig. 4 and 9, the key-value mapping): one
// bucket per collection and one key-value pair per entry. A key is the
// block key (major key) and the entry key (minor key) encoded with the
// runtime's order-preserving key codec, so that a block is one contiguous
// key range, starting with its marker: the root entry of an EAO block, an
// empty value for ETF. Partitioned fields have one pair per element plus
// the element count, and the version entry is checked and bumped in the
// transaction of every write. runtime/boltstore holds the helpers.
package bolt

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	t "github.com/noamgen/noamgen/templates"
)

const (
	bboltPkg = "go.etcd.io/bbolt"
	storePkg = "github.com/noamgen/noamgen/runtime/boltstore"
)

func init() {
	t.Register(t.Store{
		Name:     "bolt",
		Title:    "Bolt",
		Imports:  map[string]string{bboltPkg: "bbolt", storePkg: "boltstore"},
		Generate: generate,
	})
}

// gen holds the names used while generating one aggregate's repository.
type gen struct {
	a     *model.Aggregate
	repo  string // GameBoltRepository
	root  string // gameBoltRoot, the EAO root entry's type
	read  string // readGameBolt
	write string // writeGameBolt
	v     string // aggregate parameter name
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	g := &gen{
		a:     a,
		repo:  t.StoreRepo(a, "Bolt"),
		root:  t.Unexported(a, "BoltRoot"),
		read:  "read" + a.Name + "Bolt",
		write: "write" + a.Name + "Bolt",
		v:     t.Var(a),
	}
	g.types(f)
	for _, m := range t.Methods(a) {
		f.Line()
		f.Add(t.Doc("%s", m.Doc)).Func().Params(jen.Id("r").Op("*").Id(g.repo)).Add(m.Signature()).Block(g.body(m)...)
	}
}

// store is a qualified name from the boltstore adapter.
func store(name string) *jen.Statement { return jen.Qual(storePkg, name) }

// blk is the *boltstore.Block parameter of transaction functions.
func blk() *jen.Statement { return jen.Id("blk") }

// txFunc is a transaction function over block blk.
func txFunc(body ...jen.Code) *jen.Statement {
	return jen.Func().Params(jen.Id("blk").Op("*").Add(store("Block"))).Error().Block(body...)
}

// update runs body in a write transaction of operation op on block id.
func update(op string, id jen.Code, body ...jen.Code) *jen.Statement {
	return jen.Id("r").Dot("c").Dot("Update").Call(jen.Id("ctx"), jen.Lit(op), id, txFunc(body...))
}

// mustExist fails with runtime.ErrNotFound when the block has no marker.
func mustExist() jen.Code {
	return jen.If(jen.Op("!").Add(blk()).Dot("Exists").Call()).Block(
		jen.Return(blk().Dot("Fail").Call(t.RT("ErrNotFound"))),
	)
}

// returnErr ends a transaction function with the block's first write error.
func returnErr() jen.Code { return jen.Return(blk().Dot("Err").Call()) }

func (g *gen) types(f *jen.File) {
	a := g.a
	layout := "its marker (the block prefix alone, with an empty value)"
	if a.Strategy == model.EAO {
		layout = "its marker, which holds the root entry"
	}
	if entries := g.entryKeys(); entries != "" {
		layout += ", then the entries " + entries
	}
	f.Add(t.Doc("%s is the bbolt implementation of %s, after the NoAM key-value mapping. Bucket %q holds one key-value pair per entry, keyed by the block key (the major key) and the entry key (the minor key), so that each %s block is one contiguous key range: %s.",
		g.repo, t.Repo(a), a.Collection, a.Name, layout)).Type().Id(g.repo).Struct(
		jen.Id("c").Qual(storePkg, "Collection").Types(t.IDType(a)),
	)
	f.Line()
	f.Add(t.Doc("New%s returns a repository over db's %q bucket, which the first write creates.", g.repo, a.Collection)).
		Func().Id("New" + g.repo).Params(jen.Id("db").Op("*").Qual(bboltPkg, "DB")).Op("*").Id(g.repo).Block(
		jen.Return(jen.Op("&").Id(g.repo).Values(jen.Id("c").Op(":").Qual(storePkg, "Collection").Types(t.IDType(a)).Add(t.Multi(
			jen.Id("DB").Op(":").Id("db"),
			jen.Id("Name").Op(":").Lit(a.Collection),
			jen.Id("Aggregate").Op(":").Lit(a.Name),
			jen.Id("Keys").Op(":").Id(t.KeyCodecVar(a)),
		)))),
	)
	f.Line()
	f.Comment("DB returns the underlying database.")
	f.Func().Params(jen.Id("r").Op("*").Id(g.repo)).Id("DB").Params().Op("*").Qual(bboltPkg, "DB").Block(jen.Return(jen.Id("r").Dot("c").Dot("DB")))
	f.Line()
	f.Var().Id("_").Id(t.Repo(a)).Op("=").Parens(jen.Op("*").Id(g.repo)).Parens(jen.Nil())
	f.Line()

	if a.Strategy == model.EAO {
		g.rootType(f)
	}
	g.readFunc(f)
	f.Line()
	g.writeFunc(f)
}

// entryKeys lists the entries of a block but the marker, in key order.
func (g *gen) entryKeys() string {
	type entry struct{ key, text string }
	var entries []entry
	for _, fl := range g.a.Fields {
		switch {
		case fl.IsID:
		case fl.Partition:
			entries = append(entries, entry{fl.Key, fmt.Sprintf("%s (the element count), %s[i]", fl.Key, fl.Key)})
		case fl.IsVersion || g.a.Strategy == model.ETF:
			entries = append(entries, entry{fl.Key, fl.Key})
		}
	}
	// Entry keys are encoded strings, which sort like the strings.
	sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	var texts []string
	for _, e := range entries {
		texts = append(texts, e.text)
	}
	return strings.Join(texts, ", ")
}

// rootType declares the EAO root entry's type and its conversions.
func (g *gen) rootType(f *jen.File) {
	a := g.a
	var fields, to, from []jen.Code
	for _, fl := range a.Root() {
		fields = append(fields, jen.Id(fl.GoName).Add(t.Type(fl.Type)).Tag(map[string]string{"bson": fl.Key}))
		to = append(to, jen.Id(fl.GoName).Op(":").Id(g.v).Dot(fl.GoName))
		from = append(from, jen.Id(g.v).Dot(fl.GoName).Op("=").Id("d").Dot(fl.GoName))
	}
	f.Add(t.Doc("%s is the value of a %s block's root entry: every field but the block key, the version and the partitioned fields, which have entries of their own.", g.root, a.Name)).
		Type().Id(g.root).Struct(fields...)
	f.Line()
	f.Add(t.Doc("new%s takes the root entry of %s.", title(g.root), g.v)).
		Func().Id("new" + title(g.root)).Params(jen.Id(g.v).Op("*").Id(a.Name)).Op("*").Id(g.root).Block(
		jen.Return(jen.Op("&").Id(g.root).Add(t.Multi(to...))),
	)
	f.Line()
	f.Add(t.Doc("copyTo sets the fields of %s that the root entry holds.", g.v)).
		Func().Params(jen.Id("d").Op("*").Id(g.root)).Id("copyTo").Params(jen.Id(g.v).Op("*").Id(a.Name)).Block(from...)
	f.Line()
}

func title(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// readFunc declares the function that decodes one block, entry by entry.
func (g *gen) readFunc(f *jen.File) {
	a := g.a
	e := jen.Id("e")
	var cases []jen.Code
	if a.Strategy == model.EAO {
		cases = append(cases, jen.Case(jen.Lit("")).Block(
			jen.Var().Id("d").Id(g.root),
			jen.If(jen.Err().Op(":=").Add(e).Dot("Decode").Call(jen.Op("&").Id("d")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id("d").Dot("copyTo").Call(jen.Id(g.v)),
		))
	}
	for _, fl := range a.Fields {
		switch {
		case fl.IsID:
		case fl.Partition:
			cases = append(cases, jen.Case(jen.Lit(fl.Key)).Block(
				jen.Return(store("DecodeElems").Call(e, jen.Op("&").Id(g.v).Dot(fl.GoName))),
			))
		case fl.IsVersion || a.Strategy == model.ETF:
			cases = append(cases, jen.Case(jen.Lit(fl.Key)).Block(
				jen.Return(e.Clone().Dot("Decode").Call(jen.Op("&").Id(g.v).Dot(fl.GoName))),
			))
		}
	}
	skipped := "Entries of removed fields are skipped."
	if a.Strategy == model.ETF {
		skipped = "The marker (key \"\") and entries of removed fields are skipped."
	}
	scan := jen.Func().Params(jen.Id("e").Add(store("Entry"))).Error().Block(
		jen.Switch(jen.Id("e").Dot("Key")).Block(cases...),
		jen.Comment(skipped),
		jen.Return(jen.Nil()),
	)
	f.Add(t.Doc("%s reads block blk, the %s with block key id, entry by entry in key order. It fails with runtime.ErrNotFound if the block does not exist.", g.read, a.Name)).
		Func().Id(g.read).Params(jen.Id("blk").Op("*").Add(store("Block")), jen.Id("id").Add(t.IDType(a))).Params(jen.Op("*").Id(a.Name), jen.Error()).Block(
		jen.Id(g.v).Op(":=").Op("&").Id(a.Name).Values(jen.Id(a.ID.GoName).Op(":").Id("id")),
		jen.If(jen.Err().Op(":=").Add(blk()).Dot("Scan").Call(scan), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Err()),
		),
		jen.Return(jen.Id(g.v), jen.Nil()),
	)
}

// writeFunc declares the function that writes every entry of an aggregate
// into an empty block.
func (g *gen) writeFunc(f *jen.File) {
	a := g.a
	params := []jen.Code{jen.Id("blk").Op("*").Add(store("Block")), jen.Id(g.v).Op("*").Id(a.Name)}
	doc := fmt.Sprintf("%s writes every entry of %s into blk, an empty block.", g.write, g.v)
	if a.Version != nil {
		params = append(params, jen.Id("version").Int64())
		doc = fmt.Sprintf("%s writes every entry of %s into blk, an empty block, with the %s entry set to version.", g.write, g.v, a.Version.Key)
	}
	var body []jen.Code
	if a.Strategy == model.EAO {
		body = append(body, blk().Dot("PutRoot").Call(jen.Id("new"+title(g.root)).Call(jen.Id(g.v))))
	} else {
		body = append(body, blk().Dot("PutMarker").Call())
	}
	for _, fl := range a.Fields {
		switch {
		case fl.IsID:
		case fl.IsVersion:
			body = append(body, blk().Dot("Put").Call(jen.Lit(fl.Key), jen.Id("version")))
		case fl.Partition:
			body = append(body, store("PutElems").Call(blk(), jen.Lit(fl.Key), jen.Id(g.v).Dot(fl.GoName)))
		case a.Strategy == model.ETF:
			body = append(body, blk().Dot("Put").Call(jen.Lit(fl.Key), jen.Id(g.v).Dot(fl.GoName)))
		}
	}
	f.Add(t.Doc("%s", doc)).Func().Id(g.write).Params(params...).Block(body...)
}

// bumpVersion bumps the version entry, if the aggregate has one.
func (g *gen) bumpVersion() []jen.Code {
	if g.a.Version == nil {
		return nil
	}
	return []jen.Code{blk().Dot("BumpVersion").Call(jen.Lit(g.a.Version.Key))}
}

func (g *gen) body(m t.Method) []jen.Code {
	a := g.a
	id := jen.Id("id")
	switch m.Kind {
	case t.MGet:
		return []jen.Code{jen.Return(store("Get").Call(jen.Id("ctx"), jen.Id("r").Dot("c"), id, jen.Id(g.read)))}
	case t.MCreate:
		vid := jen.Id(g.v).Dot(a.ID.GoName)
		var write []jen.Code
		if a.Version != nil {
			write = append(write, jen.Id(g.write).Call(blk(), jen.Id(g.v), jen.Lit(1)))
		} else {
			write = append(write, jen.Id(g.write).Call(blk(), jen.Id(g.v)))
		}
		tx := update("Create", vid, append([]jen.Code{
			jen.If(blk().Dot("Exists").Call()).Block(jen.Return(blk().Dot("Fail").Call(t.RT("ErrDuplicate")))),
		}, append(write, returnErr())...)...)
		if a.Version == nil {
			return []jen.Code{jen.Return(tx)}
		}
		return []jen.Code{
			jen.Err().Op(":=").Add(tx),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id(g.v).Dot(a.Version.GoName).Op("=").Lit(1),
			jen.Return(jen.Nil()),
		}
	case t.MPut:
		vid := jen.Id(g.v).Dot(a.ID.GoName)
		clear := []jen.Code{jen.Comment("Replace the block whole: no entry of the old value survives."), blk().Dot("Clear").Call()}
		if len(a.Partitions()) > 0 {
			clear = []jen.Code{
				jen.Comment("Replace the block whole: no entry of the old value survives, so that"),
				jen.Comment("elements past the new length are gone."),
				blk().Dot("Clear").Call(),
			}
		}
		if a.Version == nil {
			body := append(clear, jen.Id(g.write).Call(blk(), jen.Id(g.v)), returnErr())
			return []jen.Code{jen.Return(update("Put", vid, body...))}
		}
		ver := jen.Id(g.v).Dot(a.Version.GoName)
		body := []jen.Code{
			jen.Comment("Version 0 stands for a block that does not exist yet."),
			jen.If(jen.Err().Op(":=").Add(blk()).Dot("CheckVersion").Call(jen.Lit(a.Version.Key), ver), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		}
		body = append(body, clear...)
		body = append(body, jen.Id(g.write).Call(blk(), jen.Id(g.v), ver.Clone().Op("+").Lit(1)), returnErr())
		return []jen.Code{
			jen.Err().Op(":=").Add(update("Put", vid, body...)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			ver.Clone().Op("++"),
			jen.Return(jen.Nil()),
		}
	case t.MDelete:
		return []jen.Code{jen.Return(update("Delete", id, mustExist(), blk().Dot("Clear").Call(), returnErr()))}
	case t.MSet:
		body := []jen.Code{mustExist(), blk().Dot("Put").Call(jen.Lit(m.Field.Key), jen.Id("v"))}
		body = append(body, g.bumpVersion()...)
		return []jen.Code{jen.Return(update(m.Name, id, append(body, returnErr())...))}
	case t.MAppend:
		body := []jen.Code{mustExist(), jen.Id("i").Op("=").Add(blk()).Dot("Append").Call(jen.Lit(m.Field.Key), jen.Id("e"))}
		body = append(body, g.bumpVersion()...)
		return []jen.Code{
			jen.Var().Id("i").Int(),
			jen.Err().Op(":=").Add(update(m.Name, id, append(body, returnErr())...)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(0), jen.Err())),
			jen.Return(jen.Id("i"), jen.Nil()),
		}
	case t.MSetAt:
		body := []jen.Code{mustExist(), blk().Dot("SetAt").Call(jen.Lit(m.Field.Key), jen.Id("i"), jen.Id("e"))}
		body = append(body, g.bumpVersion()...)
		return []jen.Code{jen.Return(update(m.Name, id, append(body, returnErr())...))}
	case t.MListElems:
		return []jen.Code{jen.Return(store("Elements").Types(t.Type(m.Field.Elem)).Call(
			jen.Id("ctx"), jen.Id("r").Dot("c"), jen.Lit(m.Name), id, jen.Lit(m.Field.Key), jen.Id("req")))}
	case t.MUpdate:
		return []jen.Code{jen.Return(update("Update", id, g.updateBody()...))}
	case t.MList:
		return []jen.Code{jen.Return(store("List").Call(jen.Id("ctx"), jen.Id("r").Dot("c"), jen.Id(t.ListQuery(a)), jen.Id("req"), jen.Id(g.read)))}
	case t.MAll:
		return []jen.Code{jen.Return(store("All").Call(jen.Id("ctx"), jen.Id("r").Dot("c"), jen.Id(g.read)))}
	}
	return t.Unimplemented(m) // TODO(issue 4): remove once every kind is implemented
}

// updateBody is the body of the Update method's transaction function.
func (g *gen) updateBody() []jen.Code {
	a := g.a
	out := []jen.Code{mustExist()}
	if a.Version != nil {
		out = append(out, jen.If(jen.Id("u").Dot("IfVersion").Op("!=").Lit(0)).Block(
			jen.If(jen.Err().Op(":=").Add(blk()).Dot("CheckVersion").Call(jen.Lit(a.Version.Key), jen.Id("u").Dot("IfVersion")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Err()),
			),
		))
	}
	out = append(out, jen.Comment("A failed write (such as a missing element) rolls the whole transaction"),
		jen.Comment("back: nothing of u is written then."))
	if a.Strategy == model.EAO {
		out = append(out, jen.If(jen.Id("u").Dot("Root").Op("!=").Nil()).Block(
			blk().Dot("PutRoot").Call(jen.Id("new"+title(g.root)).Call(jen.Id("u").Dot("Root"))),
		))
	}
	for _, fl := range a.Settable() {
		out = append(out, jen.If(jen.Id("u").Dot(fl.GoName).Op("!=").Nil()).Block(
			blk().Dot("Put").Call(jen.Lit(fl.Key), jen.Op("*").Id("u").Dot(fl.GoName)),
		))
	}
	for _, fl := range a.Partitions() {
		at := jen.Id("u").Dot(t.AtField(fl))
		out = append(out, jen.For(jen.List(jen.Id("_"), jen.Id("i")).Op(":=").Range().Qual("slices", "Sorted").Call(jen.Qual("maps", "Keys").Call(at))).Block(
			blk().Dot("SetAt").Call(jen.Lit(fl.Key), jen.Id("i"), at.Clone().Index(jen.Id("i"))),
		))
	}
	if a.Version != nil {
		out = append(out,
			jen.Comment("An update that writes nothing only checks: the version stays."),
			jen.If(blk().Dot("Changed").Call()).Block(blk().Dot("BumpVersion").Call(jen.Lit(a.Version.Key))),
		)
	}
	return append(out, returnErr())
}
