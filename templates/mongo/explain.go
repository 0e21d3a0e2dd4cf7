package mongo

// The MongoDB part of `noamgen explain`: the physical layout of
// runtime/mongostore (see its package documentation), what each method
// does there, and sampling of a real database.
//
// Lookups are described with the mapping of issue 11: a lookup without
// the table option is a native secondary index on the aggregate's own
// collection (one findOne or find per read, kept by the server in the
// write of the document); a lookup with it (noam:"lookup,table") is an
// index-table collection kept by the lookup protocol of runtime/mongostore.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore"
	t "github.com/noamgen/noamgen/templates"
)

func init() {
	t.RegisterExplain("mongo", t.Explainer{
		Title:  "MongoDB",
		Layout: layout,
		Cost:   cost,
		Conn: []t.ConnSetting{
			{Name: "mongo", Env: "NOAM_MONGO_URI", Usage: "MongoDB connection `URI` to sample"},
			{Name: "db", Env: "NOAM_MONGO_DB", Usage: "MongoDB `database` to sample (with -mongo)"},
		},
		Sample: sample,
	})
}

// caps is what the adapter declares (runtime.Caps); Caps reads no field.
var caps = (*mongostore.Store[struct{}, string])(nil).Caps()

// idText renders the example block key as a document's _id.
func idText(a *model.Aggregate) string {
	show := func(v any) string {
		if s, ok := v.(string); ok {
			return fmt.Sprintf("%q", s)
		}
		return fmt.Sprint(v)
	}
	kv := t.ExampleKey(a)
	if len(a.IDParts) == 0 {
		return show(kv[0].Value)
	}
	var parts []string
	for _, p := range kv {
		parts = append(parts, p.Key+": "+show(p.Value))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// dotted turns a lookup path into a document path: games[].game -> games.game.
func dotted(path string) string { return strings.ReplaceAll(path, "[]", "") }

// tables lists the lookups kept in index tables.
func tables(a *model.Aggregate) []*model.Lookup {
	var out []*model.Lookup
	for _, l := range a.Lookups {
		if l.Table {
			out = append(out, l)
		}
	}
	return out
}

func isTable(a *model.Aggregate, name string) bool {
	for _, l := range a.Lookups {
		if l.Name == name {
			return l.Table
		}
	}
	return false
}

func lookupNamed(a *model.Aggregate, name string) *model.Lookup {
	for _, l := range a.Lookups {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// index is the native index of lookup l (issue 11's mapping).
func index(a *model.Aggregate, l *model.Lookup) t.Index {
	ix := t.Index{Collection: a.Collection, Lookup: l.Name}
	for _, p := range l.Parts {
		ix.Keys = append(ix.Keys, dotted(p.Path)+": 1")
	}
	if len(l.Parts) > 1 {
		ix.Keys = append(ix.Keys, "_id: 1")
	}
	if l.Multi() {
		ix.Options = append(ix.Options, "multikey (one index key per element)")
	}
	if l.Unique {
		ix.Options = append(ix.Options, "unique: true")
		if !l.IndexZero {
			var conds []string
			for _, p := range l.Parts {
				conds = append(conds, dotted(p.Path)+" not its zero value")
			}
			ix.Options = append(ix.Options, "partialFilterExpression: "+strings.Join(conds, " and ")+" (zero values are not indexed)")
		}
	}
	return ix
}

func layout(a *model.Aggregate) t.Physical {
	p := t.Physical{
		Summary: fmt.Sprintf("Collection %q holds one document per block (NoAM Fig. 10): _id is the block key and every entry is a top-level field; a partitioned field is an array written element by element ($push, $set \"f.i\"), its length kept in _len.", a.Collection),
	}
	shape := []string{"_id: <block key>"}
	for _, f := range a.Fields {
		if !f.IsID {
			shape = append(shape, f.Key)
		}
	}
	if len(a.Partitions()) > 0 {
		shape = append(shape, "_len")
	}
	if len(tables(a)) > 0 {
		shape = append(shape, "_seq", "_inc")
	}
	p.Containers = append(p.Containers, t.Container{
		Kind: "collection", Name: a.Collection, Role: "blocks",
		Key: "{" + strings.Join(shape, ", ") + "}", Example: "{_id: " + idText(a) + ", ...}",
	})
	for _, l := range tables(a) {
		var parts []string
		for _, pt := range l.Parts {
			parts = append(parts, "<"+pt.Path+">")
		}
		key := strings.Join(parts, " ‖ ")
		if !l.Unique {
			key += " ‖ " + t.ExampleKeyText(a)
		}
		shape := "lookup value ‖ block key"
		if l.Unique {
			shape = "lookup value"
		}
		p.Containers = append(p.Containers, t.Container{
			Kind: "collection", Name: mongostore.TableName(a.Collection, l.Name), Role: "index table of lookup " + l.Name,
			Key:     "{_id: hex(" + shape + "), id: <block key>, inc: <incarnation>, s: <write sequence>, w: <attempt>}",
			Example: "{_id: hex(" + key + "), id: " + idText(a) + ", ...}",
		})
	}
	if a.Counter {
		id := fmt.Sprintf("%q", a.Collection)
		if len(a.Scope()) > 0 {
			id = fmt.Sprintf("%q", a.Collection+":<hex of the scope>")
		}
		p.Containers = append(p.Containers, t.Container{
			Kind: "collection", Name: mongostore.CountersCollection, Role: "counters",
			Key: "{_id: <collection>[:hex(scope)], n: <last number allocated>}", Example: "{_id: " + id + ", n: <n>}",
		})
	}
	p.Example = append(p.Example, t.Stored{Key: "_id", Value: idText(a)})
	for _, f := range a.Fields {
		switch {
		case f.IsID:
		case f.IsVersion:
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: f.Key, Value: "int64 (the version)"})
		case f.Partition:
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: f.Key + "[0], " + f.Key + "[1]", Value: "[<" + t.TypeText(a, f.Elem) + ">, <" + t.TypeText(a, f.Elem) + ">]"})
		default:
			entry := f.Key
			if a.Strategy == model.EAO {
				entry = "ε (part)"
			}
			p.Example = append(p.Example, t.Stored{Key: f.Key, Entry: entry, Value: "<" + t.TypeText(a, f.Type) + ">"})
		}
	}
	var lens []string
	for _, f := range a.Partitions() {
		lens = append(lens, f.Key+": 2")
		p.Example = append(p.Example, t.Stored{Key: mongostore.LenKey + "." + f.Key, Entry: f.Key, Value: "2 (the element count)"})
	}
	if len(tables(a)) > 0 {
		p.Example = append(p.Example,
			t.Stored{Key: mongostore.SeqKey, Value: "int64 (write sequence of the lookup protocol)"},
			t.Stored{Key: mongostore.IncKey, Value: "int64 (incarnation of the lookup protocol)"})
	}
	_ = lens
	for _, l := range a.Lookups {
		if !l.Table {
			p.Indexes = append(p.Indexes, index(a, l))
		}
	}
	p.Notes = append(p.Notes, "A write of one block is one command on one document, which MongoDB applies atomically (native index entries included).")
	if a.Strategy == model.EAO {
		p.Notes = append(p.Notes, "Under EAO the root entry ε is the document's top-level fields, written together by Put.")
	}
	if len(tables(a)) > 0 {
		p.Notes = append(p.Notes, "Index tables (noam:\"lookup,table\") are other collections: without transactions a write adds the entries its new state gains before the document write and removes the lost ones after it; reads verify entries, Repair rebuilds them (RELIABILITY.md).")
	}
	if len(a.Lookups) > len(tables(a)) {
		p.Notes = append(p.Notes, "Lookups without the table option are native secondary indexes (the mapping of issue 11): the server keeps them in the document's write.")
	}
	p.Notes = append(p.Notes, fmt.Sprintf("A document (the whole block) is at most %d bytes (16 MiB, runtime.Caps.MaxValueBytes).", caps.MaxValueBytes))
	return p
}

func cost(a *model.Aggregate, m t.Method, acc t.Access) t.Cost {
	coll := a.Collection
	var tabs []string
	for _, l := range acc.WritesIndex {
		if isTable(a, l) {
			tabs = append(tabs, mongostore.TableName(coll, l))
		}
	}
	ver := ""
	if a.Version != nil {
		ver = a.Version.Key
	}
	one := "one document: the block is read or written whole, atomically"
	c := t.Cost{RoundTrips: "1", Atomic: one}
	inc := ""
	if ver != "" {
		inc = ", $inc " + ver
	}
	counter := func() {
		if acc.Counter {
			c.Ops = append(c.Ops, "findAndModify "+mongostore.CountersCollection+" {$inc n} when the key is 0 (again while numbers are in use), else update {$max n}")
		}
	}
	// protocol describes a write through the lookup protocol of the
	// index tables tabs around the document write w.
	protocol := func(read bool, w string) {
		if read {
			c.Ops = append(c.Ops, "find "+coll+" {_id} (indexed fields, version, _seq, _inc)")
		}
		c.Ops = append(c.Ops, "insert or findAndModify "+strings.Join(tabs, ", ")+": one per index entry the block gains", w+" (on condition of _seq and _inc)", "deleteMany on each of "+strings.Join(tabs, ", ")+" that lost entries")
		n := "1"
		if read {
			n = "2"
		}
		c.RoundTrips = n + " + 1 per index entry gained + 1 per index table losing entries"
		c.Atomic = "the document write is atomic; index-table entries are added before it and removed after it (not atomic with it: a crash leaves stale entries, which reads skip and Repair removes)"
	}
	switch m.Kind {
	case t.MGet:
		c.Ops = []string{"find " + coll + " {_id: " + idText(a) + "}"}
	case t.MGetMany:
		c.Ops = []string{"find " + coll + " {_id: {$in: ids}} (one batch)"}
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MList:
		c.Ops = []string{"find " + coll + " {_id: {$gt: cursor}} sort {_id: 1} limit n+1 (one batch)"}
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MAll:
		c.Ops = []string{fmt.Sprintf("find %s sort {_id: 1}, one find per %d blocks", coll, runtime.DefaultPageLimit)}
		c.RoundTrips = fmt.Sprintf("1 per %d blocks", runtime.DefaultPageLimit)
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MListScope:
		c.Ops = []string{"find " + coll + " {_id.<scope parts>: ..., _id.<counted part>: {$gt: cursor}} sort by the counted part"}
		c.Atomic = "each block is read whole (not a snapshot across blocks)"
	case t.MListElems:
		f := m.Field.Key
		c.Ops = []string{"find " + coll + " {_id} projection {" + mongostore.LenKey + "." + f + ", " + f + ": {$slice: [i, n+1]}}"}
		c.Atomic = "the page is read from one document version"
	case t.MCreate:
		counter()
		if len(tabs) > 0 {
			protocol(false, "insert "+coll)
			c.Ops = c.Ops[:len(c.Ops)-1] // a new block loses no entry
			c.RoundTrips = "1 + 1 per index entry"
		} else {
			c.Ops = append(c.Ops, "insert "+coll+" {the whole document}")
		}
		if acc.Counter {
			c.RoundTrips = "1 more (the counter) + " + c.RoundTrips
			c.Atomic += "; the counter increment is a command of its own (a failed write leaves its number unused)"
		}
	case t.MPut:
		counter()
		w := "replaceOne " + coll + " {_id}"
		if ver != "" {
			w = "replaceOne " + coll + " {_id, " + ver + ": v} (insert when v is 0)"
		} else {
			w += " upsert"
		}
		if len(tabs) > 0 {
			protocol(true, w)
		} else {
			c.Ops = append(c.Ops, w)
		}
		if acc.Counter {
			c.RoundTrips = "1 more (the counter) + " + c.RoundTrips
		}
	case t.MDelete:
		if len(tabs) > 0 {
			c.Ops = []string{"findOneAndDelete " + coll + " {_id}", "deleteMany {id, inc} on each of " + strings.Join(tabs, ", ")}
			c.RoundTrips = fmt.Sprint(1 + len(tabs))
			c.Atomic = "the document delete is atomic; its index-table entries are removed after it"
		} else {
			c.Ops = []string{"deleteOne " + coll + " {_id}"}
		}
	case t.MSet, t.MSetAt, t.MUpdate, t.MAppend:
		var w string
		switch m.Kind {
		case t.MSet:
			w = "updateOne " + coll + " {_id} {$set " + m.Field.Key + inc + "}"
		case t.MSetAt:
			p := m.Field.Key + ".i"
			w = "updateOne " + coll + " {_id, " + p + ": {$exists}} {$set " + p + inc + "}"
		case t.MUpdate:
			w = "updateOne " + coll + " {_id[, " + ver + "][, f.i: {$exists}]} {$set of the entries given" + inc + "}"
			if ver == "" {
				w = "updateOne " + coll + " {_id[, f.i: {$exists}]} {$set of the entries given}"
			}
		case t.MAppend:
			f := m.Field.Key
			w = "findAndModify " + coll + " {_id} {$push " + f + ", $inc " + mongostore.LenKey + "." + f
			if ver != "" {
				w += ", " + ver
			}
			w += "} returning " + mongostore.LenKey + "." + f
		}
		if len(tabs) > 0 {
			protocol(true, strings.Replace(w, "findAndModify", "updateOne", 1))
			if m.Kind == t.MUpdate {
				c.Atomic += "; an update that changes no field of an index table is one updateOne, atomic"
			}
		} else {
			c.Ops = []string{w}
		}
	case t.MListBy, t.MGetBy:
		l := lookupNamed(a, m.Lookup.Name)
		if l.Table {
			tab := mongostore.TableName(coll, l.Name)
			c.Ops = []string{"find " + tab + " {_id in the query's hex range} sort {_id: 1}", "find " + coll + " {_id: {$in: the entries' ids}}", "deleteOne " + tab + " per stale entry older than 30 s"}
			c.RoundTrips = "2 per batch of entries (+1 per stale entry removed)"
			c.Atomic = "not atomic: entries are read, then their blocks, and every block is checked to hold the value (stale entries are skipped)"
			if m.Kind == t.MGetBy {
				c.Ops = []string{"find " + tab + " {_id: hex(value)}", "find " + coll + " {_id: the entry's id}"}
				c.RoundTrips = "2"
			}
			break
		}
		ix := index(a, l)
		var keys []string
		for _, p := range l.Parts {
			keys = append(keys, dotted(p.Path))
		}
		if m.Kind == t.MGetBy {
			c.Ops = []string{"findOne " + coll + " {" + strings.Join(keys, ", ") + "} (native index " + strings.Join(ix.Keys, ", ") + ")"}
		} else {
			c.Ops = []string{"find " + coll + " {" + strings.Join(keys, ", ") + " in the query's range} sort {" + strings.Join(keys, ", ") + ", _id} limit n+1 (native index)"}
			c.RoundTrips = "1 per page"
			c.Atomic = "each block is read whole (not a snapshot across blocks)"
		}
	case t.MRepair:
		var all []string
		for _, l := range tables(a) {
			all = append(all, mongostore.TableName(coll, l.Name))
		}
		if len(all) == 0 {
			c.Ops = []string{"nothing to do: native indexes are kept by the server"}
			c.RoundTrips = "0"
			c.Atomic = "-"
			break
		}
		c.Ops = []string{"find " + coll + " (indexed fields, cursor)", "find " + strings.Join(all, ", ") + " (cursor)", "insert/delete the missing and stale entries in batches"}
		c.RoundTrips = "proportional to the blocks and entries (batched)"
		c.Atomic = "not atomic: each batch is a command of its own"
	case t.MEnsure:
		c.Ops = []string{"create the collections that do not exist"}
		for _, l := range a.Lookups {
			if !l.Table {
				ix := index(a, l)
				c.Ops = append(c.Ops, "createIndexes "+coll+" {"+strings.Join(ix.Keys, ", ")+"}")
			}
		}
		for _, l := range tables(a) {
			c.Ops = append(c.Ops, "createIndexes "+mongostore.TableName(coll, l.Name)+" {id: 1}")
		}
		c.RoundTrips = "1 per collection and index"
		c.Atomic = "each command on its own; safe to repeat"
	}
	return c
}

// sample reads at most n documents of a's collection, in _id order, from
// the database conn["db"] of the server at conn["mongo"].
func sample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*t.Sample, error) {
	uri := conn["mongo"]
	if uri == "" {
		return nil, nil
	}
	if conn["db"] == "" {
		return nil, fmt.Errorf("sampling MongoDB needs the database: -db or $NOAM_MONGO_DB")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to MongoDB: %w", err)
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	coll := client.Database(conn["db"]).Collection(a.Collection)
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n)))
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", conn["db"], a.Collection, err)
	}
	defer cur.Close(ctx)
	s := &t.Sample{Source: "database " + conn["db"] + ", collection " + a.Collection, MaxValueBytes: caps.MaxValueBytes, LimitOf: "document"}
	acc := t.NewSampleSizes(a)
	fields := map[string]*model.Field{}
	for _, f := range a.Fields {
		fields[f.Key] = f
	}
	for cur.Next(ctx) {
		raw := cur.Current
		s.Blocks++
		elems, err := raw.Elements()
		if err != nil {
			return nil, fmt.Errorf("%s: a document that does not decode: %w", a.Collection, err)
		}
		key := raw.Lookup("_id").String()
		if str, ok := raw.Lookup("_id").StringValueOK(); ok {
			key = str // as bbolt's samples show it
		}
		var parts []t.PartitionSize
		root := 0
		for _, e := range elems {
			k := e.Key()
			f := fields[k]
			switch {
			case k == "_id", k == mongostore.SeqKey, k == mongostore.IncKey:
			case k == mongostore.LenKey:
				lens, _ := e.Value().Document().Elements()
				for _, l := range lens {
					acc.Entry(l.Key(), len(l))
				}
			case f == nil:
				acc.Entry(k, len(e)) // a field of no entry (removed)
			case f.Partition:
				vals, _ := e.Value().Array().Values()
				ps := t.PartitionSize{Key: key, Field: k, Elements: len(vals), Bytes: len(e)}
				for _, v := range vals {
					acc.Entry(k+"[]", len(v.Value))
				}
				parts = append(parts, ps)
			case f.IsVersion || a.Strategy == model.ETF:
				acc.Entry(k, len(e))
			default:
				root += len(e)
			}
		}
		if a.Strategy == model.EAO {
			acc.Entry("", root)
		}
		acc.Block(key, len(raw), parts)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", conn["db"], a.Collection, err)
	}
	acc.Fill(s)
	return s, nil
}
