package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// This file is schema and layout evolution, written once for every store
// (issue 23): the layout a repository serves (Layout), the record of it
// that EnsureIndexes keeps in the store (SchemaRecord), the building of
// lookups added to a collection that already holds data, the gate that
// keeps reads of a lookup from answering before it is complete, and the
// migration of blocks written in an older layout. Stores provide the
// primitives (Store.LoadSchema, SaveSchema, DropLookup, MigrateBlocks).

// Layout is the physical layout a repository serves, as EnsureIndexes
// records it per collection.
type Layout struct {
	Collection string `json:"collection"`
	// Strategy is "etf" (one entry per top-level field) or "eao" (one root
	// entry).
	Strategy string `json:"strategy"`
	// Fields are the entry keys of the non-partitioned fields.
	Fields []string `json:"fields,omitempty"`
	// Partitions are the entry keys of the partitioned fields.
	Partitions []string `json:"partitions,omitempty"`
	// Version is the version entry's key, "" for none.
	Version string `json:"version,omitempty"`
	// Counter is set for enumerable (counted) block keys.
	Counter bool           `json:"counter,omitempty"`
	Lookups []LookupLayout `json:"lookups,omitempty"`
}

// LookupLayout is one lookup of a Layout, with the state of its index.
type LookupLayout struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
	Unique bool     `json:"unique,omitempty"`
	Table  bool     `json:"table,omitempty"`
	Zeros  bool     `json:"zeros,omitempty"`
	// Native is the store's own form of the lookup when it is not the
	// index table ("gsi": a DynamoDB global secondary index; see
	// Caps.LookupForms): a lookup that moves from one form to the other is
	// built anew.
	Native string `json:"native,omitempty"`
	// Building is set while the lookup's index is being built from the
	// blocks written before it existed: its reads fail with
	// ErrIndexBuilding until the build is complete.
	Building bool `json:"building,omitempty"`
	// Resume is the block position (the store's own bytes) the build has
	// reached: a build cut short resumes after it.
	Resume []byte `json:"resume,omitempty"`
}

// Same reports whether l and o index the same values the same way (their
// build state aside).
func (l LookupLayout) Same(o LookupLayout) bool {
	return l.Name == o.Name && slices.Equal(l.Fields, o.Fields) && l.Unique == o.Unique && l.Table == o.Table && l.Zeros == o.Zeros && l.Native == o.Native
}

func (l LookupLayout) String() string {
	s := l.Name + "(" + strings.Join(l.Fields, ", ") + ")"
	if l.Unique {
		s += " unique"
	}
	if l.Zeros {
		s += " zeros"
	}
	if l.Table {
		s += " table"
	}
	if l.Native != "" {
		s += " " + l.Native
	}
	return s
}

// SchemaRecord is what a store keeps per collection: the layout the last
// EnsureIndexes served and the earlier layouts blocks may still be written
// in (oldest first), until a complete Migrate clears them.
type SchemaRecord struct {
	Layout  Layout   `json:"layout"`
	History []Layout `json:"history,omitempty"`
	// Fence moves (one up) each time EnsureIndexes records another
	// layout: writes of a repository check it (runtime/fence.go).
	Fence int64 `json:"fence,omitempty"`
	// LeaseMS is the lease (WithLayoutLease) of the build that recorded
	// the layout, in milliseconds: repositories on stores without fenced
	// writes check the record at least this often.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

// maxHistory bounds SchemaRecord.History.
const maxHistory = 16

// LayoutOf is the layout descriptor d serves, every lookup ready.
func LayoutOf[T any, K comparable](d *Desc[T, K]) Layout {
	l := Layout{Collection: d.Collection, Strategy: "etf", Version: d.VersionKey(), Counter: d.Counter != nil}
	if d.EAO {
		l.Strategy = "eao"
	}
	for _, f := range d.Fields {
		if f.Kind == KindPartition {
			l.Partitions = append(l.Partitions, f.Key)
		} else {
			l.Fields = append(l.Fields, f.Key)
		}
	}
	for _, lk := range d.Lookups {
		l.Lookups = append(l.Lookups, LookupLayout{Name: lk.Name, Fields: slices.Clone(lk.Fields), Unique: lk.Unique, Table: lk.Table, Zeros: lk.IndexZero})
	}
	return l
}

// LayoutIn is the layout descriptor d serves on store s: LayoutOf, with
// the form s gives each lookup (Caps.LookupForms).
func LayoutIn[T any, K comparable](d *Desc[T, K], s Store[T, K]) Layout {
	l := LayoutOf(d)
	if forms := s.Caps().LookupForms; forms != nil {
		for i := range l.Lookups {
			l.Lookups[i].Native = forms[l.Lookups[i].Name]
		}
	}
	return l
}

// Lookup finds a lookup of the layout by name.
func (l Layout) Lookup(name string) (LookupLayout, bool) {
	for _, lk := range l.Lookups {
		if lk.Name == name {
			return lk, true
		}
	}
	return LookupLayout{}, false
}

// SameBlocks reports whether blocks written in layout l read the same in
// layout o: same strategy, partitions and version entry (fields may come
// and go: an absent entry reads as the zero value, an unknown one is
// left alone).
func (l Layout) SameBlocks(o Layout) bool {
	return l.Strategy == o.Strategy && slices.Equal(sorted(l.Partitions), sorted(o.Partitions)) && l.Version == o.Version
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Changes lists, one line each, what changed from layout l (the recorded
// one) to o (the repository's): what `noamgen explain` shows beside the two.
func (l Layout) Changes(o Layout) []string {
	var out []string
	if l.Strategy != o.Strategy {
		out = append(out, fmt.Sprintf("strategy %s -> %s", l.Strategy, o.Strategy))
	}
	for _, p := range o.Partitions {
		if !slices.Contains(l.Partitions, p) {
			out = append(out, fmt.Sprintf("%s: whole -> partitioned", p))
		}
	}
	for _, p := range l.Partitions {
		if !slices.Contains(o.Partitions, p) {
			out = append(out, fmt.Sprintf("%s: partitioned -> whole", p))
		}
	}
	if l.Version != o.Version {
		out = append(out, fmt.Sprintf("version entry %q -> %q", l.Version, o.Version))
	}
	for _, f := range o.Fields {
		if !slices.Contains(l.Fields, f) && !slices.Contains(l.Partitions, f) {
			out = append(out, "field "+f+" added")
		}
	}
	for _, f := range l.Fields {
		if !slices.Contains(o.Fields, f) && !slices.Contains(o.Partitions, f) {
			out = append(out, "field "+f+" removed")
		}
	}
	for _, lk := range o.Lookups {
		old, ok := l.Lookup(lk.Name)
		switch {
		case !ok:
			out = append(out, "lookup "+lk.String()+" added")
		case !old.Same(lk):
			out = append(out, "lookup "+old.String()+" -> "+lk.String())
		}
	}
	for _, lk := range l.Lookups {
		if _, ok := o.Lookup(lk.Name); !ok {
			out = append(out, "lookup "+lk.String()+" removed")
		}
	}
	return out
}

// DecodeSchema decodes a stored schema record (nil: none).
func DecodeSchema(raw []byte) (*SchemaRecord, error) {
	if raw == nil {
		return nil, nil
	}
	var rec SchemaRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("schema record: %w", err)
	}
	return &rec, nil
}

func encodeSchema(rec *SchemaRecord) []byte {
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err) // strings, bools and bytes only
	}
	return b
}

// LayoutMismatch is the error of an operation on block id that found entry
// stored in another layout than the repository's (stored and want say
// which, e.g. "etf" and "eao", "whole" and "partitioned"): it reads
// nothing it cannot read right and writes nothing a layout could not read.
func LayoutMismatch(op, agg string, id any, entry, stored, want string) error {
	return FailAt(op, agg, id, fmt.Sprintf("entry %s is stored %s, this repository's layout has it %s (Migrate rewrites old blocks)", entry, stored, want), ErrLayout, nil)
}

// BlockMigration is what Migrate did (or, in a dry run, would do) to one
// block.
type BlockMigration struct {
	// ID is the block key.
	ID any
	// From describes the layout the block was found in ("etf", "eao",
	// "rounds whole"); "" when it was current.
	From string
	// Migrated: the block was rewritten (or would be, in a dry run).
	Migrated bool
	// Err is why the block could not be migrated.
	Err error
}

// MigrateOptions tune Migrate.
type MigrateOptions struct {
	// DryRun counts what would change and writes nothing.
	DryRun bool
	// Batch is the number of blocks read and rewritten per step (default 64).
	Batch int
	// Resume, from a MigrateReport.Resume, starts after the last block an
	// earlier run reached.
	Resume []byte
	// Progress, when set, is called after each batch.
	Progress func(MigrateReport)
}

// MigrateReport says what Migrate did.
type MigrateReport struct {
	Scanned  int // blocks read
	Migrated int // rewritten into the current layout (dry run: would be)
	Current  int // already in the current layout
	// Failed lists the blocks that could not be migrated, with why.
	Failed []BlockMigration
	// Resume is the position reached: MigrateOptions.Resume continues
	// from it.
	Resume []byte
}

// migrate rewrites every block of the collection that is stored in an
// older layout into the repository's, a batch at a time, each block in one
// conditional write (a block changed meanwhile is left to the writer, who
// wrote it in the current layout). It is idempotent and safe while the
// application writes. A complete run without failures clears the layout
// history of the collection's schema record.
func (r Repo[T, K]) migrate(ctx context.Context, o MigrateOptions) (MigrateReport, error) {
	rep := MigrateReport{Resume: o.Resume}
	ctx, err := r.fence(ctx, "Migrate", false)
	if err != nil {
		return rep, err
	}
	n := o.Batch
	if n <= 0 {
		n = 64
	}
	after := o.Resume
	for {
		res, last, more, err := r.S.MigrateBlocks(ctx, after, n, o.DryRun)
		for _, b := range res {
			rep.Scanned++
			switch {
			case b.Err != nil:
				rep.Failed = append(rep.Failed, b)
			case b.Migrated:
				rep.Migrated++
			default:
				rep.Current++
			}
		}
		if last != nil {
			after, rep.Resume = last, last
		}
		if err != nil {
			return rep, r.ctxErr(ctx, "Migrate", err)
		}
		if o.Progress != nil {
			o.Progress(rep)
		}
		if !more {
			break
		}
	}
	if o.DryRun || len(rep.Failed) > 0 || o.Resume != nil {
		return rep, nil
	}
	err = UpdateSchema(ctx, r.S, "Migrate", r.D.Aggregate, func(rec *SchemaRecord) bool {
		if len(rec.History) == 0 {
			return false
		}
		rec.History = nil
		return true
	})
	return rep, r.ctxErr(ctx, "Migrate", err)
}

// BuildProgress is what EnsureIndexes reports while it builds lookups over
// existing blocks (WithBuildProgress).
type BuildProgress struct {
	Collection string
	Lookups    []string // the lookups being built
	Blocks     int      // blocks scanned so far
	Done       bool
	// Unreadable lists the blocks the build could not decode (each an
	// *Error of kind ErrUnreadable naming the block), which the lookups
	// built do not index: set in the last report (Done).
	Unreadable []*Error
}

type buildProgressKey struct{}

// WithBuildProgress returns a context under which EnsureIndexes calls fn
// as it builds lookups added to a collection that holds data.
func WithBuildProgress(ctx context.Context, fn func(BuildProgress)) context.Context {
	return context.WithValue(ctx, buildProgressKey{}, fn)
}

// RepairOptions are what a lookup build passes to the index engine's
// Repair through the context (RepairOptionsOf): where to start the scan of
// blocks, and a call after each page of blocks.
type RepairOptions struct {
	// After is the block position to start after (nil: the first block).
	After []byte
	// OnPage is called after each page of blocks with the position of its
	// last block and the number of blocks in it.
	OnPage func(last []byte, blocks int) error
	// Lookups, when set, makes Repair the build of these lookups (named
	// as the model names them, "email", or as the store does,
	// "players.email"): it only adds the index entries the blocks hold
	// (its first pass), and leaves the other lookups and the entries no
	// block holds alone, so that it is safe while the application writes.
	Lookups []string
}

type repairOptionsKey struct{}

// WithRepairOptions returns a context carrying o to Store.Repair.
func WithRepairOptions(ctx context.Context, o RepairOptions) context.Context {
	return context.WithValue(ctx, repairOptionsKey{}, o)
}

// RepairOptionsOf returns the options ctx carries (zero: a whole Repair).
func RepairOptionsOf(ctx context.Context) RepairOptions {
	o, _ := ctx.Value(repairOptionsKey{}).(RepairOptions)
	return o
}

// schemaState is a repository's view of its collection's schema record:
// ready once the record says every lookup of the repository is complete
// (it never goes back: see README "Changing a model").
type schemaState struct {
	ready atomic.Bool
	fence fenceState
}

func newSchemaState(lookups int) *schemaState {
	s := &schemaState{}
	s.ready.Store(lookups == 0)
	return s
}

// gate returns nil when lookup l (nil: every unique lookup, for a write)
// can be trusted: the schema record lists it with the same options,
// complete. Writes call it with nil: Create, Put and their batches always,
// entry-level writes when they write a field some lookup reads; on an
// aggregate with a unique lookup they are refused until EnsureIndexes has
// recorded the layout, whatever values they hold (a value they do not
// claim included: the rule is the aggregate's, as README "Start-up"
// states it). Otherwise it fails with ErrNotReady (no record,
// or the record does not have the lookup: EnsureIndexes has not run with
// this layout) or ErrIndexBuilding. Once every lookup is complete the
// answer is cached: no request is sent again.
func (r Repo[T, K]) gate(ctx context.Context, op string, l *Lookup[T]) error {
	if r.st == nil || r.st.ready.Load() {
		return nil
	}
	if l == nil && !slices.ContainsFunc(r.D.Lookups, func(l *Lookup[T]) bool { return l.Unique }) {
		return nil
	}
	raw, err := r.S.LoadSchema(ctx)
	if err != nil {
		return r.ctxErr(ctx, op, err)
	}
	rec, err := DecodeSchema(raw)
	if err != nil {
		return Fail(op, r.D.Aggregate, nil, ErrUnreadable, err)
	}
	cur := LayoutIn(r.D, r.S)
	// A write is refused whatever values it holds (zero values too): the
	// error says so, since the rule is about the aggregate, not the value.
	rule := ""
	if l == nil {
		rule = "; until EnsureIndexes records it, an aggregate with a unique lookup takes no Create, Put or write of a looked-up field, whatever values it holds"
	}
	if rec == nil {
		return FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("(collection %s has no recorded layout: its lookups are not known to be complete%s)", cur.Collection, rule), ErrNotReady, nil)
	}
	all := true
	for _, want := range cur.Lookups {
		have, ok := rec.Layout.Lookup(want.Name)
		var bad error
		switch {
		case !ok || !have.Same(want):
			bad = FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("(lookup %s is not in the layout recorded for collection %s%s)", want, cur.Collection, rule), ErrNotReady, nil)
		case have.Building:
			bad = FailAt(op, r.D.Aggregate, nil, fmt.Sprintf("(lookup %s of collection %s)", want, cur.Collection), ErrIndexBuilding, nil)
		}
		if bad == nil {
			continue
		}
		all = false
		if l == nil && want.Unique || l != nil && l.Name == want.Name {
			return bad
		}
	}
	if all {
		r.st.ready.Store(true)
	}
	return nil
}

// SchemaKeeper is the part of a Store that keeps the schema record.
type SchemaKeeper interface {
	LoadSchema(ctx context.Context) ([]byte, error)
	SaveSchema(ctx context.Context, old, rec []byte) error
}

// UpdateSchema applies fn to the schema record s keeps (none: nothing is
// done) and stores the result, retrying when another process changed it
// meanwhile; fn returns false to leave the record as it is. op and agg
// name the operation and aggregate in errors.
func UpdateSchema(ctx context.Context, s SchemaKeeper, op, agg string, fn func(*SchemaRecord) bool) error {
	for range 20 {
		raw, err := s.LoadSchema(ctx)
		if err != nil {
			return err
		}
		rec, err := DecodeSchema(raw)
		if err != nil {
			return Fail(op, agg, nil, ErrUnreadable, err)
		}
		if rec == nil || !fn(rec) {
			return nil
		}
		err = s.SaveSchema(ctx, raw, encodeSchema(rec))
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return FailAt(op, agg, nil, "(the schema record kept changing)", ErrConflict, nil)
}

// dropChanged is the first step of EnsureIndexes, before Store.Ensure
// makes what the repository needs: it drops the lookups whose options
// changed since the recorded layout (unique, zeros, table), whose indexes
// hold entries of another form (or are of another kind); reconcile then
// builds them anew. A lookup the record already has with the
// repository's options is left alone, so that running it again drops
// nothing.
func (r Repo[T, K]) dropChanged(ctx context.Context) error {
	raw, err := r.S.LoadSchema(ctx)
	if errors.Is(notReady(r.S, "EnsureIndexes", r.D.Aggregate, err), ErrNotReady) {
		return nil // no place for a record yet (DynamoDB's table): nothing to drop
	}
	if err != nil {
		return err
	}
	rec, err := DecodeSchema(raw)
	if err != nil {
		return Fail("EnsureIndexes", r.D.Aggregate, nil, ErrUnreadable, err)
	}
	if rec == nil {
		return nil
	}
	cur := LayoutIn(r.D, r.S)
	for _, lk := range rec.Layout.Lookups {
		if now, ok := cur.Lookup(lk.Name); ok && !now.Same(lk) {
			if err := r.S.DropLookup(ctx, lk); err != nil {
				return err
			}
		}
	}
	return nil
}

// reconcile is the second half of EnsureIndexes, after the store has made
// what it needs: it records the repository's layout in the schema record
// (the old one goes to the history when blocks would read differently),
// drops the lookups the repository no longer has, and builds the lookups
// that are new to the collection's data, so that their reads are complete.
func (r Repo[T, K]) reconcile(ctx context.Context) error {
	const op = "EnsureIndexes"
	cur := LayoutIn(r.D, r.S)
	var dropped []LookupLayout
	var building []string
	saved, moved := false, false
	var prevLease, fence int64
	var at time.Time
	var prev *SchemaRecord // the record this call replaced
	for range 20 {
		at = time.Now()
		raw, err := r.S.LoadSchema(ctx)
		if err != nil {
			return err
		}
		rec, err := DecodeSchema(raw)
		if err != nil {
			return Fail(op, r.D.Aggregate, nil, ErrUnreadable, err)
		}
		next := &SchemaRecord{Layout: cur, Fence: 1, LeaseMS: r.lease().Milliseconds()}
		next.Layout.Lookups = slices.Clone(cur.Lookups)
		dropped, building, moved = nil, nil, false
		if rec == nil {
			// No record: a new collection, or blocks written before
			// records existed, whose lookups nothing vouches for.
			items, _, _, err := r.S.ReadBlocks(ctx, op, nil, 1, false)
			if len(items) > 0 || errors.Is(err, ErrUnreadable) {
				for i := range next.Layout.Lookups {
					next.Layout.Lookups[i].Building = true
				}
			} else if err != nil {
				return err
			}
		} else {
			// Another layout moves the fence: the writes of
			// repositories that checked the old record fail with
			// ErrLayout unless theirs fits the new one (fence.go).
			next.Fence, prevLease, prev = rec.Fence, rec.LeaseMS, rec
			if !sameLayout(rec.Layout, cur) {
				next.Fence, moved = rec.Fence+1, true
			}
			next.History = rec.History
			if !rec.Layout.SameBlocks(cur) {
				next.History = append(slices.Clone(rec.History), rec.Layout)
				if len(next.History) > maxHistory {
					next.History = next.History[len(next.History)-maxHistory:]
				}
			}
			for i, lk := range next.Layout.Lookups {
				old, ok := rec.Layout.Lookup(lk.Name)
				if ok && old.Same(lk) {
					next.Layout.Lookups[i].Building, next.Layout.Lookups[i].Resume = old.Building, old.Resume
				} else {
					next.Layout.Lookups[i].Building = true
				}
			}
			// Lookups the model no longer has are dropped (those whose
			// options changed were dropped before Store.Ensure: see
			// dropChanged).
			for _, lk := range rec.Layout.Lookups {
				if _, ok := cur.Lookup(lk.Name); !ok {
					dropped = append(dropped, lk)
				}
			}
		}
		for _, lk := range next.Layout.Lookups {
			if lk.Building {
				building = append(building, lk.Name)
			}
		}
		fence = next.Fence
		enc := encodeSchema(next)
		if string(enc) == string(raw) {
			saved = true
			break
		}
		err = r.S.SaveSchema(ctx, raw, enc)
		if err == nil {
			saved = true
			break
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	if !saved {
		return FailAt(op, r.D.Aggregate, nil, "(the schema record kept changing)", ErrConflict, nil)
	}
	r.recorded(fence, at)
	if moved || len(building) > 0 {
		// Writes checked against the record before it changed land
		// before the blocks are read (on stores without fenced writes).
		if err := r.settle(ctx, prevLease); err != nil {
			return err
		}
	}
	for _, lk := range dropped {
		if err := r.S.DropLookup(ctx, lk); err != nil {
			return err
		}
	}
	if len(building) == 0 {
		r.st.ready.Store(true)
		return nil
	}
	err := r.build(ctx, building)
	if errors.Is(err, ErrDuplicate) && moved && len(dropped) == 0 && prev != nil && !optionsChanged(prev.Layout, cur) {
		// The new layout cannot be completed until the duplicates are
		// resolved, which takes writes of the builds still serving:
		// record the layout this call replaced again, so that they write
		// on (the fence moves once more).
		if rerr := r.rollBack(ctx, prev, fence); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// optionsChanged reports whether a lookup of rec is kept with other
// options by cur (dropChanged dropped it before the build).
func optionsChanged(rec, cur Layout) bool {
	for _, lk := range rec.Lookups {
		if now, ok := cur.Lookup(lk.Name); ok && !now.Same(lk) {
			return true
		}
	}
	return false
}

// rollBack records prev's layout again after a build of the layout this
// EnsureIndexes recorded (with fence) failed on values the blocks hold
// twice: the repositories of the build that recorded prev fit it again
// and write on; this build's writes fit it too (its model has more). The
// lookups this build added stay in the store, unrecorded: its next
// EnsureIndexes builds them again from the blocks. Nothing is done when
// another EnsureIndexes recorded a layout meanwhile.
func (r Repo[T, K]) rollBack(ctx context.Context, prev *SchemaRecord, fence int64) error {
	return UpdateSchema(ctx, r.S, "EnsureIndexes", r.D.Aggregate, func(rec *SchemaRecord) bool {
		if rec.Fence != fence {
			return false
		}
		rec.Layout, rec.History, rec.LeaseMS = prev.Layout, prev.History, prev.LeaseMS
		rec.Fence = fence + 1
		return true
	})
}

// build fills the lookups being built from the blocks, resuming where an
// earlier build stopped, then marks them complete. A unique lookup whose
// values the blocks already hold twice stays building and the build fails
// with ErrDuplicate naming the value and the blocks.
func (r Repo[T, K]) build(ctx context.Context, names []string) error {
	const op = "EnsureIndexes"
	raw, err := r.S.LoadSchema(ctx)
	if err != nil {
		return err
	}
	rec, err := DecodeSchema(raw)
	if err != nil || rec == nil {
		return Fail(op, r.D.Aggregate, nil, ErrUnreadable, err)
	}
	var resume []byte
	for i, name := range names {
		lk, _ := rec.Layout.Lookup(name)
		if i == 0 || lk.Resume == nil || string(lk.Resume) < string(resume) {
			resume = lk.Resume
		}
	}
	report, _ := ctx.Value(buildProgressKey{}).(func(BuildProgress))
	progress := BuildProgress{Collection: rec.Layout.Collection, Lookups: names}
	bctx := WithRepairOptions(ctx, RepairOptions{After: resume, Lookups: names, OnPage: func(last []byte, blocks int) error {
		progress.Blocks += blocks
		if report != nil {
			report(progress)
		}
		return UpdateSchema(ctx, r.S, op, r.D.Aggregate, func(rec *SchemaRecord) bool {
			changed := false
			for i, lk := range rec.Layout.Lookups {
				if lk.Building && slices.Contains(names, lk.Name) {
					rec.Layout.Lookups[i].Resume = slices.Clone(last)
					changed = true
				}
			}
			return changed
		})
	}})
	rep, err := r.S.Repair(bctx)
	if err != nil {
		return err
	}
	var dups []string
	for _, c := range rep.UniqueConflicts {
		// Stores name the engine's lookups "<collection>.<lookup>".
		if slices.ContainsFunc(names, func(n string) bool { return c.Lookup == n || c.Lookup == rec.Layout.Collection+"."+n }) {
			dups = append(dups, c.String())
		}
	}
	if len(dups) > 0 {
		// Start the next build from the first block: the holders must
		// be looked at again once the duplicates are resolved.
		_ = UpdateSchema(ctx, r.S, op, r.D.Aggregate, func(rec *SchemaRecord) bool {
			for i, lk := range rec.Layout.Lookups {
				if slices.Contains(names, lk.Name) {
					rec.Layout.Lookups[i].Resume = nil
				}
			}
			return true
		})
		return FailAt(op, r.D.Aggregate, nil, "(the blocks already hold these values of a unique lookup: "+strings.Join(dups, "; ")+"; change or delete all but one, then run EnsureIndexes again)", ErrDuplicate, nil)
	}
	err = UpdateSchema(ctx, r.S, op, r.D.Aggregate, func(rec *SchemaRecord) bool {
		changed := false
		for i, lk := range rec.Layout.Lookups {
			if lk.Building && slices.Contains(names, lk.Name) {
				rec.Layout.Lookups[i].Building, rec.Layout.Lookups[i].Resume = false, nil
				changed = true
			}
		}
		return changed
	})
	if err != nil {
		return err
	}
	progress.Unreadable = rep.Unreadable
	if report != nil {
		progress.Done = true
		report(progress)
	}
	return unreadableBuilt(r.D.Aggregate, names, rep.Unreadable)
}

// unreadableBuilt is the error of a build of lookups names that met
// blocks it could not decode (nil when there were none): the lookups are
// complete for every other block, those blocks are in none of them. It
// is an *Error of kind ErrUnreadable whose Err joins the blocks' own
// (BuildProgress.Unreadable lists them too).
func unreadableBuilt(agg string, names []string, blocks []*Error) error {
	if len(blocks) == 0 {
		return nil
	}
	ids := make([]string, 0, min(len(blocks), 10))
	errs := make([]error, len(blocks))
	for i, b := range blocks {
		errs[i] = b
		if i < cap(ids) {
			ids = append(ids, fmt.Sprintf("%q", fmt.Sprint(b.ID)))
		}
	}
	list := strings.Join(ids, ", ")
	if len(blocks) > len(ids) {
		list += fmt.Sprintf(" and %d more", len(blocks)-len(ids))
	}
	detail := fmt.Sprintf("(lookups %s built without %d blocks that do not decode: %s; they are in none of these lookups until they are fixed or deleted and Repair runs)", strings.Join(names, ", "), len(blocks), list)
	return FailAt("EnsureIndexes", agg, nil, detail, ErrUnreadable, errors.Join(errs...))
}
