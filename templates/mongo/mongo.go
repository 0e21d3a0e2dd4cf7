// Package mongo shapes MongoDB repositories (go.mongodb.org/mongo-driver/v2):
// a constructor that opens the runtime/mongostore adapter with the
// aggregate's descriptor. Every semantic lives in the adapter.
//
// Mapping (NoAM Fig. 10): one collection per aggregate class, one document
// per block with the block key as _id and one top-level field per entry;
// partitioned fields are arrays written element by element, with their
// lengths in the hidden field _len. Lookups are native secondary indexes,
// or index tables where marked noam:"lookup,table" (see runtime/mongostore).
package mongo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
	t "github.com/noamgen/noamgen/templates"
)

const (
	mongoPkg = "go.mongodb.org/mongo-driver/v2/mongo"
	storePkg = "github.com/noamgen/noamgen/runtime/mongostore"
)

func init() {
	t.RegisterLayout(layout.Store)
	t.Register(t.Store{
		Name:     "mongo",
		Title:    "Mongo",
		Handle:   "*mongo.Database",
		Imports:  map[string]string{mongoPkg: "mongo", storePkg: "mongostore"},
		Generate: generate,
		Reserved: reserved,
		Collection: func(name string) string {
			if strings.ContainsAny(name, "$\x00") || strings.HasPrefix(name, "system.") {
				return "is not a valid MongoDB collection name (no $, no system. prefix)"
			}
			return ""
		},
		// Every lookup may be kept in a table (IndexTables at run time).
		Names: func(a *model.Aggregate) []t.Name {
			var out []t.Name
			for _, l := range a.Lookups {
				out = append(out, t.Name{Name: layout.TableName(a.Collection, l.Name), What: fmt.Sprintf("the MongoDB index collection of lookup %s of %s", l.Name, a.Name), Pos: l.Pos})
			}
			return out
		},
		Own: []t.Name{{Name: layout.Counters, What: "the MongoDB collection of enumerable-key counters"}},
		Conn: []t.Conn{
			{Name: "mongo", Env: "NOAM_MONGO_URI", Read: "MongoDB connection `URI` to sample", Write: "MongoDB connection `URI`"},
			{Name: "db", Env: "NOAM_MONGO_DB", Read: "MongoDB `database` to sample (with -mongo)", Write: "MongoDB `database` (with -mongo)"},
		},
		// The server is FerretDB, in-process in the integration module's
		// tests, or $NOAM_MONGO_URI: the integration module checks the
		// layout (conformance.TestGoldenLayoutMongo), giving the server in
		// $NOAM_LAYOUT_MONGO_URI; a fresh database per check. Unique
		// lookups in index tables: FerretDB v1 has no partial indexes (the
		// layout of the aggregate's document is the same on both
		// mappings).
		Test: &t.Test{
			Module:  "integration",
			Imports: []string{"context", "fmt", "os", "strings", "go.mongodb.org/mongo-driver/v2/mongo", "go.mongodb.org/mongo-driver/v2/mongo/options", "github.com/noamgen/noamgen/runtime/mongostore"},
			Setup: `uri := os.Getenv("NOAM_LAYOUT_MONGO_URI")
if uri == "" {
	t.Fatal("NOAM_LAYOUT_MONGO_URI is not set: layoutcheck.Run's caller sets it")
}
client, err := mongo.Connect(options.Client().ApplyURI(uri))
if err != nil {
	t.Fatal(err)
}
db := client.Database(fmt.Sprintf("layout_%d_%s", os.Getpid(), strings.NewReplacer("/", "_", ".", "_").Replace(t.Name())))
t.Cleanup(func() {
	_ = db.Drop(context.Background())
	_ = client.Disconnect(context.Background())
})`,
			Open: "mongostore.Open(db, %[1]s, mongostore.UniqueTables())",
		},
		Program: &t.Program{
			Imports: []string{"go.mongodb.org/mongo-driver/v2/mongo", "go.mongodb.org/mongo-driver/v2/mongo/options"},
			Open: `if conn["mongo"] == "" || conn["db"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store mongo needs -mongo URI and -db NAME")
		return 2
	}
	client, err := mongo.Connect(options.Client().ApplyURI(conn["mongo"]))
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: connecting to MongoDB: %v\n", err)
		return 1
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	db := client.Database(conn["db"])`,
			Args: "db",
		},
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
	var native, tables []string
	for _, l := range a.Lookups {
		if l.Table {
			tables = append(tables, fmt.Sprintf("%q", a.Collection+"__"+l.Name))
		} else {
			native = append(native, fmt.Sprintf("%s %s", l.Name, indexKeys(l)))
		}
	}
	if len(native) > 0 {
		more += fmt.Sprintf(" Lookups are native indexes of the collection, created by EnsureIndexes: %s.", strings.Join(native, ", "))
	}
	if len(tables) > 0 {
		more += fmt.Sprintf(" Lookups marked table are the index tables %s, kept right by the lookup protocol of runtime/mongostore (hidden fields _seq and _inc).", strings.Join(tables, ", "))
	}
	if len(a.Lookups) > 0 {
		more += " Options: mongostore.IndexTables() keeps every lookup in an index table, mongostore.UniqueTables() the unique ones."
	}
	if a.Counter {
		more += " Block keys are allocated from counters in the collection \"noam_counters\"."
	}
	doc := fmt.Sprintf("%s is %s on MongoDB. Each %s block is one document of collection %q with the block key as _id and one top-level field per entry (%s).%s",
		repo, t.Repo(a), a.Name, a.Collection, strings.Join(fields, ", "), more)
	t.StoreRepoDecl(f, a, "Mongo", doc, "db's collections", "mongostore.IndexTables, UniqueTables, NoPartialIndexes",
		"db", jen.Op("*").Qual(mongoPkg, "Database"),
		jen.Op("*").Qual(storePkg, "Store").Types(jen.Id(a.Name), t.IDType(a)),
		jen.Qual(storePkg, "Open"))
	f.Comment("Collection returns the underlying collection.")
	f.Func().Params(jen.Id("r").Op("*").Id(repo)).Id("Collection").Params().Op("*").Qual(mongoPkg, "Collection").Block(jen.Return(jen.Id("r").Dot("store").Dot("Collection").Call()))
}

// indexKeys renders the key pattern of a lookup's native index, e.g.
// "{city: 1, stars: 1, _id: 1}" or "{name: 1} unique".
func indexKeys(l *model.Lookup) string {
	var keys []string
	multi := false
	for _, p := range l.Parts {
		keys = append(keys, strings.ReplaceAll(p.Path, "[]", "")+": 1")
		multi = multi || p.Multi
	}
	if multi && len(l.Parts) > 1 {
		return "(an index table: a composite lookup through a slice)"
	}
	if !l.Unique {
		return "{" + strings.Join(append(keys, "_id: 1"), ", ") + "}"
	}
	if l.IndexZero {
		return "{" + strings.Join(keys, ", ") + "} unique"
	}
	return "{" + strings.Join(keys, ", ") + "} unique, zero values left out"
}
