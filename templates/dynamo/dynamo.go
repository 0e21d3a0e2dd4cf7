// Package dynamo shapes Amazon DynamoDB repositories
// (github.com/aws/aws-sdk-go-v2/service/dynamodb): a constructor that opens
// the runtime/dynamostore adapter with the aggregate's descriptor. Every
// semantic lives in the adapter.
//
// Mapping (NoAM Fig. 5, extensible record stores): one table per
// collection, one item per block with the block key as the partition key
// (_id) and one attribute per entry; partitioned fields are list
// attributes written element by element (SET f[i], past the end to
// append), their lengths in the map attribute _len; the EAO root entry is
// the attribute _root. Lookups are items of the index table "<collection>__index".
package dynamo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/dynamostore/layout"
	t "github.com/noamgen/noamgen/templates"
)

const (
	dynamoPkg = "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	storePkg  = "github.com/noamgen/noamgen/runtime/dynamostore"
)

func init() {
	t.RegisterLayout(layout.Store)
	t.Register(t.Store{
		Name:     "dynamo",
		Title:    "Dynamo",
		Handle:   "*dynamodb.Client",
		Imports:  map[string]string{dynamoPkg: "dynamodb", storePkg: "dynamostore"},
		Generate: generate,
		Reserved: reserved,
		// The index table's name is the longest (its "__index" suffix
		// also makes it long enough); a collection's own table name
		// under 3 characters is refused by EnsureIndexes, as a
		// table-name prefix (dynamostore.Options) may lengthen it.
		Collection: func(name string) string {
			if why := layout.CheckTableName(layout.IndexTable(name)); why != "" {
				return "is not a valid DynamoDB table name (" + why + ")"
			}
			return ""
		},
		Names: func(a *model.Aggregate) []t.Name {
			return []t.Name{{Name: layout.IndexTable(a.Collection), What: "the DynamoDB index table of aggregate " + a.Name, Pos: a.Pos}}
		},
		Own: []t.Name{{Name: layout.Counters, What: "the DynamoDB table of enumerable-key counters"}, {Name: layout.Schema, What: "the DynamoDB table of schema records"}},
		Conn: []t.Conn{
			{Name: "dynamo", Env: "NOAM_DYNAMO_ENDPOINT",
				Read:  "DynamoDB endpoint `URL` to sample (credentials and region from AWS_* variables; dummy ones for a local endpoint)",
				Write: "DynamoDB endpoint `URL` (credentials and region from AWS_* variables; dummy ones for a local endpoint)"},
			{Name: "dynamo-prefix", Env: "NOAM_DYNAMO_PREFIX",
				Read:  "table-name `prefix` of the DynamoDB tables to sample (dynamostore.Options.TablePrefix)",
				Write: "table-name `prefix` of the DynamoDB tables (dynamostore.Options.TablePrefix)"},
		},
		// dynalite started once for every package's check (or the
		// endpoint NOAM_DYNAMO_ENDPOINT names), each check's tables under
		// a fresh prefix.
		Test: &t.Test{
			Imports:  []string{"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest", "github.com/noamgen/noamgen/runtime/dynamostore"},
			Setup:    "srv := dynalitetest.Shared(t)\nclient, prefix := srv.Client(), srv.Prefix(t)",
			Open:     "dynamostore.Open(client, %[1]s, dynamostore.Options{TablePrefix: prefix})",
			Teardown: "dynalitetest.Stop()",
		},
		Program: &t.Program{
			Imports: []string{"github.com/aws/aws-sdk-go-v2/aws", "github.com/aws/aws-sdk-go-v2/credentials", "github.com/aws/aws-sdk-go-v2/service/dynamodb", storePkg},
			Open: `if conn["dynamo"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store dynamo needs -dynamo URL")
		return 2
	}
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(conn["dynamo"]),
		Credentials: credentials.NewStaticCredentialsProvider("noam", "noam", "")}
	if r := os.Getenv("AWS_REGION"); r != "" {
		cfg.Region = r
	}
	if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	}
	client := dynamodb.NewFromConfig(cfg)`,
			Args: `client, dynamostore.Options{TablePrefix: conn["dynamo-prefix"]}`,
		},
	})
}

// reserved says why a top-level entry key cannot be an attribute name.
func reserved(key string) string {
	switch key {
	case "_id", "_root", "_len", "_seq", "_inc", "_w", "_pk", "_sk", "_c":
		return "DynamoDB items of noamgen use the attribute " + key + " themselves"
	}
	return ""
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	repo := t.StoreRepo(a, "Dynamo")
	var attrs []string
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
			attrs = append(attrs, "_root (the root entry)")
		case e.Partition:
			attrs = append(attrs, e.FieldKey()+" (a list, its length in _len)")
		default:
			attrs = append(attrs, e.Key)
		}
	}
	more := ""
	if len(a.Partitions()) > 0 {
		more += " Partitioned fields are list attributes written element by element (SET of one index; an append is one request that sends only the new element)."
	}
	if len(a.Lookups) > 0 {
		var names []string
		for _, l := range a.Lookups {
			names = append(names, fmt.Sprintf("%q", l.Name))
		}
		more += fmt.Sprintf(" Its lookups (%s) are items of the index table %q (partition key p: the lookup's name, sort key k: the value), kept right by the lookup protocol of runtime/dynamostore (hidden attributes _seq and _inc).", strings.Join(names, ", "), a.Collection+"__index")
	}
	if a.Counter {
		more += " Block keys are allocated from counters in the table \"noam_counters\"."
		if len(a.IDParts) > 0 {
			more += fmt.Sprintf(" The blocks of one counter scope are listed through the items %q of %q.", "noam:scope", a.Collection+"__index")
		}
	}
	doc := fmt.Sprintf("%s is %s on Amazon DynamoDB. Each %s block is one item of table %q (after the table-name prefix of dynamostore.Options) with the block key as the partition key _id and one attribute per entry (%s), in native attribute values.%s",
		repo, t.Repo(a), a.Name, a.Collection, strings.Join(attrs, ", "), more)
	t.StoreRepoDecl(f, a, "Dynamo", doc, "client's tables (EnsureIndexes creates them)", "dynamostore.Options",
		"client", jen.Op("*").Qual(dynamoPkg, "Client"),
		jen.Op("*").Qual(storePkg, "Store").Types(jen.Id(a.Name), t.IDType(a)),
		jen.Qual(storePkg, "Open"))
	f.Comment("Client returns the DynamoDB client.")
	f.Func().Params(jen.Id("r").Op("*").Id(repo)).Id("Client").Params().Op("*").Qual(dynamoPkg, "Client").Block(jen.Return(jen.Id("r").Dot("store").Dot("Client").Call()))
}
