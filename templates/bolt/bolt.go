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
//
// Lookups are index tables: one bucket per lookup, named after it
// ("Hotel.cityStars"), keyed by the encoded lookup value (and the block key,
// unless the lookup is unique, whose entries hold the block key as their
// value). Every write that can change a lookup's values reads the old
// values of the fields it indexes and moves the lookup's entries in the
// same transaction as the block's write, so that the index tables are never
// out of step with the blocks. Counters of enumerable keys live in the
// bucket noam.counters.
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
	more := ""
	if len(a.Lookups) > 0 {
		var names []string
		for _, l := range a.Lookups {
			names = append(names, fmt.Sprintf("%q", t.LookupName(a, l)))
		}
		more += fmt.Sprintf(" Its index tables are the buckets %s, written in the transaction of every write that changes their values.", strings.Join(names, ", "))
	}
	if a.Counter {
		more += fmt.Sprintf(" Block keys are allocated from counters in the bucket %q.", "noam.counters")
	}
	f.Add(t.Doc("%s is the bbolt implementation of %s, after the NoAM key-value mapping. Bucket %q holds one key-value pair per entry, keyed by the block key (the major key) and the entry key (the minor key), so that each %s block is one contiguous key range: %s.%s",
		g.repo, t.Repo(a), a.Collection, a.Name, layout, more)).Type().Id(g.repo).Struct(
		jen.Id("c").Qual(storePkg, "Collection").Types(t.IDType(a)),
	)
	f.Line()
	fields := []jen.Code{
		jen.Id("DB").Op(":").Id("db"),
		jen.Id("Name").Op(":").Lit(a.Collection),
		jen.Id("Aggregate").Op(":").Lit(a.Name),
		jen.Id("Keys").Op(":").Id(t.KeyCodecVar(a)),
	}
	if a.Counter {
		fields = append(fields, jen.Id("Counter").Op(":").Op("&").Add(g.counter()))
	}
	f.Add(t.Doc("New%s returns a repository over db's %q bucket, which the first write creates, like the other buckets it uses (EnsureIndexes creates them all up front).", g.repo, a.Collection)).
		Func().Id("New" + g.repo).Params(jen.Id("db").Op("*").Qual(bboltPkg, "DB")).Op("*").Id(g.repo).Block(
		jen.Return(jen.Op("&").Id(g.repo).Values(jen.Id("c").Op(":").Qual(storePkg, "Collection").Types(t.IDType(a)).Add(t.Multi(fields...)))),
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
	if len(a.Lookups) > 0 {
		f.Line()
		g.lookupFuncs(f)
	}
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

// readFunc declares the function that decodes one entry, and the one that
// decodes a block entry by entry.
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
	f.Add(t.Doc("%s decodes entry e of a %s block into %s.", g.decode(), a.Name, g.v)).
		Func().Id(g.decode()).Params(jen.Id(g.v).Op("*").Id(a.Name), jen.Id("e").Add(store("Entry"))).Error().Block(
		jen.Switch(jen.Id("e").Dot("Key")).Block(cases...),
		jen.Comment(skipped),
		jen.Return(jen.Nil()),
	)
	f.Line()
	f.Add(t.Doc("%s reads block blk, the %s with block key id, entry by entry in key order. It fails with runtime.ErrNotFound if the block does not exist.", g.read, a.Name)).
		Func().Id(g.read).Params(jen.Id("blk").Op("*").Add(store("Block")), jen.Id("id").Add(t.IDType(a))).Params(jen.Op("*").Id(a.Name), jen.Error()).Block(
		jen.Id(g.v).Op(":=").Op("&").Id(a.Name).Values(jen.Id(a.ID.GoName).Op(":").Id("id")),
		jen.If(jen.Err().Op(":=").Add(blk()).Dot("Scan").Call(g.decodeInto(jen.Id(g.v))), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Err()),
		),
		jen.Return(jen.Id(g.v), jen.Nil()),
	)
}

// decode names the function decoding one entry into an aggregate.
func (g *gen) decode() string { return "decode" + g.a.Name + "Bolt" }

// decodeInto renders a func(boltstore.Entry) error decoding into v.
func (g *gen) decodeInto(v jen.Code) jen.Code {
	return jen.Func().Params(jen.Id("e").Add(store("Entry"))).Error().Block(
		jen.Return(jen.Id(g.decode()).Call(v, jen.Id("e"))),
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
	indexed := len(a.Lookups) > 0
	switch m.Kind {
	case t.MGet:
		return []jen.Code{jen.Return(store("Get").Call(jen.Id("ctx"), jen.Id("r").Dot("c"), id, jen.Id(g.read)))}
	case t.MCreate:
		body := []jen.Code{jen.If(blk().Dot("Exists").Call()).Block(jen.Return(blk().Dot("Fail").Call(t.RT("ErrDuplicate"))))}
		if a.Version != nil {
			body = append(body, jen.Id(g.write).Call(blk(), jen.Id(g.v), jen.Lit(1)))
		} else {
			body = append(body, jen.Id(g.write).Call(blk(), jen.Id(g.v)))
		}
		if indexed {
			body = append(body, jen.Id(g.index()).Call(blk(), jen.Nil(), jen.Id(g.v)))
		}
		body = append(body, returnErr())
		var after []jen.Code
		if a.Version != nil {
			after = append(after, jen.Id(g.v).Dot(a.Version.GoName).Op("=").Lit(1))
		}
		return g.write1("Create", body, after)
	case t.MPut:
		var body []jen.Code
		var after []jen.Code
		if a.Version != nil {
			ver := jen.Id(g.v).Dot(a.Version.GoName)
			body = append(body,
				jen.Comment("Version 0 stands for a block that does not exist yet."),
				jen.If(jen.Err().Op(":=").Add(blk()).Dot("CheckVersion").Call(jen.Lit(a.Version.Key), ver), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			)
			after = append(after, ver.Clone().Op("++"))
		}
		if indexed {
			body = append(body,
				jen.Comment("The old values of the indexed fields, to move the lookup entries."),
				jen.List(jen.Id("old"), jen.Err()).Op(":=").Id(g.readIndexed()).Call(blk()),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			)
		}
		if len(a.Partitions()) > 0 {
			body = append(body,
				jen.Comment("Replace the block whole: no entry of the old value survives, so that"),
				jen.Comment("elements past the new length are gone."),
			)
		} else {
			body = append(body, jen.Comment("Replace the block whole: no entry of the old value survives."))
		}
		body = append(body, blk().Dot("Clear").Call())
		if a.Version != nil {
			body = append(body, jen.Id(g.write).Call(blk(), jen.Id(g.v), jen.Id(g.v).Dot(a.Version.GoName).Op("+").Lit(1)))
		} else {
			body = append(body, jen.Id(g.write).Call(blk(), jen.Id(g.v)))
		}
		if indexed {
			body = append(body, jen.Id(g.index()).Call(blk(), jen.Id("old"), jen.Id(g.v)))
		}
		body = append(body, returnErr())
		return g.write1("Put", body, after)
	case t.MDelete:
		body := []jen.Code{mustExist()}
		if indexed {
			body = append(body,
				jen.List(jen.Id("old"), jen.Err()).Op(":=").Id(g.readIndexed()).Call(blk()),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Id(g.index()).Call(blk(), jen.Id("old"), jen.Nil()),
			)
		}
		body = append(body, blk().Dot("Clear").Call(), returnErr())
		return []jen.Code{jen.Return(update("Delete", id, body...))}
	case t.MSet:
		body := []jen.Code{mustExist()}
		if ls := a.LookupsOf(m.Field); len(ls) > 0 {
			body = append(body, g.reindex(m.Field.Key, ls, jen.Id(g.v).Dot(m.Field.GoName).Op("=").Id("v"))...)
		}
		body = append(body, blk().Dot("Put").Call(jen.Lit(m.Field.Key), jen.Id("v")))
		body = append(body, g.bumpVersion()...)
		return []jen.Code{jen.Return(update(m.Name, id, append(body, returnErr())...))}
	case t.MAppend:
		body := []jen.Code{mustExist(), jen.Id("i").Op("=").Add(blk()).Dot("Append").Call(jen.Lit(m.Field.Key), jen.Id("e"))}
		if ls := a.LookupsOf(m.Field); len(ls) > 0 {
			body = append(body, jen.Comment(fmt.Sprintf("Lookup %s gains the values of e: the other elements keep theirs.", lookupNames(ls))))
			for _, l := range ls {
				elem := jen.Op("&").Id(a.Name).Values(jen.Id(m.Field.GoName).Op(":").Add(t.Type(m.Field.Type)).Values(jen.Id("e")))
				body = append(body, store("Reindex").Call(blk(), jen.Id(g.lookupVar(l)), jen.Nil(), elem))
			}
		}
		body = append(body, g.bumpVersion()...)
		return []jen.Code{
			jen.Var().Id("i").Int(),
			jen.Err().Op(":=").Add(update(m.Name, id, append(body, returnErr())...)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(0), jen.Err())),
			jen.Return(jen.Id("i"), jen.Nil()),
		}
	case t.MSetAt:
		body := []jen.Code{mustExist()}
		if ls := a.LookupsOf(m.Field); len(ls) > 0 {
			fv := jen.Id(g.v).Dot(m.Field.GoName)
			body = append(body, g.reindex(m.Field.Key+"[i]", ls,
				fv.Clone().Op("=").Qual("slices", "Clone").Call(jen.Id("old").Dot(m.Field.GoName)),
				jen.If(jen.Id("i").Op(">=").Lit(0).Op("&&").Id("i").Op("<").Len(fv.Clone())).Block(
					fv.Clone().Index(jen.Id("i")).Op("=").Id("e"),
				),
			)...)
		}
		body = append(body, blk().Dot("SetAt").Call(jen.Lit(m.Field.Key), jen.Id("i"), jen.Id("e")))
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
	return g.lookupBody(m)
}

// write1 renders the body of Create or Put: one write transaction running
// body on the aggregate's block, then the statements after, which update
// the caller's aggregate once the write succeeded. A counter-keyed
// aggregate with a zero id gets the id allocated in the transaction.
func (g *gen) write1(op string, body, after []jen.Code) []jen.Code {
	a := g.a
	vid := jen.Id(g.v).Dot(a.ID.GoName)
	if a.Counter {
		after = append([]jen.Code{vid.Clone().Op("=").Id("id")}, after...)
		return append([]jen.Code{
			jen.List(jen.Id("id"), jen.Err()).Op(":=").Id("r").Dot("c").Dot("UpdateAlloc").Call(jen.Id("ctx"), jen.Lit(op), vid, txFunc(body...)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		}, append(after, jen.Return(jen.Nil()))...)
	}
	tx := update(op, vid, body...)
	if len(after) == 0 {
		return []jen.Code{jen.Return(tx)}
	}
	return append([]jen.Code{
		jen.Err().Op(":=").Add(tx),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}, append(after, jen.Return(jen.Nil()))...)
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
	out = append(out, g.updateLookups()...)
	out = append(out, jen.Comment("A failed write (such as a missing element, or a unique value held by"),
		jen.Comment("another block) rolls the whole transaction back: nothing of u is"),
		jen.Comment("written then."))
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
