// Package mongo shapes MongoDB repositories (go.mongodb.org/mongo-driver/v2):
// a constructor that opens the runtime/mongostore adapter with the
// aggregate's descriptor. Every semantic lives in the adapter.
//
// Mapping (NoAM Fig. 10): one collection per aggregate class, one document
// per block with the block key as _id and one top-level field per entry;
// partitioned fields are arrays written element by element, with their
// lengths in the hidden field _len.
package mongo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	t "github.com/noamgen/noamgen/templates"
)

const (
	mongoPkg = "go.mongodb.org/mongo-driver/v2/mongo"
	storePkg = "github.com/noamgen/noamgen/runtime/mongostore"
)

func init() {
	t.Register(t.Store{
		Name:     "mongo",
		Title:    "Mongo",
		Imports:  map[string]string{mongoPkg: "mongo", storePkg: "mongostore"},
		Generate: generate,
		Reserved: reserved,
	})
}

// reserved says why a top-level entry key cannot be a document field name.
func reserved(key string) string {
	switch {
	case key == "_id" || key == "_len" || key == "_seq" || key == "_inc":
		return "MongoDB documents use " + key + " themselves"
	case strings.HasPrefix(key, "$"):
		return "MongoDB field names cannot start with $"
	case strings.Contains(key, "."):
		return "MongoDB field names cannot contain a dot"
	}
	return ""
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	repo := t.StoreRepo(a, "Mongo")
	var fields []string
	for _, fl := range a.Fields {
		switch {
		case fl.IsID:
		case fl.Partition:
			fields = append(fields, fl.Key+"[i]")
		default:
			fields = append(fields, fl.Key)
		}
	}
	more := ""
	if len(a.Partitions()) > 0 {
		more += " Partitioned fields are arrays written element by element ($push, $set of one index), their lengths kept in _len."
	}
	if len(a.Lookups) > 0 {
		var names []string
		for _, l := range a.Lookups {
			names = append(names, fmt.Sprintf("%q", a.Collection+"__"+l.Name))
		}
		more += fmt.Sprintf(" Its index tables are the collections %s, kept right by the lookup protocol of runtime/mongostore (hidden fields _seq and _inc).", strings.Join(names, ", "))
	}
	if a.Counter {
		more += " Block keys are allocated from counters in the collection \"noam_counters\"."
	}
	doc := fmt.Sprintf("%s is %s on MongoDB. Each %s block is one document of collection %q with the block key as _id and one top-level field per entry (%s).%s",
		repo, t.Repo(a), a.Name, a.Collection, strings.Join(fields, ", "), more)
	t.StoreRepoDecl(f, a, "Mongo", doc, "db's collections",
		jen.Id("db").Op("*").Qual(mongoPkg, "Database"),
		jen.Op("*").Qual(storePkg, "Store").Types(jen.Id(a.Name), t.IDType(a)),
		jen.Qual(storePkg, "Open").Call(jen.Id("db"), jen.Id(t.DescVar(a))))
	f.Comment("Collection returns the underlying collection.")
	f.Func().Params(jen.Id("r").Op("*").Id(repo)).Id("Collection").Params().Op("*").Qual(mongoPkg, "Collection").Block(jen.Return(jen.Id("r").Dot("store").Dot("Collection").Call()))
}
