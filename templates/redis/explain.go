package redis

// The Redis part of `noamgen explain`: the physical layout of
// runtime/redisstore (see its package documentation and keys.go), what
// each method does there on a single node and on a Redis Cluster (the same
// generated code runs on both), and sampling of a real server.
//
// Round trips are written as a sum of terms, "2 + 1 per new value of
// {Hotel.name} + 1 if {Hotel.tags} loses values", prefixed "node: " and
// "cluster: " where the two differ: each term is one request (a command,
// a script run or a pipeline) that templates/redis/explain_test.go counts
// with a go-redis hook.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore"
	t "github.com/noamgen/noamgen/templates"
)

func init() {
	t.RegisterExplain("redis", t.Explainer{
		Title:  "Redis",
		Layout: layout,
		Cost:   cost,
		Conn:   []t.ConnSetting{{Name: "redis", Env: "NOAM_REDIS_URL", Usage: "Redis `URL` to sample (redis://host:port/db; a cluster node's URL samples the cluster; read-only commands)"}},
		Sample: sample,
	})
}

// exampleElems is how many elements the example block's partitions hold.
const exampleElems = 2

// Hidden hash fields of runtime/redisstore.
const (
	seqField  = "_seq"
	incField  = "_inc"
	onceField = "_w"
)

// keyText renders key parts as runtime/redisstore names them inside a
// hash tag: one part bare (2345), several as quoted strings and decimals
// separated by commas ("thread",3).
func keyText(kv []t.KeyValue, bare bool) string {
	if bare && len(kv) == 1 {
		return fmt.Sprint(kv[0].Value)
	}
	var parts []string
	for _, p := range kv {
		if s, ok := p.Value.(string); ok {
			parts = append(parts, strconv.Quote(s))
		} else {
			parts = append(parts, fmt.Sprint(p.Value))
		}
	}
	return strings.Join(parts, ",")
}

// BlockName is the name of the example block's hash: "Game:{2345}".
func BlockName(a *model.Aggregate) string {
	return a.Collection + ":{" + keyText(t.ExampleKey(a), true) + "}"
}

// ListName is the name of the sorted set listing the blocks.
func ListName(a *model.Aggregate) string { return a.Collection + ":blocks" }

// LookupName is the name of the sorted set of lookup l: "{Game.name}";
// its meta hash adds ":meta", its claims hash ":claims".
func LookupName(a *model.Aggregate, l *model.Lookup) string {
	return "{" + a.Collection + "." + l.Name + "}"
}

// CounterName is the name of the example block's counter: "Post:counter",
// "Comment:counter:{2345}" for a counter per scope.
func CounterName(a *model.Aggregate) string {
	n := len(a.Scope())
	if n == 0 {
		return a.Collection + ":counter"
	}
	return a.Collection + ":counter:{" + keyText(t.ExampleKey(a)[:n], false) + "}"
}

// Keys lists the names of every Redis key the example block and its
// bookkeeping use, as Layout's containers show them.
func Keys(a *model.Aggregate) []string {
	var out []string
	for _, c := range layout(a).Containers {
		out = append(out, strings.Fields(c.Example)[0])
	}
	return out
}

// Field renders a hash field as Layout's example shows it: the root
// entry of an EAO block, the empty field, as "".
func Field(f string) string {
	if f == "" {
		return `""`
	}
	return f
}

func layout(a *model.Aggregate) t.Physical {
	block := BlockName(a)
	p := t.Physical{
		Summary: fmt.Sprintf("One Redis hash per block (NoAM Fig. 4 and 9, the key-value mapping), named by the collection and the block key in a hash tag, %q, so that a block is one key on one hash slot of a cluster; one hash field per entry (\"\" for the root entry of an EAO block, \"f[i]\" for an element). Values are BSON values (runtime/bsonval: the type byte and the BSON bytes); element counts and the version are decimal integers, which scripts bump with HINCRBY. The same keys serve a single node and a Redis Cluster.", block),
	}
	value := "BSON value per entry; counts and version in decimal; _seq"
	if len(a.Lookups) > 0 {
		value += ", _inc"
	}
	value += ", _w"
	p.Containers = append(p.Containers, t.Container{
		Kind: "hash", Name: a.Collection + ":{<block key>}", Role: "blocks (one hash each)",
		Key: "entry key, f[i] for an element", Value: value, Example: block,
	})
	p.Containers = append(p.Containers, t.Container{
		Kind: "sorted set", Name: ListName(a), Role: "block listing (List, All, scopes, Repair)",
		Key: "member: encoded block key, score 0 (ZRANGE BYLEX)", Example: ListName(a) + " ∋ " + t.ExampleKeyText(a),
	})
	for _, l := range a.Lookups {
		z := LookupName(a, l)
		var parts []string
		for _, pt := range l.Parts {
			parts = append(parts, "<"+pt.Path+">")
		}
		value := strings.Join(parts, " ‖ ")
		p.Containers = append(p.Containers,
			t.Container{
				Kind: "sorted set", Name: z, Role: "index table of lookup " + l.Name,
				Key: "member: encoded lookup value ‖ encoded block key, score 0", Example: z + " ∋ " + value + " ‖ " + t.ExampleKeyText(a),
			},
			t.Container{
				Kind: "hash", Name: z + ":meta", Role: "bookkeeping of lookup " + l.Name + " (the lookup protocol)",
				Key: "field: a member of " + z, Value: "<incarnation> <write sequence> of the write that added it", Example: z + ":meta",
			})
		if l.Unique {
			p.Containers = append(p.Containers, t.Container{
				Kind: "hash", Name: z + ":claims", Role: "claims of unique lookup " + l.Name,
				Key: "field: encoded lookup value", Value: "encoded block key of the holder", Example: z + ":claims",
			})
		}
	}
	if a.Counter {
		shape := a.Collection + ":counter"
		if len(a.Scope()) > 0 {
			shape += ":{<" + scopeNames(a) + ">}"
		}
		p.Containers = append(p.Containers, t.Container{
			Kind: "string", Name: shape, Role: "counter",
			Key: "-", Value: "last number allocated (INCR) or used (decimal)", Example: CounterName(a) + " -> <n>",
		})
	}
	p.Example = exampleBlock(a)
	p.Notes = append(p.Notes, "Every write is one run of one Lua script (EVALSHA) that checks its conditions (block exists or not, version, element index, unique claims, block unchanged since read) before it changes anything: a write of one block is atomic on a single node and on a cluster.")
	idx := "and the block listing"
	if len(a.Lookups) > 0 {
		idx = ", the block listing and the index tables"
	}
	if a.Counter {
		idx += " (and the counter when a write raises it)"
	}
	after := "after the block's"
	if len(a.Lookups) > 0 {
		after = "after the block's (the listing, the counter) or around it (index tables: the lookup protocol below)"
	}
	p.Notes = append(p.Notes, "Single node: the same script run changes the block "+idx+", all or nothing. Redis Cluster: they live on other hash slots and change in runs of their own, "+after+", so they may lag behind the block after a crash; Repair rebuilds them.")
	if len(a.Lookups) > 0 {
		p.Notes = append(p.Notes, "The lookup protocol on a cluster (as runtime/mongostore's, RELIABILITY.md): unique values are claimed first (a check-and-set script on the :claims hash), the other new entries added, then the block written on condition that its _seq is the one read, then the entries of the old values removed, only those of this incarnation (_inc) written before this write. Reads verify every entry against its block and skip stale ones.")
	}
	if len(a.Partitions()) > 0 {
		p.Notes = append(p.Notes, "Appending an element sends the element only: the script bumps the count (HINCRBY) and writes f[n] (plus the version), whatever the partition's size.")
	}
	p.Notes = append(p.Notes, "EnsureIndexes loads the script (SCRIPT LOAD, on every master of a cluster); otherwise the first write on a server costs one more round trip (EVALSHA answers NOSCRIPT, go-redis sends EVAL).")
	p.Notes = append(p.Notes, fmt.Sprintf("A hash field holds at most %d bytes (512 MB, runtime.Caps.MaxValueBytes), and so does a key name or an index member (Redis's limit of one argument, proto-max-bulk-len): a larger one fails with runtime.ErrTooLarge before anything is sent; a write whose values together pass the limit sends them as several arguments. A block has no limit of its own, but it lives on one node.", redisstore.MaxValueBytes))
	return p
}

// exampleBlock lists the fields of the example block in the order the
// adapter writes them (HGETALL shows a small hash in that order).
func exampleBlock(a *model.Aggregate) []t.Stored {
	var out []t.Stored
	if a.Strategy == model.EAO {
		var fs []string
		for _, f := range a.Root() {
			fs = append(fs, f.Key)
		}
		out = append(out, t.Stored{Key: Field(""), Entry: "ε", Value: "BSON document {" + strings.Join(fs, ", ") + "}"})
	}
	for _, e := range a.Entries() {
		switch {
		case e.Key == "" || e.Version:
		case e.Partition:
			f := e.Fields[0]
			for i := range exampleElems {
				k := fmt.Sprintf("%s[%d]", f.Key, i)
				out = append(out, t.Stored{Key: k, Entry: k, Value: "BSON " + t.TypeText(a, f.Elem)})
			}
			out = append(out, t.Stored{Key: f.Key, Entry: f.Key, Value: fmt.Sprintf("decimal %d (the element count)", exampleElems)})
		default:
			out = append(out, t.Stored{Key: e.Key, Entry: e.Key, Value: "BSON " + t.TypeText(a, e.Fields[0].Type)})
		}
	}
	if a.Version != nil {
		out = append(out, t.Stored{Key: a.Version.Key, Entry: a.Version.Key, Value: "decimal (the version)"})
	}
	if len(a.Lookups) > 0 {
		out = append(out, t.Stored{Key: incField, Value: "the block's incarnation, drawn at creation (the lookup protocol)"})
	}
	out = append(out, t.Stored{Key: seqField, Value: "the write sequence, 20 decimal digits (conditional writes compare it)"})
	out = append(out, t.Stored{Key: onceField, Value: "the last write's token and result (a script run go-redis resends after a lost reply is not applied twice)"})
	return out
}

func scopeNames(a *model.Aggregate) string {
	var names []string
	for _, p := range a.Scope() {
		names = append(names, p.Key)
	}
	return strings.Join(names, ", ")
}

func lookupsNamed(a *model.Aggregate, names []string) []*model.Lookup {
	var out []*model.Lookup
	for _, l := range a.Lookups {
		for _, n := range names {
			if l.Name == n {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// rt is a round-trip formula: a constant and conditional terms.
type rt struct {
	n     int
	terms []string
}

func (r *rt) add(n int)        { r.n += n }
func (r *rt) term(what string) { r.terms = append(r.terms, what) }
func (r rt) String() string {
	parts := r.terms
	if r.n != 0 || len(r.terms) == 0 {
		parts = append([]string{strconv.Itoa(r.n)}, r.terms...)
	}
	return strings.Join(parts, " + ")
}

// modes renders the round trips of a method on a node and on a cluster.
func modes(node, cluster rt) string {
	if node.String() == cluster.String() {
		return node.String()
	}
	return "node: " + node.String() + "; cluster: " + cluster.String()
}

// names lists the sorted sets of ls.
func names(a *model.Aggregate, ls []*model.Lookup) string {
	var out []string
	for _, l := range ls {
		out = append(out, LookupName(a, l))
	}
	return strings.Join(out, ", ")
}

func cost(a *model.Aggregate, m t.Method, acc t.Access) t.Cost {
	block, list := BlockName(a), ListName(a)
	one := "the block: one hash on one slot, read whole"
	c := t.Cost{RoundTrips: "1", Atomic: one}
	var node, cluster rt
	ls := lookupsNamed(a, acc.WritesIndex)
	ver := ""
	if a.Version != nil {
		ver = a.Version.Key
	}
	// gains adds the cluster runs that add the entries a write gains,
	// before its block script; losses those that remove the lost ones.
	gains := func() {
		for _, l := range ls {
			z := LookupName(a, l)
			if l.Unique {
				c.Ops = append(c.Ops, "cluster: EVALSHA per new value of "+z+": claim it (check-and-set "+z+":claims), ZADD "+z+", HSET "+z+":meta")
				cluster.term("1 per new value of " + z)
			} else {
				c.Ops = append(c.Ops, "cluster: EVALSHA per new value of "+z+": ZADD "+z+", HSET "+z+":meta")
				cluster.term("1 per new value of " + z)
			}
		}
	}
	losses := func() {
		for _, l := range ls {
			z := LookupName(a, l)
			c.Ops = append(c.Ops, "cluster: EVALSHA: remove the lost values' entries of this incarnation written before this write (ZREM "+z+", HDEL "+z+":meta"+map[bool]string{true: ", " + z + ":claims", false: ""}[l.Unique]+")")
			cluster.term("1 if " + z + " loses values")
		}
	}
	nodeClaims := "" // a node's script checks the claims of the new unique values
	if u := uniques(ls); len(u) > 0 {
		nodeClaims = ", the claims of " + names(a, u)
	}
	nodeIndex := ""
	if len(ls) > 0 {
		nodeIndex = "; ZADD/ZREM " + names(a, ls) + " and their :meta" + claimsOf(ls) + " for the values gained/lost"
	}
	protocolAtomic := func() {
		c.Atomic = "node: all of it, one script run; cluster: the block's script is atomic, index entries are added before it and removed after it (a crash leaves stale entries, which reads skip and Repair removes)"
	}
	switch m.Kind {
	case t.MGet:
		c.Ops = []string{"HGETALL " + block}
	case t.MGetMany:
		c.Ops = []string{"pipeline: HGETALL per key (on a cluster, one pipeline per node, sent together)"}
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MList, t.MAll, t.MListScope:
		rng := "after the cursor"
		if m.Kind == t.MListScope {
			rng = "in the scope's range, after the cursor"
		}
		c.Ops = []string{"ZRANGE " + list + " BYLEX " + rng + " LIMIT n+1", "pipeline: HGETALL per block"}
		c.RoundTrips = "2 per page"
		if m.Kind == t.MAll {
			c.RoundTrips = fmt.Sprintf("2 per %d blocks", runtime.DefaultPageLimit)
		}
		c.Atomic = "each block is read whole (not a snapshot across blocks); a listed block that is gone (a cluster write in flight) is skipped and the next batch read"
	case t.MListElems:
		f := m.Field.Key
		c.Ops = []string{"HMGET " + block + " _seq " + f + " " + f + "[i] … " + f + "[i+n]"}
		c.RoundTrips = "1 per page"
		c.Atomic = "the page and the count are read from one state of the hash"
	case t.MListBy:
		z := LookupName(a, m.Lookup)
		c.Ops = []string{"ZRANGE " + z + " BYLEX in the query's range, after the cursor, LIMIT n+1", "pipeline: HGETALL per entry's block"}
		c.RoundTrips = "2 per page"
		c.Atomic = "not atomic: entries are read, then their blocks; every block is checked to hold the value (stale entries are skipped and the next batch read)"
	case t.MGetBy:
		z := LookupName(a, m.Lookup)
		c.Ops = []string{"HGET " + z + ":claims <value>", "pipeline: HGETALL of the holder's block"}
		c.RoundTrips = "2"
		c.Atomic = "not atomic: the claim, then the block, which is checked to hold the value"
	case t.MEnsure:
		c.Ops = []string{"SCRIPT LOAD the write script (on every master of a cluster); Redis needs nothing else created"}
		node.add(1)
		cluster.term("1 per master")
		c.RoundTrips = modes(node, cluster)
		c.Atomic = "safe to repeat"
	case t.MRepair:
		c.Ops = []string{"SCAN " + a.Collection + ":{*} (on every master of a cluster)", "pipeline: HGETALL per 256 blocks", "ZRANGE " + list}
		for _, l := range a.Lookups {
			z := LookupName(a, l)
			op := "ZRANGE " + z + ", HGETALL " + z + ":meta"
			if l.Unique {
				op += ", HGETALL " + z + ":claims"
			}
			c.Ops = append(c.Ops, op)
		}
		c.Ops = append(c.Ops, "pipeline: ZADD/ZREM/HSET/HDEL per 256 fixes")
		c.RoundTrips = "proportional to the blocks and entries (SCAN pages and pipelines of 256)"
		c.Atomic = "not atomic: run it while nothing else writes the collection"
	case t.MCreate:
		if acc.Counter {
			c.Ops = append(c.Ops, "INCR "+CounterName(a)+" when the key's number is 0 (again while numbers are in use)")
			node.term("1 if the counter allocates the key")
			cluster.term("1 if the counter allocates the key")
		}
		w := "DEL, HSET each entry"
		if len(a.Lookups) > 0 {
			w += ", _inc"
		}
		w += ", _seq"
		counter := ""
		if acc.Counter {
			counter = "; raise " + CounterName(a) + " to a given number"
		}
		idx := ""
		if len(ls) > 0 {
			idx = "; ZADD " + names(a, ls) + ", HSET their :meta" + claimsOf(ls)
		}
		c.Ops = append(c.Ops, "node: EVALSHA [check "+block+" absent"+nodeClaims+"; "+w+idx+"; ZADD "+list+counter+"]")
		node.add(1)
		gains()
		c.Ops = append(c.Ops, "cluster: EVALSHA "+block+" [check absent; "+w+"]", "cluster: ZADD "+list)
		cluster.add(2)
		if acc.Counter {
			c.Ops = append(c.Ops, "cluster: EVALSHA: raise "+CounterName(a)+" to a given number")
			cluster.term("1 if the key's number is given")
		}
		c.RoundTrips = modes(node, cluster)
		if len(ls) > 0 {
			protocolAtomic()
		} else {
			c.Atomic = "node: all of it, one script run; cluster: the block's script is atomic, the listing follows it"
		}
		if acc.Counter {
			c.Atomic += "; INCR is a command of its own (a failed write leaves its number unused)"
		}
	case t.MPut:
		if acc.Counter {
			c.Ops = append(c.Ops, "a key whose number is 0: as Create")
		}
		check := ""
		if len(a.Lookups) > 0 {
			c.Ops = append(c.Ops, "HGETALL "+block+" (_seq, _inc, the indexed values)")
			node.add(1)
			cluster.add(1)
			check = "unchanged since read (_seq)"
			if ver != "" {
				check += ", " + ver + " as given"
			}
		} else if ver != "" {
			check = ver + " as given (absent when 0)"
		}
		w := "DEL, HSET each entry"
		if len(a.Lookups) > 0 {
			w += ", _inc"
		}
		w += ", _seq"
		counter := ""
		if acc.Counter {
			counter = "; raise " + CounterName(a)
		}
		nodePre, pre := "", ""
		if check != "" {
			nodePre, pre = "check "+block+" "+check+nodeClaims+"; ", "check "+check+"; "
		}
		c.Ops = append(c.Ops, "node: EVALSHA ["+nodePre+w+nodeIndex+"; ZADD "+list+counter+"]")
		node.add(1)
		gains()
		c.Ops = append(c.Ops, "cluster: EVALSHA "+block+" ["+pre+w+"]", "cluster: ZADD "+list)
		cluster.add(2)
		if acc.Counter {
			c.Ops = append(c.Ops, "cluster: EVALSHA: raise "+CounterName(a))
			cluster.add(1)
		}
		losses()
		c.RoundTrips = modes(node, cluster)
		if len(ls) > 0 {
			protocolAtomic()
			c.Atomic += "; the read and the script are retried while the block changes in between"
		} else {
			c.Atomic = "node: all of it, one script run; cluster: the block's script is atomic, the listing follows it"
		}
	case t.MDelete:
		check := "exists"
		if len(a.Lookups) > 0 {
			c.Ops = append(c.Ops, "HGETALL "+block+" (_seq, _inc, the indexed values)")
			node.add(1)
			cluster.add(1)
			check = "unchanged since read (_seq)"
		}
		idx := ""
		if len(ls) > 0 {
			idx = "; ZREM " + names(a, ls) + ", HDEL their :meta" + claimsOf(ls) + " for its values"
		}
		c.Ops = append(c.Ops, "node: EVALSHA [check "+block+" "+check+"; DEL "+block+idx+"; ZREM "+list+"]")
		node.add(1)
		c.Ops = append(c.Ops, "cluster: EVALSHA "+block+" [check "+check+"; DEL]", "cluster: ZREM "+list, "cluster: EXISTS "+block+" (and ZADD "+list+" again if the block was created again meanwhile)")
		cluster.add(3)
		cluster.term("1 if the block was created again meanwhile")
		losses()
		c.RoundTrips = modes(node, cluster)
		if len(ls) > 0 {
			c.Atomic = "node: all of it, one script run; cluster: the block's script is atomic, its listing and index entries are removed after it (a crash leaves stale entries, which reads skip and Repair removes)"
		} else {
			c.Atomic = "node: all of it, one script run; cluster: the block's script is atomic, the listing follows it"
		}
	case t.MSet, t.MSetAt, t.MUpdate, t.MAppend:
		var w, checks string
		bump := ""
		if ver != "" {
			bump = ", HINCRBY " + ver + " 1"
		}
		switch m.Kind {
		case t.MSet:
			checks = "exists"
			w = "HSET " + m.Field.Key + bump
		case t.MSetAt:
			f := m.Field.Key
			checks = "exists, i < " + f
			w = "HSET " + f + "[i]" + bump
		case t.MUpdate:
			checks = "exists"
			if ver != "" {
				checks += ", " + ver + " = IfVersion when set"
			}
			if len(a.Partitions()) > 0 {
				checks += ", i < count per element"
			}
			w = "HSET of the entries given" + bump
		case t.MAppend:
			f := m.Field.Key
			checks = "exists"
			w = "HINCRBY " + f + " 1, HSET " + f + "[n]" + bump
		}
		w += ", _seq"
		if len(ls) > 0 {
			read := "HGETALL " + block + " (_seq, _inc, the indexed values)"
			if m.Kind == t.MAppend {
				read = "HMGET " + block + " _inc _seq"
				checks += ", _inc as read"
			} else {
				checks += ", unchanged since read (_seq)"
			}
			if m.Kind == t.MUpdate {
				read += " when the changes touch an indexed field"
				node.term("1 if the changes touch an indexed field")
				cluster.term("1 if the changes touch an indexed field")
			} else {
				node.add(1)
				cluster.add(1)
			}
			c.Ops = append(c.Ops, read)
			idx := nodeIndex
			if m.Kind == t.MAppend {
				idx = "; ZADD " + names(a, ls) + " and their :meta" + claimsOf(ls) + " for the new values"
			}
			c.Ops = append(c.Ops, "node: EVALSHA [check "+block+" "+checks+nodeClaims+"; "+w+idx+"]")
			node.add(1)
			gains()
			c.Ops = append(c.Ops, "cluster: EVALSHA "+block+" [check "+checks+"; "+w+"]")
			cluster.add(1)
			if m.Kind != t.MAppend {
				losses()
			}
			c.RoundTrips = modes(node, cluster)
			protocolAtomic()
			if m.Kind == t.MUpdate {
				c.Atomic += "; changes of no indexed field: one script run, atomic"
			}
			break
		}
		c.Ops = []string{"EVALSHA " + block + " [check " + checks + "; " + w + "]"}
		c.Atomic = "all of it: one script run on the block's hash"
	}
	return c
}

func uniques(ls []*model.Lookup) []*model.Lookup {
	var out []*model.Lookup
	for _, l := range ls {
		if l.Unique {
			out = append(out, l)
		}
	}
	return out
}

// claimsOf mentions the claims hashes when ls has a unique lookup.
func claimsOf(ls []*model.Lookup) string {
	if len(uniques(ls)) > 0 {
		return " and :claims"
	}
	return ""
}

// ---- sampling

// connect opens the server at url: a single node, or the cluster it is a
// node of. The client only sends read commands.
func connect(ctx context.Context, url string) (redis.UniversalClient, string, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", fmt.Errorf("-redis %q: %w", url, err)
	}
	opt.DialTimeout, opt.ReadTimeout = 5*time.Second, 10*time.Second
	c := redis.NewClient(opt)
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		c.Close()
		return nil, "", fmt.Errorf("connecting to Redis at %s: %w", opt.Addr, err)
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return c, fmt.Sprintf("%s db %d", opt.Addr, opt.DB), nil
	}
	c.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout,
	})
	return cc, "the cluster of " + opt.Addr, nil
}

// sample reads at most n blocks of a, in block-key order (the listing),
// from the Redis server at conn["redis"], with read commands only
// (INFO, ZRANGE, HGETALL).
func sample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*t.Sample, error) {
	url := conn["redis"]
	if url == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, where, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	members, err := c.ZRange(ctx, ListName(a), 0, int64(n)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ListName(a), err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(members))
	names := make([]string, len(members))
	if len(members) > 0 {
		_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, m := range members {
				names[i] = a.Collection + ":{" + KeyText([]byte(m)) + "}"
				cmds[i] = p.HGetAll(ctx, names[i])
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the blocks of %s: %w", a.Collection, err)
		}
	}
	s := &t.Sample{Source: where + ", listing " + ListName(a), MaxValueBytes: redisstore.MaxValueBytes, LimitOf: "value"}
	acc := t.NewSampleSizes(a)
	for i, cmd := range cmds {
		h := cmd.Val()
		if len(h) == 0 {
			continue // listed, but gone (a cluster write in flight)
		}
		s.Blocks++
		key := KeyText([]byte(members[i]))
		parts := map[string]*t.PartitionSize{}
		part := func(name string) *t.PartitionSize {
			p := parts[name]
			if p == nil {
				p = &t.PartitionSize{Key: key, Field: name}
				parts[name] = p
			}
			return p
		}
		total := 0
		for f, v := range h {
			size := len(f) + len(v)
			total += size
			switch {
			case f == seqField || f == incField || f == onceField:
			case strings.HasSuffix(f, "]") && strings.Contains(f, "["):
				name := f[:strings.IndexByte(f, '[')]
				acc.Entry(name+"[]", size)
				part(name).Elements++
				part(name).Bytes += size
			default:
				acc.Entry(f, size)
				if acc.Partitioned(f) {
					part(f).Bytes += size
				}
			}
		}
		var ps []t.PartitionSize
		for _, p := range parts {
			ps = append(ps, *p)
		}
		acc.Block(key, total, ps)
	}
	acc.Fill(s)
	return s, nil
}

// KeyText renders an encoded block key (a listing member) as the adapter
// names it inside a hash tag: one component bare, several as quoted
// strings and decimals separated by commas, bytes the codec did not make
// in hex.
func KeyText(bk []byte) string {
	var parts []any
	r := runtime.NewKeyReader(bk)
	for !r.Done() {
		switch r.Rest()[0] {
		case tagString:
			v, err := r.String()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		case tagInt:
			v, err := r.Int()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		case tagUint:
			v, err := r.Uint()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		default:
			return fmt.Sprintf("%x", bk)
		}
	}
	kv := make([]t.KeyValue, len(parts))
	for i, p := range parts {
		kv[i].Value = p
	}
	return keyText(kv, true)
}

// Component tags of the key codec (runtime/key.go).
const (
	tagString = 0x02
	tagInt    = 0x03
	tagUint   = 0x04
)
