package bolt

// The bbolt part of `noamgen explain`: the physical layout of
// runtime/boltstore (see its package documentation), what each method
// does there, and sampling of a real database file.

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
	t "github.com/noamgen/noamgen/templates"
)

func init() {
	t.RegisterExplain("bolt", t.Explainer{
		Title:  "bbolt",
		Layout: layout,
		Cost:   cost,
		Conn:   []t.ConnSetting{{Name: "bolt", Env: "NOAM_BOLT_FILE", Usage: "bbolt database `file` to sample (opened read-only)"}},
		Sample: sample,
	})
}

// caps is what the adapter declares (runtime.Caps); Caps reads no field.
var caps = (*boltstore.Store[struct{}, string])(nil).Caps()

// exampleElems is how many elements the example block's partitions hold.
const exampleElems = 2

// blockKey renders the example block key as path steps: "2345" or "2345/3".
func blockKey(a *model.Aggregate) string { return t.ExampleKeyText(a) }

// entryPath turns an entry in the paper's notation into the readable
// bbolt key: "ε" -> /Game/2345/-, "rounds[3]" -> /Game/2345/-/rounds/3.
func entryPath(a *model.Aggregate, entry string) string {
	prefix := "/" + a.Collection + "/" + blockKey(a) + "/-"
	if entry == "ε" || entry == "" {
		return prefix
	}
	if name, idx, ok := strings.Cut(entry, "["); ok {
		return prefix + "/" + name + "/" + strings.TrimSuffix(idx, "]")
	}
	return prefix + "/" + entry
}

// lookupKey is the readable key shape of an index entry of l.
func lookupKey(a *model.Aggregate, l *model.Lookup) (key, value string) {
	var parts []string
	for _, p := range l.Parts {
		parts = append(parts, "<"+p.Path+">")
	}
	if l.Unique {
		return "/" + strings.Join(parts, "/"), blockKey(a)
	}
	return "/" + strings.Join(parts, "/") + "/" + blockKey(a), "(empty)"
}

func layout(a *model.Aggregate) t.Physical {
	p := t.Physical{
		Summary: fmt.Sprintf("Bucket %q holds one key-value pair per entry (NoAM Fig. 4 and 9): the key is the block key (major key), the separator 0x01 (shown as -) and the entry key (minor key), each step encoded with the order-preserving key codec, so that a block is one contiguous key range that starts with its marker. Values are BSON values (runtime/bsonval).", a.Collection),
	}
	marker := "the block marker (empty value)"
	if a.Strategy == model.EAO {
		marker = "the block marker, holding the root entry ε"
	}
	p.Containers = append(p.Containers, t.Container{
		Kind: "bucket", Name: a.Collection, Role: "blocks",
		Key:     "block key ‖ 0x01 ‖ entry key [‖ element index]",
		Value:   "BSON value of the entry; " + marker,
		Example: entryPath(a, firstEntry(a)),
	})
	for _, l := range a.Lookups {
		k, v := lookupKey(a, l)
		val := "empty"
		shape := "lookup value ‖ block key"
		if l.Unique {
			val = "block key"
			shape = "lookup value"
		}
		p.Containers = append(p.Containers, t.Container{
			Kind: "bucket", Name: boltstore.IndexBucket(a.Collection, l.Name), Role: "index table of lookup " + l.Name,
			Key: shape, Value: val, Example: k + " -> " + v,
		})
	}
	if a.Counter {
		key := "/" + a.Collection
		shape := "collection name"
		if len(a.Scope()) > 0 {
			var scope []string
			for i, kv := range t.ExampleKey(a)[:len(a.Scope())] {
				scope = append(scope, fmt.Sprint(kv.Value))
				_ = i
			}
			key += "/" + strings.Join(scope, "/")
			shape += " ‖ scope (" + scopeNames(a) + ")"
		}
		p.Containers = append(p.Containers, t.Container{
			Kind: "bucket", Name: boltstore.CountersBucket, Role: "counters",
			Key: shape, Value: "last number allocated or used (int64)", Example: key + " -> <n>",
		})
	}
	// The example block, key by key, in key order.
	if a.Strategy == model.EAO {
		var fs []string
		for _, f := range a.Root() {
			fs = append(fs, f.Key)
		}
		p.Example = append(p.Example, t.Stored{Key: entryPath(a, "ε"), Entry: "ε", Value: "BSON document {" + strings.Join(fs, ", ") + "}"})
	} else {
		p.Example = append(p.Example, t.Stored{Key: entryPath(a, "ε"), Entry: "", Value: "(empty: the block marker)"})
	}
	for _, e := range a.Entries() {
		switch {
		case e.Key == "":
		case e.Partition:
			f := e.Fields[0]
			p.Example = append(p.Example, t.Stored{Key: entryPath(a, f.Key), Entry: f.Key, Value: fmt.Sprintf("int64 %d (the element count)", exampleElems)})
			for i := range exampleElems {
				k := fmt.Sprintf("%s[%d]", f.Key, i)
				p.Example = append(p.Example, t.Stored{Key: entryPath(a, k), Entry: k, Value: "BSON " + t.TypeText(a, f.Elem)})
			}
		case e.Version:
			p.Example = append(p.Example, t.Stored{Key: entryPath(a, e.Key), Entry: e.Key, Value: "int64 (the version)"})
		default:
			p.Example = append(p.Example, t.Stored{Key: entryPath(a, e.Key), Entry: e.Key, Value: "BSON " + t.TypeText(a, e.Fields[0].Type)})
		}
	}
	// Keys sort by field name inside a block (the codec orders strings
	// bytewise), elements by index.
	sort.SliceStable(p.Example[1:], func(i, j int) bool {
		return stepsLess(p.Example[1+i].Entry, p.Example[1+j].Entry)
	})
	p.Notes = append(p.Notes, "Every repository method is one bbolt transaction: a write changes the block, its index entries and its counter together or not at all.")
	if len(a.Partitions()) > 0 {
		p.Notes = append(p.Notes, "Appending an element writes two keys (the element and the count) plus the version, whatever the partition's size.")
	}
	p.Notes = append(p.Notes, "A key (block marker, entry, index entry, counter) is at most 32768 bytes (runtime.Caps.MaxKeyBytes), a value at most 2147483646 (MaxValueBytes): a larger write fails with runtime.ErrTooLarge and its transaction changes nothing. Large values cost page writes.")
	return p
}

func scopeNames(a *model.Aggregate) string {
	var names []string
	for _, p := range a.Scope() {
		names = append(names, p.Key)
	}
	return strings.Join(names, ", ")
}

func firstEntry(a *model.Aggregate) string {
	for _, f := range a.Partitions() {
		return f.Key + "[3]"
	}
	for _, e := range a.Entries() {
		if e.Key != "" {
			return e.Key
		}
	}
	return "ε"
}

var elemRE = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// stepsLess orders entries as the key codec does: by name, then the count
// (no index) before the elements, by index.
func stepsLess(a, b string) bool {
	na, ia := splitElem(a)
	nb, ib := splitElem(b)
	if na != nb {
		return na < nb
	}
	return ia < ib
}

func splitElem(e string) (string, int) {
	m := elemRE.FindStringSubmatch(e)
	if m == nil {
		return e, -1
	}
	var i int
	fmt.Sscan(m[2], &i)
	return m[1], i
}

func cost(a *model.Aggregate, m t.Method, acc t.Access) t.Cost {
	c := t.Cost{RoundTrips: "0 (embedded)", Atomic: "all of it: one bbolt transaction"}
	tx := "read transaction"
	if len(acc.Writes) > 0 || len(acc.Deletes) > 0 || len(acc.WritesIndex) > 0 || m.Kind == t.MEnsure {
		tx = "write transaction"
	}
	ops := []string{}
	keys := func(verb string, entries []string) {
		for _, e := range entries {
			ops = append(ops, verb+" "+entryPath(a, e))
		}
	}
	switch acc.Blocks {
	case "page":
		c.Atomic = "the page is read in one transaction (a consistent snapshot)"
	case "all":
		c.Atomic = fmt.Sprintf("each page of %d blocks is one read transaction", runtime.DefaultPageLimit)
		tx = "read transaction per page"
		if m.Kind == t.MRepair {
			c.Atomic = "all of it: one bbolt transaction"
			tx = "write transaction"
		}
	case "many":
		c.Atomic = "all keys are read in one transaction (a consistent snapshot)"
	}
	ops = append(ops, "1 "+tx)
	switch m.Kind {
	case t.MGet:
		ops = append(ops, "scan "+entryPath(a, "ε")+"… (the block's key range)")
	case t.MGetMany:
		ops = append(ops, "scan the key range of each block")
	case t.MList, t.MAll:
		ops = append(ops, "scan bucket "+a.Collection+" in key order from the cursor")
	case t.MListScope:
		ops = append(ops, "seek bucket "+a.Collection+" to the scope's key range (its blocks are contiguous, in number order) and scan from the cursor")
	case t.MListBy, t.MGetBy:
		b := boltstore.IndexBucket(a.Collection, m.Lookup.Name)
		if m.Kind == t.MGetBy {
			ops = append(ops, "get "+b+" (the value's entry)", "scan the block's key range")
		} else {
			ops = append(ops, "seek "+b+" to the query's key range", "scan the key range of each block found")
		}
	case t.MListElems:
		ops = append(ops, "get "+entryPath(a, m.Field.Key), "seek "+entryPath(a, m.Field.Key+"[i]")+" and read n elements")
	case t.MEnsure:
		ops = append(ops, "create the buckets "+strings.Join(buckets(a), ", ")+" if missing")
	case t.MRepair:
		ops = append(ops, "scan every block's indexed entries", "rewrite the entries of "+strings.Join(indexBuckets(a), ", "))
	default:
		switch m.Kind {
		case t.MDelete, t.MSet, t.MSetAt, t.MAppend, t.MUpdate:
			ops = append(ops, "get "+entryPath(a, "ε")+" (the marker: the block exists)")
		}
		if acc.Version && m.Kind != t.MCreate && m.Kind != t.MAppend && m.Kind != t.MSet && m.Kind != t.MSetAt {
			ops = append(ops, "get "+entryPath(a, a.Version.Key)+" (the version check)")
		}
		if acc.Counter {
			ops = append(ops, "get/put "+boltstore.CountersBucket+" /"+a.Collection+"… (allocate the key when it is 0)")
		}
		if len(acc.WritesIndex) > 0 {
			var reads []string
			for _, e := range acc.Reads {
				if a.Version == nil || e != a.Version.Key {
					reads = append(reads, e)
				}
			}
			if len(reads) > 0 && m.Kind != t.MCreate {
				keys("get", reads)
			}
		}
		marker := func() {
			if a.Strategy == model.ETF {
				ops = append(ops, "put "+entryPath(a, "ε")+" (the marker)")
			}
		}
		what := "put/delete %s: the entries of the values gained/lost"
		switch m.Kind {
		case t.MCreate:
			marker()
			keys("put", acc.Writes)
			what = "put %s: the entries of its values"
		case t.MDelete:
			ops = append(ops, "delete every key of the block's range")
			what = "delete %s: the entries of its values"
		case t.MPut:
			ops = append(ops, "delete every key of the block's range")
			marker()
			keys("put", acc.Writes)
		default:
			keys("put", acc.Writes)
		}
		for _, l := range acc.WritesIndex {
			ops = append(ops, fmt.Sprintf(what, boltstore.IndexBucket(a.Collection, l)))
		}
	}
	c.Ops = ops
	return c
}

func buckets(a *model.Aggregate) []string {
	out := []string{a.Collection}
	out = append(out, indexBuckets(a)...)
	if a.Counter {
		out = append(out, boltstore.CountersBucket)
	}
	return out
}

func indexBuckets(a *model.Aggregate) []string {
	var out []string
	for _, l := range a.Lookups {
		out = append(out, boltstore.IndexBucket(a.Collection, l.Name))
	}
	return out
}

// sample reads at most n blocks of a's bucket from the bbolt file
// conn["bolt"], opened read-only.
func sample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*t.Sample, error) {
	path := conn["bolt"]
	if path == "" {
		return nil, nil
	}
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening %s read-only: %w", path, err)
	}
	defer db.Close()
	s := &t.Sample{Source: path, MaxValueBytes: caps.MaxValueBytes, LimitOf: "value"}
	acc := t.NewSampleSizes(a)
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(a.Collection))
		if b == nil {
			return nil
		}
		var cur *blockSize
		cr := b.Cursor()
		for k, v := cr.First(); k != nil; k, v = cr.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			major, minor, ok := splitKey(k)
			if !ok {
				return fmt.Errorf("bucket %s: key %x is not a block entry", a.Collection, k)
			}
			if cur == nil || !bytes.Equal(cur.key, major) {
				if cur != nil {
					acc.Block(components(cur.key), cur.bytes, cur.partList())
				}
				if s.Blocks == n {
					cur = nil
					break
				}
				s.Blocks++
				cur = &blockSize{key: bytes.Clone(major), parts: map[string]*t.PartitionSize{}}
			}
			entry, err := entryClass(minor)
			if err != nil {
				return fmt.Errorf("bucket %s, block %s: %w", a.Collection, boltstore.FormatKey(major), err)
			}
			size := len(k) + len(v)
			cur.bytes += size
			acc.Entry(entry, size)
			if name, ok := strings.CutSuffix(entry, "[]"); ok {
				cur.part(name).Elements++
				cur.part(name).Bytes += size
			} else if acc.Partitioned(entry) {
				cur.part(entry).Bytes += size
			}
		}
		if cur != nil {
			acc.Block(components(cur.key), cur.bytes, cur.partList())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	acc.Fill(s)
	return s, nil
}

// ReadableKey renders a key of a collection's bucket the way explain shows
// keys: "/Game/2345/-/rounds/3" (collection, block key parts, "-" for the
// separator, entry key steps).
func ReadableKey(collection string, k []byte) string {
	major, minor, ok := splitKey(k)
	if !ok {
		return fmt.Sprintf("/%s/%x", collection, k)
	}
	out := "/" + collection + "/" + components(major) + "/-"
	if len(minor) > 0 {
		out += "/" + components(minor)
	}
	return out
}

// components renders encoded key components separated by slashes.
func components(b []byte) string {
	var parts []string
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		if s, err := r.String(); err == nil {
			parts = append(parts, s)
		} else if i, err := r.Int(); err == nil {
			parts = append(parts, fmt.Sprint(i))
		} else if u, err := r.Uint(); err == nil {
			parts = append(parts, fmt.Sprint(u))
		} else {
			parts = append(parts, fmt.Sprintf("%x", r.Rest()))
			break
		}
	}
	return strings.Join(parts, "/")
}

// splitKey splits a bucket key into the encoded block key and the entry key.
func splitKey(k []byte) (major, minor []byte, ok bool) {
	r := runtime.NewKeyReader(k)
	for !r.Done() {
		rest := r.Rest()
		if rest[0] == boltstore.Separator {
			n := len(k) - len(rest)
			return k[:n], rest[1:], n > 0
		}
		if _, err := r.String(); err == nil {
			continue
		}
		if _, err := r.Int(); err == nil {
			continue
		}
		if _, err := r.Uint(); err != nil {
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// entryClass names the entry class of an entry key: "" (the marker or
// root), "f", or "f[]" for an element.
func entryClass(minor []byte) (string, error) {
	if len(minor) == 0 {
		return "", nil
	}
	r := runtime.NewKeyReader(minor)
	name, err := r.String()
	if err != nil {
		return "", fmt.Errorf("entry key %x: %w", minor, err)
	}
	if r.Done() {
		return name, nil
	}
	if _, err := r.Int(); err != nil || !r.Done() {
		return "", fmt.Errorf("entry key %x: not a field or element key", minor)
	}
	return name + "[]", nil
}

type blockSize struct {
	key   []byte
	bytes int
	parts map[string]*t.PartitionSize
}

func (b *blockSize) partList() []t.PartitionSize {
	var out []t.PartitionSize
	for _, p := range b.parts {
		out = append(out, *p)
	}
	return out
}

func (b *blockSize) part(name string) *t.PartitionSize {
	p := b.parts[name]
	if p == nil {
		p = &t.PartitionSize{Key: components(b.key), Field: name}
		b.parts[name] = p
	}
	return p
}
