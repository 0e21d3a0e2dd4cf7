package mongostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
)

// Schema and layout evolution (runtime/evolve.go, README "Changing a
// model") on MongoDB.
//
// The schema record of a collection is the document
//
//	{_id: <collection>, rec: <binary>}
//
// of the collection SchemaCollection, changed by one conditional command:
// an insert when there is none (a duplicate key is runtime.ErrConflict) or
// an updateOne whose filter is the record as read.
//
// A document reads the same under ETF and EAO (the root entry's fields are
// top-level fields of the document either way), so a change of strategy
// leaves nothing to migrate. A partitioned field is the same array as a
// whole slice field, plus its count in _len: a block written while the
// field was whole has no count (an Append counts its elements first, in a
// conditional write of its own, see countElems), and a write of a whole
// slice field removes the count the partitioned layout kept (see
// Store.unsetLens), so that the document never holds a count that
// disagrees with its array. MigrateBlocks adds and removes those counts.

// SchemaCollection holds the schema records of the database's
// collections, one document per collection.
const SchemaCollection = "_noam_schema"

// schemaDoc is a schema record document.
type schemaDoc struct {
	ID  string      `bson:"_id"`
	Rec bson.Binary `bson:"rec"`
	// Lookups is the collection's lookup mapping (mapping.go), "" when
	// none is recorded yet (a record written before there was one).
	Lookups string `bson:"lookups,omitempty"`
}

func (s *Store[T, K]) schema() *mongo.Collection {
	return s.coll.Database().Collection(SchemaCollection)
}

// LoadSchema reads the collection's schema record with one findOne; nil
// when there is none. The store follows the lookup mapping recorded
// beside it (mapping.go).
func (s *Store[T, K]) LoadSchema(ctx context.Context) ([]byte, error) {
	return s.loadSchema(ctx, "LoadSchema")
}

func (s *Store[T, K]) loadSchema(ctx context.Context, op string) ([]byte, error) {
	var doc schemaDoc
	runtime.RoundTrip(ctx)
	err := s.schema().FindOne(ctx, ByID(s.coll.Name())).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, runtime.FailAt(op, s.d.Aggregate, nil, "(schema record of collection "+s.coll.Name()+")", nil, err)
	}
	if err := s.follow(op, doc.Lookups); err != nil {
		return nil, err
	}
	s.settled.Store(true)
	if doc.Rec.Data == nil {
		return []byte{}, nil
	}
	return doc.Rec.Data, nil
}

// SaveSchema stores rec as the collection's schema record if the stored
// one is still old: an insert when old is nil, else an updateOne whose
// filter holds old. Either fails with runtime.ErrConflict when the record
// is not old any more. Once the store's lookup mapping is decided, it is
// recorded with the record, on condition that the document records none
// or the same (else ErrConflict, and the LoadSchema that follows fails
// with ErrMappingConflict).
func (s *Store[T, K]) SaveSchema(ctx context.Context, old, rec []byte) error {
	const op = "SaveSchema"
	coll := s.coll.Name()
	mapping, mapped := s.Mapping()
	if !mapped {
		mapping = ""
	}
	if old == nil {
		runtime.RoundTrip(ctx)
		_, err := s.schema().InsertOne(ctx, schemaDoc{ID: coll, Rec: bson.Binary{Data: rec}, Lookups: mapping})
		switch {
		case mongo.IsDuplicateKeyError(err):
			return runtime.FailAt(op, s.d.Aggregate, nil, "(the schema record of collection "+coll+" was written meanwhile)", runtime.ErrConflict, err)
		case err != nil:
			return runtime.Fail(op, s.d.Aggregate, nil, nil, err)
		}
		s.settled.Store(true) // the record holds this store's mapping
		return nil
	}
	filter := bson.D{{Key: "_id", Value: coll}, {Key: "rec", Value: bson.Binary{Data: old}}}
	set := bson.D{{Key: "rec", Value: bson.Binary{Data: rec}}}
	if mapping != "" {
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: layout.Mapping, Value: bson.D{{Key: "$exists", Value: false}}}},
			bson.D{{Key: layout.Mapping, Value: mapping}},
		}})
		set = append(set, bson.E{Key: layout.Mapping, Value: mapping})
	}
	runtime.RoundTrip(ctx)
	res, err := s.schema().UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return runtime.Fail(op, s.d.Aggregate, nil, nil, err)
	}
	if res.MatchedCount == 0 {
		return runtime.FailAt(op, s.d.Aggregate, nil, "(the schema record of collection "+coll+" changed meanwhile)", runtime.ErrConflict, nil)
	}
	s.settled.Store(true)
	return nil
}

// DropLookup removes what the store kept for lookup l, which the
// repository no longer has (or has with other options): its native index
// (dropIndexes) and its index table (drop), whichever exists; a second
// call finds neither. A lookup the repository has under the same name
// keeps what Ensure made for it as it is now: its native index (Ensure
// replaced the earlier one), or its index table, emptied of the entries of
// the earlier options for the build that follows.
func (s *Store[T, K]) DropLookup(ctx context.Context, l runtime.LookupLayout) error {
	const op = "EnsureIndexes"
	table := TableName(s.coll.Name(), l.Name)
	if s.m().tables[l.Name] {
		runtime.RoundTrip(ctx)
		if _, err := Collection(s.coll.Database(), table).DeleteMany(ctx, bson.D{}); err != nil {
			return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(emptying the index table %s of lookup %s)", table, l), nil, err)
		}
		return nil
	}
	if s.Native(l.Name) {
		return nil
	}
	runtime.RoundTrip(ctx)
	err := s.coll.Indexes().DropOne(ctx, IndexName(l.Name))
	if err != nil && !isCode(err, codeIndexNotFound) && !isCode(err, codeNamespaceNotFound) {
		return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(dropping the index %s.%s of removed lookup %s)", s.coll.Name(), IndexName(l.Name), l), nil, err)
	}
	runtime.RoundTrip(ctx)
	if err := Collection(s.coll.Database(), table).Drop(ctx); err != nil {
		return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(dropping the index table %s of removed lookup %s)", table, l), nil, err)
	}
	return nil
}

// Server error codes.
const (
	codeNamespaceNotFound = 26
	codeIndexNotFound     = 27
)

// MigrateBlocks is runtime.MigrateBlocks over MongoDB's commands
// (migrator): one find reads up to n documents in _id order after the
// position; those whose partition counts (_len) are not the descriptor's
// are rewritten: a count added for each partitioned array that has none
// (the field was whole), a count removed for each field that is whole
// now. Each rewrite is one updateOne whose filter holds the counts and
// array lengths as read, so that a block changed meanwhile is read again
// (findOne). Documents read the same under ETF and EAO, and a block
// without a version field reads as version 0 (a Put of version 0
// replaces it): neither is rewritten.
func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	return runtime.MigrateBlocks(ctx, s.d.Aggregate, s.d.Keys, migrator[T, K]{s}, after, n, dryRun)
}

// migrator is runtime.BlockMigrator on MongoDB: a block is its document.
type migrator[T any, K comparable] struct{ s *Store[T, K] }

const migrateOp = "Migrate"

func (m migrator[T, K]) ScanBlocks(ctx context.Context, after *K, n int) ([]runtime.ScannedBlock[K, bson.Raw], bool, error) {
	s := m.s
	filter := bson.D{}
	if after != nil {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: *after}}}}
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n) + 1).SetBatchSize(oneBatch(n + 1))
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, false, runtime.Fail(migrateOp, s.d.Aggregate, nil, nil, err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, false, runtime.Fail(migrateOp, s.d.Aggregate, nil, nil, err)
	}
	more := len(docs) > n
	docs = docs[:min(len(docs), n)]
	blocks := make([]runtime.ScannedBlock[K, bson.Raw], len(docs))
	for i, raw := range docs {
		blocks[i] = runtime.ScannedBlock[K, bson.Raw]{ID: s.idOf(raw), Raw: raw, Read: true}
	}
	return blocks, more, nil
}

func (m migrator[T, K]) ReadBlock(ctx context.Context, id K, _ int) (bson.Raw, bool, error) {
	runtime.RoundTrip(ctx)
	raw, err := m.s.coll.FindOne(ctx, ByID(id)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, runtime.Fail(migrateOp, m.s.d.Aggregate, id, nil, err)
	}
	return raw, true, nil
}

func (m migrator[T, K]) StoredLayout(id K, raw bson.Raw) (string, error) {
	// A document that does not decode is reported whatever its counts
	// (as before the loop was shared: the other stores look at the
	// layout first).
	if _, err := m.s.decode(raw); err != nil {
		return "", runtime.Unreadable(migrateOp, m.s.d.Aggregate, id, err)
	}
	plan, err := m.s.planCounts(migrateOp, id, raw)
	return plan.from, err
}

func (m migrator[T, K]) RewriteBlock(ctx context.Context, id K, raw bson.Raw) error {
	plan, err := m.s.planCounts(migrateOp, id, raw)
	if err != nil {
		return err
	}
	runtime.RoundTrip(ctx)
	res, err := m.s.coll.UpdateOne(ctx, plan.filter, plan.update)
	if err != nil {
		return runtime.Fail(migrateOp, m.s.d.Aggregate, id, nil, err)
	}
	if res.MatchedCount != 1 {
		return runtime.ErrChangedSinceRead // changed or deleted since it was read
	}
	return nil
}

// countPlan is the rewrite of a document's partition counts: from
// describes what is not the descriptor's layout ("" for nothing), filter
// selects the document while it is as read, update sets the counts.
type countPlan struct {
	from           string
	filter, update bson.D
}

// planCounts compares the counts (_len) of document raw of block id with
// the descriptor's partitions. A document holds its fields the same under
// ETF and EAO: its shape (runtime.Desc.LayoutDiffs) is the repository's
// strategy, the fields counted in _len (partitioned) and the partitions
// held as arrays without a count (whole: in an entry of their own under
// ETF, in the root entry under EAO, as the other stores say).
func (s *Store[T, K]) planCounts(op string, id K, raw bson.Raw) (countPlan, error) {
	var plan countPlan
	lens, hasLens := raw.Lookup(LenKey).DocumentOK()
	counted := func(k string) (int64, bool) {
		if !hasLens {
			return 0, false
		}
		return lens.Lookup(k).AsInt64OK()
	}
	var miscounts []runtime.LayoutDiff
	want := bson.D{}
	plan.filter = ByID(id)
	for _, f := range s.d.Fields {
		if f.Kind != runtime.KindPartition {
			continue
		}
		v := raw.Lookup(f.Key)
		var n int
		switch v.Type {
		case 0, bson.TypeNull:
			// No elements (a field added to the model since).
			plan.filter = append(plan.filter, bson.E{Key: f.Key, Value: nil})
		case bson.TypeArray:
			vals, err := v.Array().Values()
			if err != nil {
				return plan, runtime.Unreadable(op, s.d.Aggregate, id, fmt.Errorf("%s: %w", f.Key, err))
			}
			n = len(vals)
			plan.filter = append(plan.filter, bson.E{Key: f.Key, Value: bson.D{{Key: "$size", Value: n}}})
		default:
			return plan, runtime.LayoutMismatch(op, s.d.Aggregate, id, f.Key, "as a "+v.Type.String(), "partitioned (an array)")
		}
		got, ok := counted(f.Key)
		switch {
		case ok && got != int64(n):
			miscounts = append(miscounts, runtime.LayoutDiff{Change: runtime.Miscounted, Entry: f.Key, Count: int(got), Elems: n})
		case !ok && v.Type != bson.TypeArray:
			continue // no elements, no count: an Append counts them
		}
		want = append(want, bson.E{Key: f.Key, Value: n})
	}
	if hasLens {
		plan.filter = append(plan.filter, bson.E{Key: LenKey, Value: lens})
	} else {
		plan.filter = append(plan.filter, bson.E{Key: LenKey, Value: bson.D{{Key: "$exists", Value: false}}})
	}
	whole := func(k string) bool { // a partition's array without a count
		_, ok := counted(k)
		return !ok && s.d.Field(k).Kind == runtime.KindPartition && raw.Lookup(k).Type == bson.TypeArray
	}
	ds := append(s.d.LayoutDiffs(runtime.StoredShape{Root: s.d.EAO, Member: whole, Entry: func(k string) runtime.Stored {
		if _, ok := counted(k); ok {
			return runtime.EntrySplit
		}
		if !s.d.EAO && whole(k) {
			return runtime.EntryWhole
		}
		return runtime.NoEntry
	}}), miscounts...)
	// A versioned aggregate's document written before the model had a
	// version gets version 0 (what it reads as), so that it holds every
	// entry of the layout as the other stores' rewritten blocks do.
	noVersion := s.d.Version != nil && raw.Lookup(s.d.Version.Key).Type == 0
	if len(ds) == 0 && !noVersion {
		return plan, nil
	}
	plan.from = runtime.DescribeDiffs(ds)
	set, unset := bson.D{}, bson.D{}
	if len(ds) > 0 {
		if len(want) == 0 {
			unset = append(unset, bson.E{Key: LenKey, Value: ""})
		} else {
			set = append(set, bson.E{Key: LenKey, Value: want})
		}
	}
	if noVersion {
		if plan.from != "" {
			plan.from += ", "
		}
		plan.from += "no version entry " + s.d.Version.Key
		plan.filter = append(plan.filter, bson.E{Key: s.d.Version.Key, Value: bson.D{{Key: "$exists", Value: false}}})
		set = append(set, bson.E{Key: s.d.Version.Key, Value: int64(0)})
	}
	if len(set) > 0 {
		plan.update = append(plan.update, bson.E{Key: "$set", Value: set})
	}
	if len(unset) > 0 {
		plan.update = append(plan.update, bson.E{Key: "$unset", Value: unset})
	}
	return plan, nil
}

// countElems gives partitioned array field of block id its count when the
// document has none (the block was written while the field was whole, or
// before it existed): one updateOne {_id, _len.<field>: {$exists: false},
// <field>: {$size: n}} that sets it to the array's length n, read first.
// Appends call it when their conditional write finds no count, so that
// the index they return is the element's. A field that is not an array is
// runtime.ErrLayout.
func countElems(ctx context.Context, coll *mongo.Collection, op, agg string, id any, field string) error {
	path := LenKey + "." + field
	for range runtime.MaxAttempts {
		runtime.RoundTrip(ctx)
		raw, err := coll.FindOne(ctx, ByID(id), options.FindOne().SetProjection(bson.D{{Key: path, Value: 1}, {Key: field, Value: 1}})).Raw()
		if err != nil {
			return Err(op, agg, id, err)
		}
		if _, ok := raw.Lookup(LenKey, field).AsInt64OK(); ok {
			return nil
		}
		n := 0
		var cond any
		switch v := raw.Lookup(field); v.Type {
		case 0, bson.TypeNull:
			cond = nil
		case bson.TypeArray:
			vals, err := v.Array().Values()
			if err != nil {
				return runtime.Unreadable(op, agg, id, fmt.Errorf("%s: %w", field, err))
			}
			n = len(vals)
			cond = bson.D{{Key: "$size", Value: n}}
		default:
			return runtime.LayoutMismatch(op, agg, id, field, "as a "+v.Type.String(), "partitioned (an array)")
		}
		filter := bson.D{{Key: "_id", Value: id}, {Key: path, Value: bson.D{{Key: "$exists", Value: false}}}, {Key: field, Value: cond}}
		runtime.RoundTrip(ctx)
		res, err := coll.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: path, Value: n}}}})
		if err != nil {
			return Err(op, agg, id, err)
		}
		if res.MatchedCount == 1 {
			return nil
		}
	}
	return runtime.Contended(op, agg, id, field)
}

// counted reports whether a write of the whole value of entry f
// removes the count (_len.<key>) a partitioned layout may have kept of
// field key: key is one of f's slice fields (f itself, or a field of the
// root entry).
func (s *Store[T, K]) counted(f *runtime.Field[T], key string) bool {
	switch f.Kind {
	case runtime.KindField:
		return f.Key == key
	case runtime.KindRoot:
		return slices.Contains(f.Fields, key)
	}
	return false
}

// unsetLens lists the counts the changes of u remove, once each: those of
// the slice fields written whole (counted).
func (s *Store[T, K]) unsetLens(u runtime.Update[T]) []string {
	var out []string
	for _, key := range s.sliceKeys {
		for _, c := range u.Changes {
			if !c.Elem && s.counted(c.Field, key) {
				out = append(out, key)
				break
			}
		}
	}
	return out
}

// sameIndex reports whether the index described by spec (an entry of
// listIndexes) is the one m makes: the same keys in the same order, the
// same uniqueness and a partial filter exactly when m has one.
func sameIndex(spec bson.Raw, m mongo.IndexModel) bool {
	keys, ok := spec.Lookup("key").DocumentOK()
	if !ok {
		return false
	}
	elems, err := keys.Elements()
	want := m.Keys.(bson.D)
	if err != nil || len(elems) != len(want) {
		return false
	}
	for i, e := range elems {
		dir, ok := e.Value().AsInt64OK()
		if !ok || e.Key() != want[i].Key || dir != 1 {
			return false
		}
	}
	unique, _ := spec.Lookup("unique").BooleanOK()
	_, partial := spec.Lookup("partialFilterExpression").DocumentOK()
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		_ = set(&o)
	}
	return unique == (o.Unique != nil && *o.Unique) && partial == (o.PartialFilterExpression != nil)
}

// indexSpecs lists the collection's indexes by name (none when there is
// no collection yet).
func (s *Store[T, K]) indexSpecs(ctx context.Context) (map[string]bson.Raw, error) {
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Indexes().List(ctx)
	if isCode(err, codeNamespaceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make(map[string]bson.Raw, len(docs))
	for _, d := range docs {
		if name, ok := d.Lookup("name").StringValueOK(); ok {
			out[name] = d
		}
	}
	return out, nil
}

// nativeDuplicates explains why the unique index of native lookup n
// cannot be built: the values more than one document holds, with their
// holders (runtime.ErrDuplicate, as the build of an index table reports
// them); nil when it finds none. It reads the lookup's fields of every
// document once, in _id order, and keeps the values seen in memory.
func (s *Store[T, K]) nativeDuplicates(ctx context.Context, n nativeLookup[T]) error {
	l := n.l
	proj := bson.D{{Key: "_id", Value: 1}}
	for _, f := range l.Fields {
		proj = append(proj, bson.E{Key: f, Value: 1})
	}
	runtime.RoundTrip(ctx)
	cur, err := s.coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetProjection(proj))
	if err != nil {
		return runtime.Fail("EnsureIndexes", s.d.Aggregate, nil, nil, err)
	}
	defer cur.Close(ctx)
	first := map[string][]byte{}
	var rep runtime.RepairReport
	name := s.coll.Name() + "." + l.Name
	for cur.Next(ctx) {
		t, err := s.decode(cur.Current)
		if err != nil {
			continue // an unreadable block: its values are not known
		}
		vals := l.Keys(t)
		if s.noPartial {
			vals = l.Values(t) // the index holds zero values too
		}
		blk := s.d.Keys.Bytes(*s.d.ID(t))
		for _, v := range vals {
			if f, ok := first[string(v)]; ok {
				rep.AddConflict(name, v, f, blk)
				continue
			}
			first[string(v)] = blk
		}
	}
	if err := cur.Err(); err != nil {
		return runtime.Fail("EnsureIndexes", s.d.Aggregate, nil, nil, err)
	}
	if len(rep.Conflicts) == 0 {
		return nil
	}
	return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(the blocks already hold these values of a unique lookup: "+strings.Join(rep.Conflicts, "; ")+
		"; change or delete all but one, then run EnsureIndexes again)", runtime.ErrDuplicate, nil)
}

// indexTables lists which of the index tables the lookups would have
// exist (one listCollections; none without lookups).
func (s *Store[T, K]) indexTables(ctx context.Context) (map[string]bool, error) {
	if len(s.d.Lookups) == 0 {
		return nil, nil
	}
	var names bson.A
	for _, l := range s.d.Lookups {
		names = append(names, TableName(s.coll.Name(), l.Name))
	}
	runtime.RoundTrip(ctx)
	got, err := s.coll.Database().ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: names}}}})
	if err != nil {
		return nil, runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(listing the index tables)", nil, err)
	}
	out := make(map[string]bool, len(got))
	for _, n := range got {
		out[n] = true
	}
	return out, nil
}

// remap follows the lookups moved between an index table and a native
// index (noam:"lookup,table" added or removed, or the options IndexTables
// and UniqueTables, which the schema record does not show), given the
// index tables that existed before Ensure (had): the index table of a
// lookup on a native index now is dropped (were the lookup moved back, its
// entries would be stale), and a lookup whose index table Ensure has just
// created while the schema record has it complete is marked building in
// the record, so that EnsureIndexes fills the table from the blocks before
// its reads are trusted. A native index needs nothing: the server builds
// it from the documents when it is created.
func (s *Store[T, K]) remap(ctx context.Context, had map[string]bool) error {
	var fresh []string
	for _, l := range s.d.Lookups {
		table := TableName(s.coll.Name(), l.Name)
		switch {
		case s.m().tables[l.Name] && !had[table]:
			fresh = append(fresh, l.Name)
		case !s.m().tables[l.Name] && had[table]:
			runtime.RoundTrip(ctx)
			if err := Collection(s.coll.Database(), table).Drop(ctx); err != nil {
				return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(dropping the index table "+table+" of a lookup on a native index now)", nil, err)
			}
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	return runtime.UpdateSchema(ctx, s, "EnsureIndexes", s.d.Aggregate, func(rec *runtime.SchemaRecord) bool {
		// (no record: EnsureIndexes builds every lookup over existing
		// blocks)
		changed := false
		for i, lk := range rec.Layout.Lookups {
			if slices.Contains(fresh, lk.Name) && !lk.Building {
				rec.Layout.Lookups[i].Building, rec.Layout.Lookups[i].Resume = true, nil
				changed = true
			}
		}
		return changed
	})
}
