package dynamo

// The DynamoDB part of `noamgen explain`: the physical layout of
// runtime/dynamostore (see its package documentation), what each method
// sends there, and sampling of real tables.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	t "github.com/noamgen/noamgen/templates"
)

func init() {
	t.RegisterExplain("dynamo", t.Explainer{
		Title:  "DynamoDB",
		Layout: layout,
		Cost:   cost,
		Conn: []t.ConnSetting{
			{Name: "dynamo", Env: "NOAM_DYNAMO_ENDPOINT", Usage: "DynamoDB endpoint `URL` to sample (credentials and region from AWS_* variables; dummy ones for a local endpoint)"},
			{Name: "dynamo-prefix", Env: "NOAM_DYNAMO_PREFIX", Usage: "table-name `prefix` of the DynamoDB tables to sample (dynamostore.Options.TablePrefix)"},
		},
		Sample: sample,
	})
}

// hasIndex says whether a keeps an index table: lookups, or the scope
// items of a scoped counter.
func hasIndex(a *model.Aggregate) bool {
	return len(a.Lookups) > 0 || (a.Counter && len(a.Scope()) > 0)
}

// keyText renders the example block key as the _id attribute.
func keyText(a *model.Aggregate) string {
	kv := t.ExampleKey(a)
	if len(a.IDParts) == 0 {
		if _, ok := kv[0].Value.(string); !ok {
			return fmt.Sprintf("N %q", fmt.Sprint(kv[0].Value))
		}
	}
	return "B (order-preserving bytes of " + t.ExampleKeyText(a) + ")"
}

func layout(a *model.Aggregate) t.Physical {
	p := t.Physical{
		Summary: fmt.Sprintf("Table %q (after the optional dynamostore.Options.TablePrefix) holds one item per block (NoAM Fig. 5): the partition key _id is the block key (N for an integer key, B holding the order-preserving encoding of a string or composite key), and every entry is an attribute of its own in native attribute values (S, N, BOOL, M, L, NULL); a partitioned field is a list attribute written element by element, its length in the map _len.", a.Collection),
	}
	shape := []string{"_id: <block key>"}
	if a.Strategy == model.EAO {
		shape = append(shape, dynamostore.RootAttr+": M")
	}
	for _, f := range a.Fields {
		switch {
		case f.IsID:
		case f.IsVersion, f.Partition, a.Strategy == model.ETF:
			shape = append(shape, f.Key)
		}
	}
	if len(a.Partitions()) > 0 {
		shape = append(shape, dynamostore.LenAttr+": M")
	}
	if hasIndex(a) {
		shape = append(shape, dynamostore.SeqAttr, dynamostore.IncAttr)
	}
	p.Containers = append(p.Containers, t.Container{
		Kind: "table", Name: a.Collection, Role: "blocks",
		Key: "partition key _id; item {" + strings.Join(shape, ", ") + "}", Example: "{_id: " + keyText(a) + ", ...}",
	})
	if hasIndex(a) {
		for _, l := range a.Lookups {
			var parts []string
			for _, pt := range l.Parts {
				parts = append(parts, "<"+pt.Path+">")
			}
			k := strings.Join(parts, " ‖ ")
			shape := "lookup value"
			if !l.Unique {
				k += " ‖ " + t.ExampleKeyText(a)
				shape = "lookup value ‖ block key"
			}
			p.Containers = append(p.Containers, t.Container{
				Kind: "table", Name: dynamostore.IndexTable(a.Collection), Role: "index table of lookup " + l.Name,
				Key:     "partition key p = \"" + l.Name + "\", sort key k = B(" + shape + "); item {p, k, id: <block key>, inc, s, w}",
				Example: "{p: \"" + l.Name + "\", k: B(" + k + "), id: " + keyText(a) + ", ...}",
			})
		}
		if a.Counter && len(a.Scope()) > 0 {
			p.Containers = append(p.Containers, t.Container{
				Kind: "table", Name: dynamostore.IndexTable(a.Collection), Role: "scope items of the counter (ListBy" + a.Scope()[0].GoName + ")",
				Key:     "partition key p = \"" + dynamostore.ScopeLookup + "\", sort key k = B(block key)",
				Example: "{p: \"" + dynamostore.ScopeLookup + "\", k: B(" + t.ExampleKeyText(a) + "), id: " + keyText(a) + "}",
			})
		}
	}
	if a.Counter {
		p.Containers = append(p.Containers, t.Container{
			Kind: "table", Name: dynamostore.CountersTable, Role: "counters",
			Key: "partition key _id = <collection>[:scope]; item {_id, n: <last number allocated>}", Example: "{_id: \"" + a.Collection + "\", n: <n>}",
		})
	}
	p.Example = append(p.Example, t.Stored{Key: "_id", Value: keyText(a)})
	if a.Strategy == model.EAO {
		var root []string
		for _, f := range a.Root() {
			root = append(root, f.Key)
		}
		p.Example = append(p.Example, t.Stored{Key: dynamostore.RootAttr, Entry: "ε", Value: "M {" + strings.Join(root, ", ") + "}"})
	}
	for _, f := range a.Fields {
		switch {
		case f.IsID:
		case f.IsVersion:
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: f.Key, Value: "N (the version)"})
		case f.Partition:
			el := t.TypeText(a, f.Elem)
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: f.Key + "[0], " + f.Key + "[1]", Value: "L [<" + el + ">, <" + el + ">]"})
		case a.Strategy == model.ETF:
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: f.Key, Value: "<" + t.TypeText(a, f.Type) + ">"})
		}
	}
	for _, f := range a.Partitions() {
		p.Example = append(p.Example, t.Stored{Key: dynamostore.LenAttr + "." + f.Key, Entry: f.Key, Value: "N 2 (the element count)"})
	}
	if hasIndex(a) {
		p.Example = append(p.Example,
			t.Stored{Key: dynamostore.SeqAttr, Value: "N (write sequence of the lookup protocol)"},
			t.Stored{Key: dynamostore.IncAttr, Value: "N (incarnation of the lookup protocol)"})
	}
	p.Notes = append(p.Notes, "A write of one block is one request on one item (PutItem, UpdateItem, DeleteItem) whose ConditionExpression checks the version (and the element index or count) and bumps it: atomic without transactions.")
	if hasIndex(a) {
		p.Notes = append(p.Notes, "Index items live in another table: without transactions a write adds the items its new state gains before the block write (conditional PutItem, attribute_not_exists(k) for unique values) and removes the lost ones after it; reads verify items against their blocks and skip stale ones, Repair rebuilds them (RELIABILITY.md). All items of one lookup share the partition key p: one lookup's traffic is one partition's (README, hot partitions).")
	}
	p.Notes = append(p.Notes, fmt.Sprintf("An item (the whole block: attribute names and values) is at most %d bytes (400 KB); a block key (the partition key) at most %d bytes; an index key (the sort key: the value, and the block key for a non-unique lookup) at most %d bytes. Larger writes fail with runtime.ErrTooLarge before anything is sent.", dynamostore.MaxItemBytes, dynamostore.MaxKeyBytes, dynamostore.MaxIndexKeyBytes))
	p.Notes = append(p.Notes, "List and All read every block once in the table's own (hash) order, not in block-key order (Caps.OrderedScan false).")
	return p
}

func cost(a *model.Aggregate, m t.Method, acc t.Access) t.Cost {
	tab := a.Collection
	ix := dynamostore.IndexTable(a.Collection)
	ver := ""
	if a.Version != nil {
		ver = a.Version.Key
	}
	bump := ""
	if ver != "" {
		bump = ", ADD " + ver + " 1"
	}
	indexed := func(keys ...string) bool {
		for _, k := range keys {
			for _, l := range a.Lookups {
				for _, p := range l.Parts {
					if p.Field != nil && p.Field.Key == k {
						return true
					}
				}
			}
		}
		return false
	}
	one := "one item: the block is read or written whole, atomically"
	c := t.Cost{RoundTrips: "1", Atomic: one}
	counter := func() {
		if acc.Counter {
			c.Ops = append(c.Ops, "UpdateItem "+dynamostore.CountersTable+" {ADD n 1} when the key is 0, else {SET n = max} (a request of its own)")
		}
	}
	// protocol describes a write through the lookup protocol around the
	// block write w.
	protocol := func(read bool, w string) {
		if read {
			c.Ops = append(c.Ops, "GetItem "+tab+" {_id} (ConsistentRead: indexed attributes, version, _seq, _inc)")
		}
		c.Ops = append(c.Ops, "PutItem "+ix+" per index item the block gains (attribute_not_exists(k) for a unique value)", w+" (on condition of _seq and _inc)", "DeleteItem "+ix+" per index item the block loses")
		n := "1"
		if read {
			n = "2"
		}
		c.RoundTrips = n + " + 1 per index item gained + 1 per index item lost"
		c.Atomic = "the block write is atomic; index items are added before it and removed after it (not atomic with it: a crash leaves stale items, which reads skip and Repair removes)"
	}
	switch m.Kind {
	case t.MGet:
		c.Ops = []string{"GetItem " + tab + " {_id: " + keyText(a) + "} (ConsistentRead)"}
	case t.MGetMany:
		c.Ops = []string{"BatchGetItem " + tab + " (100 keys per request, unprocessed keys retried)"}
		c.RoundTrips = "1 per 100 keys (+1 per retry of unprocessed keys)"
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MList:
		c.Ops = []string{"Scan " + tab + " {ExclusiveStartKey: the cursor's block key, Limit: n+1} (table order, not block-key order)"}
		c.RoundTrips = "1 per page (more when the server stops a Scan at 1 MB)"
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MAll:
		c.Ops = []string{"Scan " + tab + " page by page"}
		c.RoundTrips = "1 per page of the scan"
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MListScope:
		c.Ops = []string{"Query " + ix + " {p = \"" + dynamostore.ScopeLookup + "\", k between the scope's keys}", "BatchGetItem " + tab + " (the page's blocks)"}
		c.RoundTrips = "2 per page"
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MListElems:
		f := m.Field.Key
		c.Ops = []string{"GetItem " + tab + " {_id} ProjectionExpression " + dynamostore.LenAttr + "." + f + ", " + f + "[i], ..., " + f + "[i+n] (100 elements per request)"}
		c.RoundTrips = "1 per 100 elements"
		c.Atomic = "each request reads one item version"
	case t.MCreate:
		counter()
		if hasIndex(a) {
			protocol(false, "PutItem "+tab+" {the whole item} attribute_not_exists(_id)")
			c.Ops = c.Ops[:len(c.Ops)-1] // a new block loses no item
			c.RoundTrips = "1 + 1 per index item"
		} else {
			c.Ops = append(c.Ops, "PutItem "+tab+" {the whole item} attribute_not_exists(_id)")
		}
		if acc.Counter {
			c.RoundTrips = "1 more (the counter) + " + c.RoundTrips
			c.Atomic += "; the counter increment is a request of its own (a failed write leaves its number unused)"
		}
	case t.MPut:
		counter()
		w := "PutItem " + tab + " {the whole item}"
		if ver != "" {
			w += " on condition " + ver + " = v (attribute_not_exists(_id) when v is 0)"
		}
		if hasIndex(a) && len(a.Lookups) > 0 {
			protocol(true, w)
		} else {
			c.Ops = append(c.Ops, w)
		}
		if acc.Counter {
			c.RoundTrips = "1 more (the counter) + " + c.RoundTrips
		}
	case t.MDelete:
		if hasIndex(a) {
			c.Ops = []string{"GetItem " + tab + " {_id} (indexed attributes, _inc)", "DeleteItem " + tab + " {_id} attribute_exists(_id)", "DeleteItem " + ix + " per index item of the block"}
			c.RoundTrips = "2 + 1 per index item"
			c.Atomic = "the item delete is atomic; its index items are removed after it"
		} else {
			c.Ops = []string{"DeleteItem " + tab + " {_id} attribute_exists(_id)"}
		}
	case t.MSet, t.MSetAt, t.MUpdate, t.MAppend:
		var w string
		var keys []string
		switch m.Kind {
		case t.MSet:
			keys = []string{m.Field.Key}
			w = "UpdateItem " + tab + " {SET " + m.Field.Key + bump + "} attribute_exists(_id)"
		case t.MSetAt:
			keys = []string{m.Field.Key}
			w = "UpdateItem " + tab + " {SET " + m.Field.Key + "[i]" + bump + "} on condition i < " + dynamostore.LenAttr + "." + m.Field.Key
		case t.MUpdate:
			for _, f := range a.Fields {
				keys = append(keys, f.Key)
			}
			w = "UpdateItem " + tab + " {SET of the entries given" + bump + "} on condition the block exists[, " + ver + " = v][, i < _len.f]"
			if ver == "" {
				w = "UpdateItem " + tab + " {SET of the entries given} on condition the block exists[, i < _len.f]"
			}
		case t.MAppend:
			f := m.Field.Key
			keys = []string{f}
			n := dynamostore.LenAttr + "." + f
			if hasIndex(a) && indexed(keys...) {
				// The protocol reads the block first, so it knows n.
				w = "UpdateItem " + tab + " {SET " + f + " = list_append(" + f + ", [the new element]), " + n + " = n+1" + bump + "} on condition " + n + " = n (retried when another append came first)"
				break
			}
			w = fmt.Sprintf("UpdateItem %s {SET %s[%d] = the new element (past the end: appended), %s = %s+1%s} on condition size(%s) = %s <= %d, ReturnValues UPDATED_NEW (the new %s: the index is one less)", tab, f, dynamostore.AppendPast, n, n, bump, f, n, dynamostore.AppendPast, n)
			c.RoundTrips = "1"
			c.Atomic = fmt.Sprintf("one conditional item write; a block written before the partition existed, or with more than %d elements, fails it and is appended to after a read of its count", dynamostore.AppendPast)
		}
		if hasIndex(a) && indexed(keys...) {
			c.Ops = nil
			protocol(true, w)
			if m.Kind == t.MUpdate {
				c.Atomic += "; an update that changes no indexed entry is one UpdateItem, atomic"
			}
		} else {
			c.Ops = append(c.Ops, w)
		}
	case t.MListBy, t.MGetBy:
		l := m.Lookup
		if m.Kind == t.MGetBy {
			c.Ops = []string{"GetItem " + ix + " {p: \"" + l.Name + "\", k: B(value)} (ConsistentRead)", "GetItem " + tab + " {_id: the item's id} (verifies that the block holds the value)"}
			c.RoundTrips = "2"
			c.Atomic = "not atomic: the index item is read, then its block, which must hold the value (a stale item is skipped)"
			break
		}
		c.Ops = []string{"Query " + ix + " {p = \"" + l.Name + "\", k in the query's range} (sort-key order: value, block key)", "BatchGetItem " + tab + " (the blocks of the page's items)", "DeleteItem " + ix + " per stale item older than dynamostore.StaleAfter"}
		c.RoundTrips = "2 per page (+1 per stale item removed)"
		c.Atomic = "not atomic: items are read, then their blocks, and every block is checked to hold the value (stale items are skipped)"
	case t.MRepair:
		c.Ops = []string{"Scan " + tab + " (the blocks' indexed attributes)", "Query " + ix + " per lookup", "PutItem / DeleteItem " + ix + " for the missing and stale items"}
		c.RoundTrips = "proportional to the blocks and index items"
		c.Atomic = "not atomic: each item is a request of its own"
	case t.MEnsure:
		c.Ops = []string{"CreateTable " + tab + " (on-demand billing) when it does not exist, then DescribeTable until ACTIVE"}
		if hasIndex(a) {
			c.Ops = append(c.Ops, "the same for "+ix+" (partition key p: S, sort key k: B)")
		}
		if a.Counter {
			c.Ops = append(c.Ops, "the same for "+dynamostore.CountersTable)
		}
		c.RoundTrips = "2 or more per table (create, then describe until active)"
		c.Atomic = "each request on its own; safe to repeat"
	}
	return c
}

// avSize approximates the bytes DynamoDB counts for an attribute value
// (its item size rules: strings and binaries by length, numbers by digits,
// one byte for BOOL and NULL, 3 bytes plus the elements for L and M).
func avSize(av types.AttributeValue) int {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	}
	return 0
}

// sample scans at most n items of a's table at the endpoint conn["dynamo"].
func sample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*t.Sample, error) {
	endpoint := conn["dynamo"]
	if endpoint == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("noam", "noam", "")}
	if r := envOr("AWS_REGION", ""); r != "" {
		cfg.Region = r
	}
	if id := envOr("AWS_ACCESS_KEY_ID", ""); id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, envOr("AWS_SECRET_ACCESS_KEY", ""), envOr("AWS_SESSION_TOKEN", ""))
	}
	c := dynamodb.NewFromConfig(cfg)
	table := conn["dynamo-prefix"] + a.Collection
	s := &t.Sample{Source: "table " + table + " at " + endpoint, MaxValueBytes: dynamostore.MaxItemBytes, LimitOf: "item"}
	acc := t.NewSampleSizes(a)
	var start map[string]types.AttributeValue
	for s.Blocks < n {
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, Limit: aws.Int32(int32(n - s.Blocks))})
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		for _, item := range out.Items {
			s.Blocks++
			key := fmt.Sprint(item[dynamostore.IDAttr])
			if v, ok := item[dynamostore.IDAttr].(*types.AttributeValueMemberN); ok {
				key = v.Value
			}
			names := make([]string, 0, len(item))
			for k := range item {
				names = append(names, k)
			}
			sort.Strings(names)
			total := 0
			var parts []t.PartitionSize
			for _, k := range names {
				av := item[k]
				size := len(k) + avSize(av)
				total += size
				switch {
				case k == dynamostore.IDAttr, k == dynamostore.SeqAttr, k == dynamostore.IncAttr:
				case k == dynamostore.RootAttr:
					acc.Entry("", size)
				case k == dynamostore.LenAttr:
					if m, ok := av.(*types.AttributeValueMemberM); ok {
						for f, v := range m.Value {
							acc.Entry(f, len(f)+avSize(v))
						}
					}
				case acc.Partitioned(k):
					l, _ := av.(*types.AttributeValueMemberL)
					ps := t.PartitionSize{Key: key, Field: k, Bytes: size}
					if l != nil {
						ps.Elements = len(l.Value)
						for _, e := range l.Value {
							acc.Entry(k+"[]", avSize(e))
						}
					}
					parts = append(parts, ps)
				default:
					acc.Entry(k, size)
				}
			}
			acc.Block(key, total, parts)
			if s.Blocks == n {
				break
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	acc.Fill(s)
	return s, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
