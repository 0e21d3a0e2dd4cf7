// Package redis shapes Redis repositories (github.com/redis/go-redis/v9):
// a constructor over a redis.UniversalClient, so that the same generated
// code runs on a single node and on a Redis Cluster, which opens the
// runtime/redisstore adapter with the aggregate's descriptor. Every
// semantic lives in the adapter.
//
// Mapping (NoAM section 7.1, Fig. 4 and 9, the key-value mapping): the
// major key is the collection and the block key, the minor key the entry
// key. One Redis hash per block, named with the block key in a hash tag
// ("Game:{2345}") so that a block is one key on one hash slot, and one hash
// field per entry ("firstPlayer", "rounds[3]", the element count "rounds",
// the version). Lookups are sorted sets with lexicographic members ("{Game.name}").
package redis

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/redisstore/layout"
	t "github.com/noamgen/noamgen/templates"
)

const (
	redisPkg = "github.com/redis/go-redis/v9"
	storePkg = "github.com/noamgen/noamgen/runtime/redisstore"
)

func init() {
	t.RegisterLayout(layout.Store)
	t.Register(t.Store{
		Name:     "redis",
		Title:    "Redis",
		Handle:   "redis.UniversalClient",
		Imports:  map[string]string{redisPkg: "redis", storePkg: "redisstore"},
		Generate: generate,
		Reserved: reserved,
		// Block keys are collection:{key}, the listing collection:blocks,
		// counters collection:counter[:{scope}], lookups {collection.name}:
		// a collection name with ':', '{' or '}' could name another's keys.
		Collection: func(name string) string {
			if strings.ContainsAny(name, ":{}") {
				return "cannot name Redis keys: it contains ':', '{' or '}', which noamgen's keys use as separators and hash tags"
			}
			return ""
		},
		Names: func(a *model.Aggregate) []t.Name {
			var out []t.Name
			for _, l := range a.Lookups {
				out = append(out, t.Name{Name: "{" + a.Collection + "." + l.Name + "}", What: fmt.Sprintf("the Redis index key of lookup %s of %s", l.Name, a.Name), Pos: l.Pos})
			}
			return out
		},
		Conn: []t.Conn{{Name: "redis", Env: "NOAM_REDIS_URL",
			Read:  "Redis `URL` to sample (redis://host:port/db; a cluster node's URL samples the cluster; read-only commands)",
			Write: "Redis `URL` (redis://host:port/db; a cluster node's URL migrates the cluster)"}},
		// A single node (a local redis-server; the check skips without
		// one), started once for every package's check and flushed
		// before each. A cluster holds the same keys per block, so the
		// layout is checked on a node.
		Test: &t.Test{
			Imports:  []string{"github.com/noamgen/noamgen/runtime/redisstore/redistest", "github.com/noamgen/noamgen/runtime/redisstore"},
			Setup:    "rdb := redistest.Server(t)",
			Open:     "redisstore.Open(rdb, %[1]s)",
			Teardown: "redistest.Stop()",
		},
		Program: &t.Program{
			Imports: []string{"strings", redisPkg},
			Open: `if conn["redis"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store redis needs -redis URL")
		return 2
	}
	opt, err := redis.ParseURL(conn["redis"])
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: -redis: %v\n", err)
		return 2
	}
	var rdb redis.UniversalClient = redis.NewClient(opt)
	info, err := rdb.Info(ctx, "cluster").Result()
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: connecting to Redis at %s: %v\n", opt.Addr, err)
		return 1
	}
	if strings.Contains(info, "cluster_enabled:1") {
		rdb.Close()
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig})
	}
	defer rdb.Close()`,
			Args: "rdb",
		},
	})
}

// reserved says why a top-level entry key cannot be a hash field of a
// block.
func reserved(key string) string {
	switch {
	case key == "_seq" || key == "_inc" || key == "_w":
		return "Redis block hashes use the hidden field " + key + " themselves"
	case strings.ContainsAny(key, "[]"):
		return "Redis block hashes name partition elements key[i]"
	}
	return ""
}

func generate(f *jen.File, s *model.Schema, a *model.Aggregate) {
	repo := t.StoreRepo(a, "Redis")
	var fields []string
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
			fields = append(fields, `"" (the root entry)`)
		case e.Partition:
			fields = append(fields, e.FieldKey()+" (the element count)", e.ElemNotation())
		default:
			fields = append(fields, e.Key)
		}
	}
	more := ""
	if len(a.Lookups) > 0 {
		var names []string
		for _, l := range a.Lookups {
			names = append(names, fmt.Sprintf("%q", "{"+a.Collection+"."+l.Name+"}"))
		}
		more += fmt.Sprintf(" Its index tables are the sorted sets %s (members: the encoded value and block key), changed in the script of the block's write on a single node and by the lookup protocol of runtime/redisstore on a cluster.", strings.Join(names, ", "))
	}
	if a.Counter {
		more += fmt.Sprintf(" Block keys are allocated with INCR on %q (one counter per scope).", a.Collection+":counter")
	}
	hidden := "the hidden field _seq (the write sequence)"
	if len(a.Lookups) > 0 {
		hidden = "the hidden fields _seq and _inc (the write sequence and the block's incarnation)"
	}
	doc := fmt.Sprintf("%s is %s on Redis, after the NoAM key-value mapping. Each %s block is one hash named %q with one field per entry (%s) and %s; the sorted set %q lists the blocks in key order. Every write is one Lua script run, atomic on the node that owns the block's hash slot.%s",
		repo, t.Repo(a), a.Name, a.Collection+":{<block key>}", strings.Join(fields, ", "), hidden, a.Collection+":blocks", more)
	t.StoreRepoDecl(f, a, "Redis", doc, "rdb, a single-node or a cluster client", "redisstore.Options",
		"rdb", jen.Qual(redisPkg, "UniversalClient"),
		jen.Op("*").Qual(storePkg, "Store").Types(jen.Id(a.Name), t.IDType(a)),
		jen.Qual(storePkg, "Open"))
	f.Comment("Client returns the underlying client.")
	f.Func().Params(jen.Id("r").Op("*").Id(repo)).Id("Client").Params().Qual(redisPkg, "UniversalClient").Block(jen.Return(jen.Id("r").Dot("store").Dot("Client").Call()))
}
