package layout

import (
	"slices"
	"strings"

	"github.com/noamgen/noamgen/runtime/access"
)

// SingleTableStore is the DynamoDB declaration in the single-table design
// (dynamostore.Options.SingleTable = table): Store's requests, their
// number and atomicity, with every table of a collection (the block
// table, the index table, the counters and schema records) the one table,
// keyed by _pk and _sk, and the GSI lookups on the overloaded GSIs.
func SingleTableStore(table string) *access.Store {
	d := *Store
	q := func(s string) string { return `"` + s + `"` }
	r := strings.NewReplacer(
		Index, table,
		Counters, table,
		Schema, table,
		"$coll IndexName "+GSIName("$lookup"), table+" IndexName gsi<i>",
		GSIPart+" = \"$coll\", "+GSIKeyPrefix+"$lookup", "_gsi<i>pk = (\"$coll\", \"$lookup\"), _gsi<i>sk",
		"Limit: n+1}", "FilterExpression _c = \"$coll\", no Limit: up to 1 MB of the table a request, the blocks past n+1 dropped}",
		"Scan $coll page by page", "Scan "+table+" page by page (FilterExpression _c = \"$coll\")",
		"$coll", table,
		"{_id: ", "{_pk, _sk: ",
		"{_id}", "{_pk, _sk}",
		"(_id)", "(_pk)",
		"p = \""+Scope+"\"", "_pk = 0x01 (\"index\", \"$coll\", "+q(Scope)+")",
		"p = \"$lookup\"", "_pk = 0x01 (\"index\", \"$coll\", \"$lookup\")",
		"{p: \"$lookup\", k: B(value)}", "{_pk: 0x01 (\"index\", \"$coll\", \"$lookup\"), _sk: B(value)}",
		", k in", ", _sk in",
		", k between", ", _sk between",
		"(k)", "(_sk)",
		"partition key p: S, sort key k: B", "the same table",
	)
	d.Names = access.Names{Index: table, Counter: table}
	// The blocks of a counter scope share their partition, in number
	// order: ListBy<scope> is a Query of it, with no scope items.
	d.ScopeItems = false
	d.Summary = `Table "` + table + `" (after the optional dynamostore.Options.TablePrefix; dynamostore.Options.SingleTable) holds every collection of the package, their index items, counters and schema records (single-table design), keyed by _pk (partition key, B) and _sk (sort key, B). A block is one item (NoAM Fig. 5): _pk the first component of its block key in the order-preserving encoding, _sk the collection's name followed by the other components, so that the blocks whose keys start with another block's key share its partition (one Query reads them together); _c holds the collection's name, and every entry is an attribute of its own in native attribute values (S, N, BOOL, M, L, NULL); a partitioned field is a list attribute written element by element, its length in the map _len.`
	d.Containers = []access.Container{
		{When: access.ETF, Kind: "table", Name: table, Role: "blocks of $coll", Key: "partition key _pk = B(first key component), sort key _sk = B(\"$coll\" ‖ other key components); item {_pk, _sk, _c: \"$coll\", $allFields[?parts:, _len: M][?indexed:, _seq, _inc]}", Example: "{_pk, _sk: $block, _c: \"$coll\", ...}"},
		{When: access.EAO, Kind: "table", Name: table, Role: "blocks of $coll", Key: "partition key _pk = B(first key component), sort key _sk = B(\"$coll\" ‖ other key components); item {_pk, _sk, _c: \"$coll\", _root: M[?ownFields:, $ownFields][?parts:, _len: M][?indexed:, _seq, _inc]}", Example: "{_pk, _sk: $block, _c: \"$coll\", ...}"},
		{Each: "lookup", Kind: "table", Name: table, Role: "index items of lookup $lookup", Key: "partition key _pk = 0x01 (\"index\", \"$coll\", \"$lookup\"), sort key _sk = B(lookup value[?shared: ‖ block key]); item {_pk, _sk, id: <block key>, inc, s, w}", Example: "{_pk: 0x01 (\"index\", \"$coll\", \"$lookup\"), _sk: B($indexKey), id: $block, ...}"},
		{When: access.HasCounter, Kind: "table", Name: table, Role: "counters", Key: "partition key _pk = 0x01 (\"counter\", \"$coll\") ‖ scope, sort key _sk = 0x01; item {_pk, _sk, n: <last number allocated>}", Example: "{_pk: 0x01 (\"counter\", \"$coll\"), _sk: 0x01, n: <n>}"},
		{Kind: "table", Name: table, Role: "schema record of $coll (the layout EnsureIndexes recorded)", Key: "partition key _pk = 0x01 (\"schema\"), sort key _sk = (\"$coll\"); item {_pk, _sk, rec: B (runtime.SchemaRecord as JSON)}", Example: "{_pk: 0x01 (\"schema\"), _sk: (\"$coll\"), rec: B(...)}"},
	}
	d.Block = append([]access.Stored{{Key: SinglePK + ", " + SingleSK, Value: "$block"}, {Key: SingleColl, Value: "S \"$coll\""}}, Store.Block[1:]...)
	d.NativeIndex = func(l access.Lookup) access.Index {
		return access.Index{Keys: []string{"_gsi<i>pk", "_gsi<i>sk"}, Options: []string{"overloaded global secondary index gsi<i> (the i-th GSI lookup of the collection; _gsi<i>pk = (collection, \"" + l.Name + "\"))", "projection ALL", "sparse", "eventually consistent"}}
	}
	d.Notes = append([]access.Note{{Text: "Single-table design: the collection shares table " + table + " with the other collections of the package. List, All, Count, Migrate and Repair Scan the whole table with FilterExpression _c = \"$coll\": they read, and DynamoDB bills, every item of the table. The adapter's own items (index items, counters, schema records) have a _pk starting with the byte 0x01, which starts no block key."}}, Store.Notes...)
	for i, n := range d.Notes[1:] {
		switch n.When {
		case access.Indexed:
			// The index-table notes: the same, in the one table.
			n.Text = strings.NewReplacer("Index items live in another table", "Index items are other items of the table", "(k)", "(_sk)", "the partition key p", "the partition key 0x01 (\"index\", collection, lookup)").Replace(n.Text)
		case access.HasNative:
			n.Text = "Non-unique lookups of one value per block (no path through a slice, no table option) are the overloaded global secondary indexes gsi1, gsi2, ... of the table, the i-th GSI lookup of a collection on the i-th: the item carries _gsi<i>pk (B, (collection, lookup); the GSI's partition key) and _gsi<i>sk (B, lookup value ‖ block key; the sort key), written in the block's own request (atomic with it), left out when the lookup indexes no value (sparse). GSIs are eventually consistent: a ListBy may miss a block just written or return it as it was. One lookup's entries share one partition key value (hot partition: see the package doc). noam:\"lookup,table\" keeps strongly consistent index items. EnsureIndexes creates the table with the GSIs the collection needs (at least Options.SingleTableGSIs) and adds those a table that exists lacks."
		}
		d.Notes[i+1] = n
	}
	d.Costs = make([]access.Cost, len(Store.Costs))
	for i, c := range Store.Costs {
		if slices.Contains(c.Methods, access.Ensure) {
			// One table: created once with its GSIs, then the
			// transactions probe and the schema record as before.
			c.Steps = append([]access.Step{{N: 2, Per: access.PerTable, Op: "CreateTable " + table + " (partition key _pk: B, sort key _sk: B, on-demand billing[?native:, with the overloaded GSIs gsi1, gsi2, ... the collection's GSI lookups need, at least dynamostore.Options.SingleTableGSIs]) when it does not exist, then DescribeTable until ACTIVE[?native:; on a table that lacks some of them, one UpdateTable per GSI (which dynalite ignores) and DescribeTable until it is ACTIVE]"}}, c.Steps[len(c.Steps)-2:]...)
		}
		if slices.Contains(c.Methods, access.ListScope) {
			c.Atomic = "each page is read from one strongly consistent Query"
			c.Steps = []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + table + " {_pk = the scope's first key component, _sk between (\"$coll\", the scope's other components, the number after the cursor) and the scope's end} ConsistentRead: the items are the blocks, in number order"}}
		}
		if slices.Contains(c.Methods, access.CountScope) {
			c.Atomic = "not atomic: as ListScope, pages of 256 blocks, each page from one strongly consistent Query"
			c.Steps = []access.Step{{N: 1, Per: access.PerPage, Op: "Query " + table + " {_pk = the scope's first key component, _sk between (\"$coll\", the scope's other components, the number after the last block counted) and the scope's end} ConsistentRead"}}
		}
		c.Steps = append([]access.Step(nil), c.Steps...)
		for j := range c.Steps {
			c.Steps[j].Op = r.Replace(c.Steps[j].Op)
		}
		d.Costs[i] = c
	}
	return &d
}
