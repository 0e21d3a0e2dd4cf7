package templates

import (
	"fmt"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/access"
)

// MethodKind says what a repository method does; store templates switch on
// it to write the method body.
type MethodKind int

const (
	MGet MethodKind = iota
	MCreate
	MPut
	MDelete
	MSet        // set one top-level entry (ETF)
	MAppend     // append one element to a partitioned field
	MSetAt      // replace one element of a partitioned field
	MListElems  // page through a partitioned field's elements
	MUpdate     // several entry changes in one atomic write
	MList       // page through blocks in key order
	MAll        // iterate over every block
	MGetMany    // read many blocks by key in one round trip
	MListBy     // page through the blocks found by a lookup
	MGetBy      // read the block owning a unique lookup value
	MListScope  // page through the children of one counter scope
	MRepair     // rebuild the lookups from the blocks
	MEnsure     // create the collections, buckets and indexes
	MMigrate    // rewrite blocks stored in an older layout
	MCount      // count the blocks
	MCountBy    // count the blocks a lookup finds
	MCountScope // count the children of one counter scope
	MCreateMany
	MPutMany
	MDeleteMany
	MSweep // remove expired blocks
	MAdd   // add to one number field (noam:"add")
)

// Method is one method of the repository interface: its signature and doc,
// shared by the interface and every store's implementation.
type Method struct {
	Kind    MethodKind
	Name    string
	Field   *model.Field  // for MSet, MAppend, MSetAt, MListElems
	Lookup  *model.Lookup // for MListBy, MGetBy, MCountBy
	Doc     string
	Params  []jen.Code
	Results []jen.Code
}

// HasUpdate reports whether the aggregate gets an Update method: ETF
// aggregates with at least one settable entry, and any aggregate with a
// partitioned field.
func HasUpdate(a *model.Aggregate) bool {
	return len(a.Settable()) > 0 || len(a.Partitions()) > 0
}

// Methods lists the repository methods of an aggregate, in interface order.
// stores are those the package is generated for: the docs name only them
// (none given: every store with a layout declaration).
func Methods(a *model.Aggregate, stores ...string) []Method {
	id := func() jen.Code { return jen.Id("id").Add(IDType(a)) }
	ptr := func() jen.Code { return jen.Op("*").Id(a.Name) }
	v := Var(a)
	versionNote := ""
	if a.Version != nil {
		versionNote = fmt.Sprintf(" The %s entry is bumped by every write, so that a concurrent Put holding the old version fails with runtime.ErrConflict.", a.Version.Key)
	}
	if a.Updated != nil {
		versionNote += fmt.Sprintf(" The %s entry is set to the repository's clock in the same atomic write.", a.Updated.Key)
	}
	expired, gone := "", ""
	if a.Expires != nil {
		expired = fmt.Sprintf(" or its %s has passed", a.Expires.Key)
		gone = fmt.Sprintf(" An expired block is absent: the write first removes it had its %s passed (one request more) and then fails with runtime.ErrNotFound, writing nothing.", a.Expires.Key)
	}
	ms := []Method{
		{Kind: MGet, Name: "Get", Doc: fmt.Sprintf("Get reads the %s block with key id in one round trip. It fails with runtime.ErrNotFound if there is none%s.", a.Name, expired),
			Params: []jen.Code{Ctx(), id()}, Results: []jen.Code{ptr(), jen.Error()}},
		{Kind: MCreate, Name: "Create", Doc: createDoc(a),
			Params: []jen.Code{Ctx(), jen.Id(v).Add(ptr())}, Results: []jen.Code{jen.Error()}},
		{Kind: MPut, Name: "Put", Doc: putDoc(a),
			Params: []jen.Code{Ctx(), jen.Id(v).Add(ptr())}, Results: []jen.Code{jen.Error()}},
		{Kind: MDelete, Name: "Delete", Doc: fmt.Sprintf("Delete removes the %s block with key id and all its entries. It fails with runtime.ErrNotFound if there is none.", a.Name),
			Params: []jen.Code{Ctx(), id()}, Results: []jen.Code{jen.Error()}},
	}
	for _, f := range a.Settable() {
		missing := "It fails with runtime.ErrNotFound if the block does not exist." + gone
		if f.IsExpires {
			missing += " Renewing an expired block would bring back what had gone."
		}
		ms = append(ms, Method{Kind: MSet, Name: Setter(f), Field: f,
			Doc:    fmt.Sprintf("%s writes the %s entry of block id and nothing else.%s %s", Setter(f), f.Key, versionNote, missing),
			Params: []jen.Code{Ctx(), id(), jen.Id("v").Add(Type(f.Type))}, Results: []jen.Code{jen.Error()}})
	}
	for _, f := range a.Addable() {
		ms = append(ms, Method{Kind: MAdd, Name: Adder(f), Field: f,
			Doc:    fmt.Sprintf("%s adds delta (negative to subtract) to the %s entry of block id in one atomic write and returns its new value; a block written before the field existed holds 0. Concurrent additions all count.%s It fails with runtime.ErrOutOfRange if the sum would leave the range of %s, and with runtime.ErrNotFound if the block does not exist; then nothing is written.%s", Adder(f), f.Key, versionNote, TypeText(a, f.Type), gone),
			Params: []jen.Code{Ctx(), id(), jen.Id("delta").Int64()}, Results: []jen.Code{jen.Int64(), jen.Error()}})
	}
	for _, f := range a.Partitions() {
		ms = append(ms,
			Method{Kind: MAppend, Name: Append(f), Field: f,
				Doc:    fmt.Sprintf("%s adds e as the last element of %s and returns its index: one new entry %s[i] is written, the other elements are not sent.%s It fails with runtime.ErrNotFound if the block does not exist.%s", Append(f), f.Key, f.Key, versionNote, gone),
				Params: []jen.Code{Ctx(), id(), jen.Id("e").Add(Type(f.Elem))}, Results: []jen.Code{jen.Int(), jen.Error()}},
			Method{Kind: MSetAt, Name: SetAt(f), Field: f,
				Doc:    fmt.Sprintf("%s replaces the entry %s[i] and nothing else.%s It fails with runtime.ErrNotFound if the block or the element does not exist.%s", SetAt(f), f.Key, versionNote, gone),
				Params: []jen.Code{Ctx(), id(), jen.Id("i").Int(), jen.Id("e").Add(Type(f.Elem))}, Results: []jen.Code{jen.Error()}},
			Method{Kind: MListElems, Name: ListElems(f), Field: f,
				Doc:    fmt.Sprintf("%s reads one page of the elements of %s in index order (req.Desc: descending, the last appended first), without reading the rest of the block. It fails with runtime.ErrNotFound if the block does not exist and with runtime.ErrBadCursor if req.Cursor was not made by this method for this block in the same direction.", ListElems(f), f.Key),
				Params: []jen.Code{Ctx(), id(), jen.Id("req").Add(RT("PageRequest"))}, Results: []jen.Code{Page(Type(f.Elem)), jen.Error()}},
		)
	}
	if HasUpdate(a) {
		ms = append(ms, Method{Kind: MUpdate, Name: "Update",
			Doc:    fmt.Sprintf("Update applies every change set in u to block id in one atomic write; entries u leaves nil are not written.%s It fails with runtime.ErrNotFound if the block (or an element u sets) does not exist.%s", versionNote, gone),
			Params: []jen.Code{Ctx(), id(), jen.Id("u").Id(Update(a))}, Results: []jen.Code{jen.Error()}})
	}
	ms = append(ms, moreMethods(a, stores)...)
	ms = append(ms,
		Method{Kind: MList, Name: "List",
			Doc:    fmt.Sprintf("List reads one page of %s aggregates, in the store's listing order (block-key order on stores whose scans are ordered, runtime.Caps.OrderedScan; in any order, each once, on the others). req.Desc lists in descending block-key order (the last first) on stores whose scans are ordered, and fails with runtime.ErrUnsupported on the others. Pass the returned Next as req.Cursor to read the following page, in the same direction; Next is empty after the last page. A block that cannot be decoded (runtime.ErrUnreadable, naming it) ends a page early: the page holds the blocks before it and Next resumes after it, so that a caller can go on. A cursor not made by List in the same direction fails with runtime.ErrBadCursor.", a.Name),
			Params: []jen.Code{Ctx(), jen.Id("req").Add(RT("PageRequest"))}, Results: []jen.Code{Page(ptr()), jen.Error()}},
		Method{Kind: MAll, Name: "All",
			Doc:    fmt.Sprintf("All iterates over every %s aggregate, in the order of List. An error is yielded with a nil aggregate: a block that cannot be decoded as runtime.ErrUnreadable naming it, after which the iteration goes on with the next block; any other error ends it.", a.Name),
			Params: []jen.Code{Ctx()}, Results: []jen.Code{jen.Qual(IterPkg, "Seq2").Types(ptr(), jen.Error())}},
	)
	return ms
}

// moreMethods are the methods for index tables, enumerable keys, batch
// reads and set-up.
func moreMethods(a *model.Aggregate, stores []string) []Method {
	id := IDType(a)
	ptr := func() jen.Code { return jen.Op("*").Id(a.Name) }
	ms := []Method{
		{Kind: MGetMany, Name: "GetMany",
			Doc:    fmt.Sprintf("GetMany reads the %s blocks with the given keys in one round trip (an application-side join: see the *%sRefs functions). Keys with no block are absent from the map.", a.Name, a.Name),
			Params: []jen.Code{Ctx(), jen.Id("ids").Index().Add(id)}, Results: []jen.Code{jen.Map(IDType(a)).Add(ptr()), jen.Error()}},
	}
	for _, l := range a.Lookups {
		order := partPaths(l) + ", block key"
		via := lookupVia(a, l, stores)
		if len(l.Parts) == 1 {
			p := l.Parts[0]
			what := "whose " + p.Path + " is v"
			if p.Multi {
				what = "that hold v in " + p.Path
			}
			unique := ""
			if l.Unique {
				unique = fmt.Sprintf(" %s is unique, so the page holds at most one aggregate: %s reads the same in one call, failing with runtime.ErrNotFound where this returns an empty page; %s is there so that every lookup can be listed alike.", p.Path, GetBy(l), ListBy(l))
			}
			ms = append(ms, Method{Kind: MListBy, Name: ListBy(l), Lookup: l,
				Doc:    fmt.Sprintf("%s reads one page of the %s aggregates %s, in block-key order (req.Desc: descending), through %s.%s A cursor not made by this query in the same direction fails with runtime.ErrBadCursor.", ListBy(l), a.Name, what, via, unique),
				Params: []jen.Code{Ctx(), jen.Id("v").Add(Type(p.Type)), jen.Id("req").Add(RT("PageRequest"))}, Results: []jen.Code{Page(ptr()), jen.Error()}})
		} else {
			ms = append(ms, Method{Kind: MListBy, Name: ListBy(l), Lookup: l,
				Doc:    fmt.Sprintf("%s reads one page of the %s aggregates selected by q, in (%s) order (req.Desc: descending), through %s. Conditions that do not select one key range fail with runtime.ErrBadQuery; a cursor not made by this query in the same direction fails with runtime.ErrBadCursor.", ListBy(l), a.Name, order, via),
				Params: []jen.Code{Ctx(), jen.Id("q").Id(LookupQuery(a, l)), jen.Id("req").Add(RT("PageRequest"))}, Results: []jen.Code{Page(ptr()), jen.Error()}})
		}
		ms = append(ms, countBy(a, l))
		if l.Unique {
			var params []jen.Code
			params = append(params, Ctx())
			for _, p := range l.Parts {
				params = append(params, jen.Id(ParamName(p.Name)).Add(Type(p.Type)))
			}
			ms = append(ms, Method{Kind: MGetBy, Name: GetBy(l), Lookup: l,
				Doc:    fmt.Sprintf("%s reads the %s aggregate that holds the given %s, which is unique: a write that would give it to a second aggregate fails with runtime.ErrDuplicate. It fails with runtime.ErrNotFound if no aggregate holds it.", GetBy(l), a.Name, partPaths(l)),
				Params: params, Results: []jen.Code{ptr(), jen.Error()}})
		}
	}
	if a.Counter && len(a.Scope()) > 0 {
		params := []jen.Code{Ctx()}
		var names []string
		for _, p := range a.Scope() {
			params = append(params, jen.Id(ParamName(p.GoName)).Add(Type(p.Type)))
			names = append(names, p.Key)
		}
		params = append(params, jen.Id("req").Add(RT("PageRequest")))
		last := a.IDParts[len(a.IDParts)-1]
		ms = append(ms, Method{Kind: MListScope, Name: ListScope(a),
			Doc:    fmt.Sprintf("%s reads one page of the %s aggregates with the given %s, in %s order (req.Desc: descending, the newest first). Their %s values are allocated 1, 2, 3, ... from the scope's counter, so a page is read by computed keys in one batch; numbers of deleted aggregates are skipped.", ListScope(a), a.Name, strings.Join(names, ", "), last.Key, last.Key),
			Params: params, Results: []jen.Code{Page(ptr()), jen.Error()}})
		ms = append(ms, Method{Kind: MCountScope, Name: CountScope(a),
			Doc:    fmt.Sprintf("%s returns the number of %s aggregates with the given %s: as many as %s returns over all its pages.%s %s", CountScope(a), a.Name, strings.Join(names, ", "), ListScope(a), expiryNote(a), storeCostNote),
			Params: params[: len(params)-1 : len(params)-1], Results: []jen.Code{jen.Int64(), jen.Error()}})
	}
	ms = append(ms, countMethod(a))
	ms = append(ms, batchMethods(a)...)
	if a.Expires != nil {
		ms = append(ms, Method{Kind: MSweep, Name: "Sweep",
			Doc:    fmt.Sprintf("Sweep removes the %s blocks whose %s has passed, with their lookup entries, reading o.Batch blocks per round trip (64 by default) from o.Resume on and stopping after o.Limit blocks (0: all); the report's Resume goes on from there. Expired blocks are absent from every read whether or not they were swept: Sweep frees their space on stores without native expiry (bbolt) and what native expiry leaves (run Repair for index entries).", a.Name, a.Expires.Key),
			Params: []jen.Code{Ctx(), jen.Id("o").Add(RT("SweepOptions"))}, Results: []jen.Code{RT("SweepReport"), jen.Error()}})
	}
	if len(a.Lookups) > 0 {
		ms = append(ms, Method{Kind: MRepair, Name: "Repair",
			Doc:    repairDoc(a, stores),
			Params: []jen.Code{Ctx()}, Results: []jen.Code{RT("RepairReport"), jen.Error()}})
	}
	ms = append(ms, Method{Kind: MEnsure, Name: "EnsureIndexes", Doc: ensureDoc(a),
		Params: []jen.Code{Ctx()}, Results: []jen.Code{jen.Error()}})
	ms = append(ms, Method{Kind: MMigrate, Name: "Migrate",
		Doc:    fmt.Sprintf("Migrate rewrites the %s blocks stored in an older layout (another strategy, a field partitioned or no longer partitioned, as the layout history recorded by EnsureIndexes says) into the current one, o.Batch blocks at a time (64 by default), calling o.Progress after each batch. Each block is rewritten in one conditional write, so Migrate is safe while the application writes (a block written meanwhile is in the current layout already) and idempotent: a run that stopped early can be run again, or resumed from its report's Resume. With o.DryRun it counts what would change and writes nothing. The report counts the blocks migrated and those already current, and lists those that failed, with why; a complete run without failures clears the collection's layout history. Run EnsureIndexes first.", a.Name),
		Params: []jen.Code{Ctx(), jen.Id("o").Add(RT("MigrateOptions"))}, Results: []jen.Code{RT("MigrateReport"), jen.Error()}})
	return ms
}

// lookupVia says what keeps lookup l on each store, for the docs of
// ListByF, from the stores' layout declarations (RegisterLayout): the
// store's native index where it keeps l in one, an index table on the
// others; and, where the native index is eventually consistent
// (DynamoDB's GSIs), what that means and that the table option keeps a
// strongly consistent index table.
func lookupVia(a *model.Aggregate, l *model.Lookup, stores []string) string {
	if l.Table {
		return "the index table " + LookupName(a, l)
	}
	al := accessLookup(l)
	var native, tables, eventual []string
	for _, d := range declared(stores) {
		switch {
		case d.IsTable(al):
			tables = append(tables, d.Title)
		case d.NativeEventual:
			eventual = append(eventual, d.Title)
			fallthrough
		default:
			native = append(native, d.NativeName+" on "+d.Title)
		}
	}
	if len(native) == 0 {
		return "the lookup " + LookupName(a, l) + " (an index table)"
	}
	where := strings.Join(native, ", ")
	if len(tables) > 0 {
		where += ", an index table on " + andList(tables)
	}
	s := "the lookup " + LookupName(a, l) + " (" + where + ")"
	if len(eventual) > 0 {
		tag := "the field `noam:\"lookup,table\"`"
		if len(l.Parts) > 1 {
			tag = "every part `noam:\"lookup=" + l.Name + ",table\"`"
		}
		s += ". On " + andList(eventual) + " the index is eventually consistent: a page may miss an aggregate written just before, or hold it as it was before that write (tag " + tag + " for a strongly consistent index table there)"
	}
	return s
}

// accessLookup is l as the layout declarations take it.
func accessLookup(l *model.Lookup) access.Lookup {
	return access.Lookup{Name: l.Name, Unique: l.Unique, Table: l.Table, Multi: l.Multi(), Zeros: l.IndexZero}
}

// declared returns the layout declarations of stores (none given: of
// every store that has one), in the order given.
func declared(stores []string) []*access.Store {
	if len(stores) == 0 {
		stores = LayoutStores()
	}
	var out []*access.Store
	for _, n := range stores {
		if d, ok := LayoutOf(n); ok {
			out = append(out, d)
		}
	}
	return out
}

// repairDoc is Repair's doc, naming the stores (of stores) that keep a
// lookup of a in a native index, from their layout declarations.
func repairDoc(a *model.Aggregate, stores []string) string {
	doc := fmt.Sprintf("Repair rebuilds the index tables of %s from the aggregates: it writes missing lookup entries and removes stale ones, and reports what it fixed. Run it after a crash on a store without transactions, or after writes that bypassed the repository.", a.Name)
	var native []string
	for _, d := range declared(stores) {
		var names []string
		for _, l := range a.Lookups {
			if !d.IsTable(accessLookup(l)) {
				names = append(names, l.Name)
			}
		}
		if len(names) == len(a.Lookups) {
			native = append(native, "every lookup on "+d.Title)
		} else if len(names) > 0 {
			native = append(native, andList(names)+" on "+d.Title)
		}
	}
	if len(native) > 0 {
		doc += " Lookups kept in a native secondary index (" + strings.Join(native, "; ") + ") are kept by the server with every write and need no repair after a crash."
	}
	return doc
}

// andList joins words as English does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// expiryNote says, for the docs of reads and counts, that expired
// aggregates are left out.
func expiryNote(a *model.Aggregate) string {
	if a.Expires == nil {
		return ""
	}
	return fmt.Sprintf(" Aggregates whose %s has passed (by the repository's clock) are left out.", a.Expires.Key)
}

// storeCostNote points the docs of methods whose cost depends on the
// store to the store's repository type, which renders it from the store's
// declaration (storeCosts).
const storeCostNote = "What it sends to the store, and in how many round trips, is in the doc of the store's repository type."

// countMethod is Count, which counts every aggregate.
func countMethod(a *model.Aggregate) Method {
	return Method{Kind: MCount, Name: "Count",
		Doc:    fmt.Sprintf("Count returns the number of %s aggregates: as many as List returns over all its pages.%s %s", a.Name, expiryNote(a), storeCostNote),
		Params: []jen.Code{Ctx()}, Results: []jen.Code{jen.Int64(), jen.Error()}}
}

// countBy is CountByF of lookup l.
func countBy(a *model.Aggregate, l *model.Lookup) Method {
	name := "CountBy" + LookupTitle(l)
	if len(l.Parts) == 1 {
		p := l.Parts[0]
		return Method{Kind: MCountBy, Name: name, Lookup: l,
			Doc:    fmt.Sprintf("%s returns the number of %s aggregates that %s returns over all its pages for v.%s %s", name, a.Name, ListBy(l), expiryNote(a), storeCostNote),
			Params: []jen.Code{Ctx(), jen.Id("v").Add(Type(p.Type))}, Results: []jen.Code{jen.Int64(), jen.Error()}}
	}
	return Method{Kind: MCountBy, Name: name, Lookup: l,
		Doc:    fmt.Sprintf("%s returns the number of %s aggregates selected by q: as many as %s returns over all its pages, with the same query rules (conditions that do not select one key range fail with runtime.ErrBadQuery).%s %s", name, a.Name, ListBy(l), expiryNote(a), storeCostNote),
		Params: []jen.Code{Ctx(), jen.Id("q").Id(LookupQuery(a, l))}, Results: []jen.Code{jen.Int64(), jen.Error()}}
}

// batchMethods are CreateMany, PutMany and DeleteMany.
func batchMethods(a *model.Aggregate) []Method {
	v := Var(a) + "s"
	ptrs := func() jen.Code { return jen.Id(v).Index().Op("*").Id(a.Name) }
	same := "Each item is written as the single call would write it (checks, versions, counters, lookups and unique values), in order, in as few round trips as the store allows. " + storeCostNote + " Items that fail are reported in a *runtime.BatchError (which items, and why: errors.Is matches any item's error); the others are written. An item that failed with runtime.ErrUnknownOutcome may have been written; any other failed item wrote nothing."
	putExpired := ""
	if a.Expires != nil {
		putExpired = fmt.Sprintf(" PutMany first reads the blocks (one GetMany) and removes those whose %s has passed, as Put does, so that an item over an expired block creates it anew.", a.Expires.Key)
	}
	return []Method{
		{Kind: MCreateMany, Name: "CreateMany",
			Doc:    fmt.Sprintf("CreateMany stores new %s blocks, each as Create would. %s", a.Name, same),
			Params: []jen.Code{Ctx(), ptrs()}, Results: []jen.Code{jen.Error()}},
		{Kind: MPutMany, Name: "PutMany",
			Doc:    fmt.Sprintf("PutMany creates or replaces %s blocks whole, each as Put would. %s%s", a.Name, same, putExpired),
			Params: []jen.Code{Ctx(), ptrs()}, Results: []jen.Code{jen.Error()}},
		{Kind: MDeleteMany, Name: "DeleteMany",
			Doc:    fmt.Sprintf("DeleteMany removes the %s blocks with the given keys and their lookup entries, each as Delete would (a missing block is an item failing with runtime.ErrNotFound). %s", a.Name, same[strings.Index(same, "Items that fail"):]),
			Params: []jen.Code{Ctx(), jen.Id("ids").Index().Add(IDType(a))}, Results: []jen.Code{jen.Error()}},
	}
}

// ensureDoc documents EnsureIndexes: what it creates, the layout it
// records and, with lookups, how it builds them over existing data.
func ensureDoc(a *model.Aggregate) string {
	s := fmt.Sprintf("EnsureIndexes creates what the %s repository stores into (collections or buckets, index tables, counters) and the indexes it relies on, if they do not exist yet, and records in the store the layout it serves (strategy, partitions, version entry, lookups). Call it before the first write and on every start: it is idempotent.", a.Name)
	if len(a.Lookups) > 0 {
		s += " Until it has run with this layout, reads through a lookup, and writes that claim unique values, fail with runtime.ErrNotReady. A lookup added to a collection that already holds data is built from the existing blocks, in batches, before EnsureIndexes returns; meanwhile its reads fail with runtime.ErrIndexBuilding, and a build cut short resumes where it stopped at the next call. If the blocks already hold a value of a new unique lookup twice, it fails with runtime.ErrDuplicate naming the value and the blocks."
	}
	return s + " Lookups the collection had and the repository no longer has are dropped. Blocks written in an older layout are read right or refused with runtime.ErrLayout until Migrate rewrites them. Do not run an older build's EnsureIndexes after a newer one's: it would record the older layout and drop the lookups the newer one added."
}

func createDoc(a *model.Aggregate) string {
	s := fmt.Sprintf("Create stores a new %s block. It fails with runtime.ErrDuplicate if a block with the same key exists.", a.Name)
	if a.Version != nil {
		s += fmt.Sprintf(" The stored %s starts at 1, and %s.%s is set to it.", a.Version.Key, Var(a), a.Version.GoName)
	}
	if stamps := stampFields(a); stamps != "" {
		s += fmt.Sprintf(" %s set to the repository's clock (UTC, milliseconds).", stamps)
	}
	return s + counterDoc(a, "Create") + uuidDoc(a, "Create")
}

// uuidDoc says how a write gives a UUID-keyed aggregate its id.
func uuidDoc(a *model.Aggregate, op string) string {
	switch a.UUID {
	case "v7":
		return fmt.Sprintf(" When %s.%s is empty, %s sets it to a new UUID (version 7: time-ordered, so new blocks come last in key order) before the write; after an error it keeps it, so that a retry writes the same block.", Var(a), a.ID.GoName, op)
	case "v4":
		return fmt.Sprintf(" When %s.%s is empty, %s sets it to a new random UUID (version 4) before the write; after an error it keeps it, so that a retry writes the same block.", Var(a), a.ID.GoName, op)
	}
	return ""
}

// counterDoc says how a write allocates a counter-keyed aggregate's id.
func counterDoc(a *model.Aggregate, op string) string {
	if !a.Counter {
		return ""
	}
	if len(a.IDParts) == 0 {
		return fmt.Sprintf(" When %s.%s is 0, %s allocates it from the collection's counter (skipping ids in use) and sets it.", Var(a), a.ID.GoName, op)
	}
	last := a.IDParts[len(a.IDParts)-1]
	return fmt.Sprintf(" When %s.%s.%s is 0, %s allocates it from the counter of its scope (the other key parts), skipping numbers in use, and sets it.", Var(a), a.ID.GoName, last.GoName, op)
}

// stampFields names the timestamp fields of a with their verb
// ("game.Created and game.Updated are"), "" when it has none.
func stampFields(a *model.Aggregate) string {
	var names []string
	for _, f := range []*model.Field{a.Created, a.Updated} {
		if f != nil {
			names = append(names, Var(a)+"."+f.GoName)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0] + " is"
	}
	return strings.Join(names, " and ") + " are"
}

// putStampDoc says what Put does with the timestamps.
func putStampDoc(a *model.Aggregate) string {
	var s string
	if a.Updated != nil {
		s += fmt.Sprintf(" %s.%s is set to the repository's clock (UTC, milliseconds).", Var(a), a.Updated.GoName)
	}
	if a.Created != nil {
		s += fmt.Sprintf(" The %s entry of a block that exists is kept (decided in the same atomic write) and %s.%s is set to it; a new block gets the repository's clock.", a.Created.Key, Var(a), a.Created.GoName)
	}
	return s
}

func putDoc(a *model.Aggregate) string {
	if a.Version == nil {
		return fmt.Sprintf("Put creates the %s block or replaces it whole.", a.Name) + putStampDoc(a) + putExpiredDoc(a) + counterDoc(a, "Put")
	}
	return fmt.Sprintf("Put creates the %s block or replaces it whole, with optimistic concurrency on %s: when %s.%s is runtime.NotStored (0, the zero value) the block must not exist yet; otherwise the stored %s must equal %s.%s. Either way a mismatch fails with runtime.ErrConflict and changes nothing. On success the stored %s is one more than before and %s.%s is set to it.",
		a.Name, a.Version.Key, Var(a), a.Version.GoName, a.Version.Key, Var(a), a.Version.GoName, a.Version.Key, Var(a), a.Version.GoName) + putStampDoc(a) + putExpiredDoc(a) + counterDoc(a, "Put")
}

// putExpiredDoc says that a Put finds an expired block absent.
func putExpiredDoc(a *model.Aggregate) string {
	if a.Expires == nil {
		return ""
	}
	doc := fmt.Sprintf(" A block whose %s has passed is absent: the Put first removes it (one request more) and then creates the block anew", a.Expires.Key)
	if a.Created != nil {
		doc += fmt.Sprintf(", %s set to the repository's clock", a.Created.Key)
	}
	if a.Version != nil {
		doc += fmt.Sprintf(" (with the expired block's %s it fails with runtime.ErrConflict, as over a missing block)", a.Version.Key)
	}
	return doc + "."
}

// Signature renders a method's name, parameters and results.
func (m Method) Signature() *jen.Statement {
	return jen.Id(m.Name).Params(m.Params...).Params(m.Results...)
}

// Common adds the store-independent declarations for a: the repository
// interface, the Update type, the key codec functions and the compile-time
// guard that fails when the struct changes without regeneration.
func Common(f *jen.File, s *model.Schema, a *model.Aggregate, stores []string) {
	// Interface.
	doc := Doc("%s reads and writes %s aggregates: collection %q, strategy %s, block key %s, entries %s. Implementations: %s.",
		Repo(a), a.Name, a.Collection, a.Strategy, a.ID.GoName, EntryList(a), implList(a, stores))
	var methods []jen.Code
	for i, m := range Methods(a, stores...) {
		if i > 0 {
			methods = append(methods, jen.Line())
		}
		methods = append(methods, Doc("%s", m.Doc).Add(m.Signature()))
	}
	f.Add(doc).Type().Id(Repo(a)).Interface(methods...)
	f.Line()

	// Update type.
	if HasUpdate(a) {
		doc := Doc("%s lists the entry changes that %s.Update applies together, in one atomic write. A nil field leaves its entry untouched; a field pointing at a zero value writes that zero value.", Update(a), Repo(a))
		var fields []jen.Code
		if a.Strategy == model.EAO {
			fields = append(fields, Doc("Root, when set, writes the root entry (%s) from *Root; the id, the version and the partitioned fields of *Root are ignored.", keys(a.Root())).Id("Root").Op("*").Id(a.Name))
		}
		for _, fl := range a.Settable() {
			fields = append(fields, Doc("%s, when set, writes the %s entry.", fl.GoName, fl.Key).Id(fl.GoName).Op("*").Add(Type(fl.Type)))
		}
		for _, fl := range a.Addable() {
			fields = append(fields, Doc("%s, when not 0, adds it to the %s entry, as %s.%s does (runtime.ErrOutOfRange past the range of %s); it cannot go with %s.", Adder(fl), fl.Key, Repo(a), Adder(fl), TypeText(a, fl.Type), fl.GoName).Id(Adder(fl)).Int64())
		}
		for _, fl := range a.Partitions() {
			fields = append(fields, Doc("%s replaces elements of %s by index (entries %s[i]); every index must exist.", AtField(fl), fl.Key, fl.Key).Id(AtField(fl)).Map(jen.Int()).Add(Type(fl.Elem)))
		}
		if a.Version != nil {
			fields = append(fields, Doc("IfVersion, when not runtime.AnyVersion (0, the zero value), makes the update apply only while the stored %s equals it; otherwise Update fails with runtime.ErrConflict and changes nothing. (Put reads a 0 version differently: as runtime.NotStored, a block that must not exist yet.)", a.Version.Key).Id("IfVersion").Int64())
		}
		f.Add(doc).Type().Id(Update(a)).Struct(fields...)
		f.Line()
	}

	// Key codec.
	if len(a.IDParts) == 0 {
		codec := map[model.KeyKind]string{model.KeyString: "StringKeys", model.KeyInt: "IntKeys", model.KeyUint: "UintKeys"}[model.KindOf(a.ID.Type)]
		f.Commentf("%s encodes %s block keys, order-preserving, for cursors and key-value stores.", KeyCodecVar(a), a.Name)
		f.Var().Id(KeyCodecVar(a)).Op("=").Add(RT(codec)).Types(IDType(a)).Call()
		f.Line()
	} else {
		f.Commentf("%s appends id to b with the order-preserving key codec, part by part.", KeyAppender(a))
		f.Func().Id(KeyAppender(a)).Params(jen.Id("b").Index().Byte(), jen.Id("id").Add(IDType(a))).Index().Byte().Block(
			jen.Return(KeyEncode(a, jen.Id("b"), jen.Id("id"))),
		)
		f.Line()
		f.Commentf("%s reads a block key written by %s.", KeyReader(a), KeyAppender(a))
		read := []jen.Code{jen.Var().Id("id").Add(IDType(a))}
		for _, p := range a.IDParts {
			read = append(read, jen.Block(decodeValue(p.Type, jen.Id("id").Dot(p.GoName))...))
		}
		read = append(read, jen.Return(jen.Id("id"), jen.Nil()))
		f.Func().Id(KeyReader(a)).Params(jen.Id("r").Op("*").Add(RT("KeyReader"))).Params(IDType(a), jen.Error()).Block(read...)
		f.Line()
		f.Commentf("%s encodes %s block keys for cursors and key-value stores.", KeyCodecVar(a), a.Name)
		f.Var().Id(KeyCodecVar(a)).Op("=").Add(RT("KeyCodec").Types(IDType(a))).Values(
			jen.Id("Append").Op(":").Id(KeyAppender(a)), jen.Id("Read").Op(":").Id(KeyReader(a)))
		f.Line()
	}

	lookupDecls(f, s, a)

	descriptor(f, a)
	changes(f, a)
	repoImpl(f, a, stores)
	opener(f, a, stores)
	guard(f, a)
}

// opener renders the set of the aggregate's stores, which each store's file
// fills in its init function, and the constructor that picks the store by
// the handle it is given.
func opener(f *jen.File, a *model.Aggregate, stores []string) {
	f.Add(Doc("%s are the stores this package holds a %s repository for, each added by its file's init function.", OpenersVar(a), a.Name)).
		Var().Id(OpenersVar(a)).Op("=").Add(RT("NewOpeners")).Types(jen.Id(Repo(a))).Call(jen.Lit(a.Name))
	f.Line()
	var handles []string
	for _, n := range stores {
		st, _ := Lookup(n)
		handles = append(handles, fmt.Sprintf("a %s (%s)", st.Handle, "New"+StoreRepo(a, StoreTitle(n))))
	}
	f.Add(Doc("%s returns the %s repository over handle, on the store whose handle it is: %s. opts are the repository's options and the store's, as that constructor takes them. With it a program picks its store at run time, and a test runs one suite on every store. For a nil handle, or one of any other type, it fails with runtime.ErrInvalid and opens nothing.",
		Opener(a), a.Name, orList(handles))).
		Func().Id(Opener(a)).Params(jen.Id("handle").Any(), jen.Id("opts").Op("...").Add(RT("Option"))).Params(jen.Id(Repo(a)), jen.Error()).Block(
		jen.Return(jen.Id(OpenersVar(a)).Dot("Open").Call(jen.Id("handle"), jen.Id("opts").Op("..."))),
	)
	f.Line()
}

// orList joins items as "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return "none"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func implList(a *model.Aggregate, stores []string) string {
	var out []string
	for _, n := range stores {
		out = append(out, StoreRepo(a, StoreTitle(n)))
	}
	return strings.Join(out, ", ")
}

// StoreTitle is the store's name as it appears in type names (mongo -> Mongo).
func StoreTitle(name string) string {
	if s, ok := Lookup(name); ok && s.Title != "" {
		return s.Title
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

func keys(fs []*model.Field) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Key)
	}
	return strings.Join(out, ", ")
}

// CheckNames reports generated names that would collide for a (two methods
// of the repository, or two fields of the Update type), so that the user
// gets an error naming them rather than code that does not compile.
func CheckNames(a *model.Aggregate) error {
	seen := map[string]bool{}
	for _, m := range Methods(a) {
		if seen[m.Name] {
			return fmt.Errorf("aggregate %s would get two methods named %s; rename a field or give a lookup another name with noam:\"lookup=NAME\"", a.Name, m.Name)
		}
		seen[m.Name] = true
	}
	fields := map[string]bool{"IfVersion": a.Version != nil, "Root": a.Strategy == model.EAO}
	for _, f := range a.Settable() {
		if fields[f.GoName] {
			return fmt.Errorf("aggregate %s would get two %s fields in %s; rename field %s", a.Name, f.GoName, Update(a), f.GoName)
		}
		fields[f.GoName] = true
	}
	for _, f := range a.Addable() {
		if fields[Adder(f)] {
			return fmt.Errorf("aggregate %s would get two %s fields in %s; rename field %s", a.Name, Adder(f), Update(a), f.GoName)
		}
		fields[Adder(f)] = true
	}
	for _, f := range a.Partitions() {
		if fields[AtField(f)] {
			return fmt.Errorf("aggregate %s would get two %s fields in %s; rename field %s", a.Name, AtField(f), Update(a), f.GoName)
		}
		fields[AtField(f)] = true
	}
	return nil
}

// GenVersion is the version of the contract between generated code and
// the runtime package that this generator writes for; generated files
// check it against the runtime at compile time.
const GenVersion = 5

// guard adds the compile-time checks of a generated file: the struct must
// be as it was at generation (an assignment between struct types compares
// field names, types and tags, which a conversion ignores), and the runtime
// must support the generated code's contract version.
func guard(f *jen.File, a *model.Aggregate) {
	st, _ := a.StructType.Underlying().(*types.Struct)
	var sfields []jen.Code
	for i, sf := range a.StructFields {
		field := jen.Id(sf.Name).Add(Type(sf.Type))
		if st != nil && i < st.NumFields() && st.Field(i).Name() == sf.Name {
			if tag := st.Tag(i); strings.Contains(tag, "`") {
				field = field.Add(jen.Lit(tag))
			} else if tag != "" {
				field = field.Add(jen.Op("`" + tag + "`"))
			}
		}
		sfields = append(sfields, field)
	}
	f.Add(Doc("Compile-time guard: this assignment stops compiling when %s's fields or their tags change after generation (a conversion would ignore tags), and the version check when the runtime package does not match the generated code. Run go generate again.", a.Name)).
		Func().Id("_").Params().Block(
		jen.Var().Id("_").Struct(sfields...).Op("=").Id(a.Name).Values(),
		jen.Var().Id("_").Op("=").Add(RT("EnforceVersion")).Call(jen.Lit(GenVersion).Op("-").Add(RT("MinGenVersion"))),
		jen.Var().Id("_").Op("=").Add(RT("EnforceVersion")).Call(RT("MaxGenVersion").Op("-").Lit(GenVersion)),
	)
}
