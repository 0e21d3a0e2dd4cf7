// Package bolt shapes embedded repositories over bbolt (go.etcd.io/bbolt),
// for running without a database server: a constructor that opens the
// runtime/boltstore adapter with the aggregate's descriptor. Every
// semantic lives in the adapter.
//
// Mapping (NoAM section 7.1, Fig. 4 and 9, the key-value mapping): one
// bucket per collection and one key-value pair per entry. A key is the
// block key (major key) and the entry key (minor key) encoded with the
// runtime's order-preserving key codec, so that a block is one contiguous
// key range, starting with its marker: the root entry of an EAO block, an
// empty value for ETF. Lookups are index buckets ("Hotel.cityStars")
// written in the transaction of the block's write; counters live in the
// bucket noam.counters.
package bolt

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/boltstore/layout"
	t "github.com/noamgen/noamgen/templates"
)

const (
	bboltPkg = "go.etcd.io/bbolt"
	storePkg = "github.com/noamgen/noamgen/runtime/boltstore"
)

func init() {
	t.RegisterLayout(layout.Store)
	t.Register(t.Store{
		Name:     "bolt",
		Title:    "Bolt",
		Handle:   "*bbolt.DB",
		Imports:  map[string]string{bboltPkg: "bbolt", storePkg: "boltstore"},
		Generate: generate,
		// Entry keys are codec components: every key is allowed.
		Reserved: func(string) string { return "" },
		Names: func(a *model.Aggregate) []t.Name {
			var out []t.Name
			for _, l := range a.Lookups {
				out = append(out, t.Name{Name: t.LookupName(a, l), What: fmt.Sprintf("the bbolt index bucket of lookup %s of %s", l.Name, a.Name), Pos: l.Pos})
			}
			return out
		},
		Own: []t.Name{{Name: layout.CountersBucket, What: "the bbolt bucket of enumerable-key counters"}},
		Conn: []t.Conn{{Name: "bolt", Env: "NOAM_BOLT_FILE",
			Read:  "bbolt database `file` to sample (opened read-only)",
			Write: "bbolt database `file` to migrate (opened for writing: stop the application that holds it)"}},
		// A fresh database file per check.
		Test: &t.Test{
			Imports: []string{"path/filepath", "go.etcd.io/bbolt", "github.com/noamgen/noamgen/runtime/boltstore"},
			Setup: `db, err := bbolt.Open(filepath.Join(t.TempDir(), "layout.db"), 0o600, nil)
if err != nil {
	t.Fatal(err)
}
t.Cleanup(func() { db.Close() })`,
			Open: "boltstore.Open(db, %[1]s)",
		},
		Program: &t.Program{
			Imports: []string{"time", "go.etcd.io/bbolt"},
			Open: `if conn["bolt"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store bolt needs -bolt FILE")
		return 2
	}
	db, err := bbolt.Open(conn["bolt"], 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: opening %s: %v\n", conn["bolt"], err)
		return 1
	}
	defer db.Close()`,
			Args: "db",
		},
	})
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	repo := t.StoreRepo(a, "Bolt")
	layout := "its marker (the block prefix alone, with an empty value)"
	if a.Strategy == model.EAO {
		layout = "its marker, which holds the root entry"
	}
	var entries []string
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
		case e.Partition:
			entries = append(entries, e.FieldKey()+" (the element count)", e.ElemNotation())
		default:
			entries = append(entries, e.Key)
		}
	}
	if len(entries) > 0 {
		layout += ", then the entries " + strings.Join(entries, ", ")
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
		more += " Block keys are allocated from counters in the bucket \"noam.counters\"."
	}
	doc := fmt.Sprintf("%s is %s on bbolt, after the NoAM key-value mapping. Bucket %q holds one key-value pair per entry, keyed by the block key (the major key) and the entry key (the minor key), so that each %s block is one contiguous key range: %s. Every method is one bbolt transaction.%s",
		repo, t.Repo(a), a.Collection, a.Name, layout, more)
	t.StoreRepoDecl(f, a, "Bolt", doc, "db; the first write creates the buckets it uses (EnsureIndexes creates them up front)", "",
		"db", jen.Op("*").Qual(bboltPkg, "DB"),
		jen.Op("*").Qual(storePkg, "Store").Types(jen.Id(a.Name), t.IDType(a)),
		jen.Qual(storePkg, "Open"))
	f.Comment("DB returns the underlying database.")
	f.Func().Params(jen.Id("r").Op("*").Id(repo)).Id("DB").Params().Op("*").Qual(bboltPkg, "DB").Block(jen.Return(jen.Id("r").Dot("store").Dot("DB").Call()))
}
