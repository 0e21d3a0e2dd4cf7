package mongostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/mongostore/layout"
)

// The lookup mapping. A lookup is on a native index of the collection or
// in an index table (see the package documentation); which unique lookups
// can be native depends on the server: MongoDB has the partial and
// per-element unique multikey indexes they need, FerretDB v1 has not. The
// mapping is decided once per collection, at its first EnsureIndexes:
// by the options UniqueTables or IndexTables when given, else by probing
// the server (probeMapping); an aggregate without unique lookups and
// without those options leaves it to the first EnsureIndexes that has one. It is recorded in the collection's schema
// record document (field "lookups", beside the record), and every
// repository over the collection follows the recorded mapping rather than
// its own options or probe: it reads it with the record (LoadSchema), at
// the latest before its first write. A repository whose options name
// another mapping than the recorded one fails with ErrMappingConflict.

// The mappings (layout.Mapping*).
const (
	MappingNative       = layout.MappingNative
	MappingUniqueTables = layout.MappingUniqueTables
	MappingIndexTables  = layout.MappingIndexTables
)

// ErrMappingConflict: the repository's options (UniqueTables, IndexTables,
// NoPartialIndexes) name another lookup mapping than the one recorded for
// the collection, or the record names one this build does not know.
// Writes and EnsureIndexes fail with it (in a *runtime.Error of kind
// runtime.ErrInvalid) rather than keep the lookups in two places.
var ErrMappingConflict = errors.New("the lookup mapping of the options is not the one recorded for the collection")

// lookupMap is where the lookups of a Store are kept under one mapping.
type lookupMap[T any, K comparable] struct {
	name   string
	x      *indexed[T, K]    // nil without index-table lookups
	native []nativeLookup[T] // lookups served by native indexes
	tables map[string]bool   // names of index-table lookups
}

// m is the current mapping.
func (s *Store[T, K]) m() *lookupMap[T, K] { return s.lm.Load() }

// Mapping returns the name of the lookup mapping the store follows
// (MappingNative, MappingUniqueTables, MappingIndexTables), and whether it
// is the collection's (recorded, or decided by EnsureIndexes) rather than
// the options' so far.
func (s *Store[T, K]) Mapping() (string, bool) { return s.m().name, s.mapped.Load() }

// explicit is the mapping the options name, "" for none (decided by the
// record or a probe).
func (c config) explicit() string {
	switch {
	case c.tables:
		return MappingIndexTables
	case c.uniqueTables:
		return MappingUniqueTables
	case c.noPartial:
		return MappingNative
	}
	return ""
}

// follow makes the store follow mapping name, recorded for the collection
// ("": none recorded, nothing changes). op names the operation in errors.
func (s *Store[T, K]) follow(op, name string) error {
	if name == "" {
		return nil
	}
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	cur := s.m().name
	switch {
	case name == cur:
	case s.mapped.Load() || s.cfg.explicit() != "" ||
		(name != MappingNative && name != MappingUniqueTables && name != MappingIndexTables):
		return s.mappingConflict(op, cur, name)
	default:
		s.lm.Store(s.mapLookups(name))
		s.ready.Store(false)
	}
	s.mapped.Store(true)
	s.recorded.Store(true)
	return nil
}

func (s *Store[T, K]) mappingConflict(op, mine, recorded string) error {
	return runtime.FailAt(op, s.d.Aggregate, nil, fmt.Sprintf("(collection %s keeps its lookups as %q, recorded at its first EnsureIndexes; this repository's options say %q: open it without UniqueTables, IndexTables or NoPartialIndexes to follow the record, or migrate the collection)", s.coll.Name(), recorded, mine), runtime.ErrInvalid, ErrMappingConflict)
}

// settle reads the collection's schema record before the store's first
// write or lookup read, so that the store follows the recorded mapping;
// once a record is found it reads it no more (the record's own fences
// then take over). An aggregate without lookups reads nothing: its writes
// are the same under every mapping.
func (s *Store[T, K]) settle(ctx context.Context, op string) error {
	if s.settled.Load() || len(s.d.Lookups) == 0 {
		// Without lookups every mapping keeps the blocks alike.
		return nil
	}
	if _, err := s.loadSchema(ctx, op); err != nil {
		return err
	}
	return nil
}

// decide fixes the mapping at EnsureIndexes when none is recorded: the
// options', else what the server supports (probeMapping); it records it
// in the schema record document when there is one (else the record's
// insert at the end of EnsureIndexes carries it).
func (s *Store[T, K]) decide(ctx context.Context) error {
	if s.recorded.Load() {
		return nil
	}
	if s.cfg.explicit() == "" && !slices.ContainsFunc(s.d.Lookups, func(l *runtime.Lookup[T]) bool { return l.Unique }) {
		// Nothing to decide yet: without unique lookups the mappings
		// the options leave open are the same.
		return nil
	}
	if err := s.decideMapping(ctx); err != nil {
		return err
	}
	name, _ := s.Mapping()
	runtime.RoundTrip(ctx)
	res, err := s.schema().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.coll.Name()}, {Key: layout.Mapping, Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: layout.Mapping, Value: name}}}})
	if err != nil {
		return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(recording the lookup mapping of collection "+s.coll.Name()+")", nil, err)
	}
	if res.MatchedCount == 1 {
		s.recorded.Store(true)
		return nil
	}
	// No record yet, or one that records a mapping meanwhile: follow it.
	_, err = s.loadSchema(ctx, "EnsureIndexes")
	return err
}

func (s *Store[T, K]) decideMapping(ctx context.Context) error {
	if s.mapped.Load() {
		return nil
	}
	name := s.cfg.explicit()
	if name == "" {
		var err error
		if name, err = s.probeMapping(ctx); err != nil {
			return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(probing the server's unique indexes)", nil, err)
		}
	}
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	if s.mapped.Load() {
		return nil
	}
	if name != s.m().name {
		s.lm.Store(s.mapLookups(name))
		s.ready.Store(false)
	}
	s.mapped.Store(true)
	return nil
}

// probeMapping finds out whether the server has what native unique
// lookups need, on a collection of its own that it drops after: a unique
// index with a partial filter (createIndexes), which refuses a second
// document sharing an element of an array with the first (two inserts).
// MappingNative if it does, else MappingUniqueTables. Four commands, at
// the first EnsureIndexes of a collection that has no recorded mapping
// and no option naming one.
func (s *Store[T, K]) probeMapping(ctx context.Context) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := s.coll.Database().Collection("_noam_probe_" + hex.EncodeToString(b[:]))
	defer func() {
		dctx, cancel := runtime.Detach(ctx)
		defer cancel()
		runtime.RoundTrip(ctx)
		_ = c.Drop(dctx)
	}()
	runtime.RoundTrip(ctx)
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}},
		Options: options.Index().SetUnique(true).SetPartialFilterExpression(bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: ""}}}})})
	switch {
	case err != nil && (notImplemented(err) || badValue(err) || isCode(err, 67)):
		return MappingUniqueTables, nil
	case err != nil:
		return "", err
	}
	runtime.RoundTrip(ctx)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.A{"a", "b"}}}); err != nil {
		return "", err
	}
	runtime.RoundTrip(ctx)
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: bson.A{"b", "c"}}})
	switch {
	case isDuplicate(err):
		return MappingNative, nil
	case err != nil:
		return "", err
	}
	return MappingUniqueTables, nil
}
