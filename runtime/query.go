package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrBadQuery: a lookup query's conditions do not select one key range
// (see Cond).
var ErrBadQuery = errors.New("bad query")

// KeyValue is a type whose values can be lookup or block key parts.
type KeyValue interface {
	~string | ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type condOp uint8

const (
	condAny condOp = iota
	condEq
	condRange
)

// Cond is a condition on one part of a composite lookup. The zero Cond
// matches any value. A query on a composite lookup is answered from one key
// range, so its conditions must be: Eq on a leading run of parts, then at
// most one range (Gt, Gte, Lt, Lte, Between) on the next part, then none.
// For example, for hotels by (city, stars): {City: Eq("Dortmund")} lists
// all hotels in Dortmund, {City: Eq("Dortmund"), Stars: Gte(3)} those with
// three stars or more; {Stars: Eq(4)} alone is a bad query.
type Cond[T KeyValue] struct {
	op           condOp
	lo, hi       T
	hasLo, hasHi bool
	loIn, hiIn   bool // bounds included
}

// Eq matches v.
func Eq[T KeyValue](v T) Cond[T] { return Cond[T]{op: condEq, lo: v, hi: v} }

// Gt matches values greater than v.
func Gt[T KeyValue](v T) Cond[T] { return Cond[T]{op: condRange, lo: v, hasLo: true} }

// Gte matches values greater than or equal to v.
func Gte[T KeyValue](v T) Cond[T] { return Cond[T]{op: condRange, lo: v, hasLo: true, loIn: true} }

// Lt matches values less than v.
func Lt[T KeyValue](v T) Cond[T] { return Cond[T]{op: condRange, hi: v, hasHi: true} }

// Lte matches values less than or equal to v.
func Lte[T KeyValue](v T) Cond[T] { return Cond[T]{op: condRange, hi: v, hasHi: true, hiIn: true} }

// Between matches lo <= value < hi.
func Between[T KeyValue](lo, hi T) Cond[T] {
	return Cond[T]{op: condRange, lo: lo, hi: hi, hasLo: true, hasHi: true, loIn: true}
}

// IsAny reports whether c is the zero Cond, which matches every value.
func (c Cond[T]) IsAny() bool { return c.op == condAny }

func (c Cond[T]) String() string {
	switch {
	case c.op == condAny:
		return "any"
	case c.op == condEq:
		return fmt.Sprintf("= %v", c.lo)
	}
	s := ""
	if c.hasLo {
		s = map[bool]string{true: ">= ", false: "> "}[c.loIn] + fmt.Sprint(c.lo)
	}
	if c.hasHi {
		if s != "" {
			s += " and "
		}
		s += map[bool]string{true: "<= ", false: "< "}[c.hiIn] + fmt.Sprint(c.hi)
	}
	return s
}

// KeyRange is the range of encoded lookup keys [From, To) that a query
// selects.
type KeyRange struct {
	From, To []byte
	// After is the position a cursor resumes after (nil on a first page).
	After  []byte
	ranged bool // a range condition was applied
	done   bool // a condition after the range, only Any allowed
	err    error
}

// NewKeyRange starts a range that selects every key with the given prefix
// (e.g. nothing for a whole lookup).
func NewKeyRange(prefix []byte) *KeyRange {
	return &KeyRange{From: append([]byte(nil), prefix...), To: TupleEnd(prefix)}
}

// Narrow applies the condition c on the next part of the key, whose values
// enc encodes. name is the part's name, for error messages.
func Narrow[T KeyValue](r *KeyRange, name string, c Cond[T], enc func([]byte, T) []byte) *KeyRange {
	if r.err != nil || c.IsAny() {
		if !c.IsAny() || r.ranged {
			r.done = true
		}
		if r.err == nil && c.IsAny() {
			r.done = true
		}
		return r
	}
	if r.done {
		r.err = fmt.Errorf("%w: condition on %s follows a part with no equality condition; only a leading run of Eq conditions and one range after it select a key range", ErrBadQuery, name)
		return r
	}
	if c.op == condEq {
		key := enc(append([]byte(nil), r.From...), c.lo)
		r.From, r.To = key, TupleEnd(key)
		return r
	}
	prefix := r.From
	from, to := append([]byte(nil), prefix...), TupleEnd(prefix)
	if c.hasLo {
		k := enc(append([]byte(nil), prefix...), c.lo)
		if c.loIn {
			from = k
		} else {
			from = TupleEnd(k)
		}
	}
	if c.hasHi {
		k := enc(append([]byte(nil), prefix...), c.hi)
		if c.hiIn {
			to = TupleEnd(k)
		} else {
			to = k
		}
	}
	r.From, r.To, r.ranged, r.done = from, to, true, true
	return r
}

// Err reports a bad combination of conditions (wrapping ErrBadQuery).
func (r *KeyRange) Err() error { return r.err }

// Empty reports whether the range selects nothing.
func (r *KeyRange) Empty() bool { return bytes.Compare(r.From, r.To) >= 0 }

// Contains reports whether key is inside the range.
func (r *KeyRange) Contains(key []byte) bool {
	return bytes.Compare(key, r.From) >= 0 && bytes.Compare(key, r.To) < 0
}

// Query names the range for cursors: a cursor made for one range is
// rejected by every other.
func (r *KeyRange) Query(lookup string) string {
	return fmt.Sprintf("%s:%x:%x", lookup, r.From, r.To)
}

// Resume decodes a cursor made by Cursor for the same lookup and range and
// sets After to its position. Failures wrap ErrBadCursor.
func (r *KeyRange) Resume(lookup, cursor string) error {
	if cursor == "" {
		return nil
	}
	last, err := DecodeCursor(r.Query(lookup), cursor)
	if err != nil {
		return err
	}
	if !r.Contains(last) {
		return fmt.Errorf("%w: position outside the query's range", ErrBadCursor)
	}
	r.After = last
	return nil
}

// Start is the first key to read: From, or the smallest key after After.
func (r *KeyRange) Start() []byte {
	if r.After == nil {
		return r.From
	}
	return append(append(make([]byte, 0, len(r.After)+1), r.After...), 0)
}

// Cursor makes the cursor that resumes this range after key last.
func (r *KeyRange) Cursor(lookup string, last []byte) string {
	return EncodeCursor(r.Query(lookup), last)
}

// RepairReport says what Repair found and fixed in a collection's lookups.
type RepairReport struct {
	Aggregates int // aggregates scanned
	Added      int // missing lookup entries written
	Removed    int // stale lookup entries removed
	// Conflicts lists unique values held by more than one aggregate (which
	// only a write outside noamgen, or a crash during a write on a store
	// without transactions, can cause); each keeps its first holder in
	// block-key order.
	Conflicts []string
	// Unreadable lists the blocks Repair could not decode (ErrUnreadable,
	// each naming the block and the entry): it skipped them, leaving their
	// lookup entries as they were, and repaired the others.
	Unreadable []*Error
	// Native lists the lookups the store keeps in its own secondary
	// indexes (MongoDB): the server maintains them with every write, so
	// there is nothing to repair.
	Native []string
}

// AddUnreadable records block id of aggregate agg, which Repair skipped
// because it does not decode (err), in Unreadable.
func (r *RepairReport) AddUnreadable(agg string, id any, err error) {
	var re *Error
	errors.As(Unreadable("Repair", agg, id, err), &re)
	r.Unreadable = append(r.Unreadable, re)
}

func (r RepairReport) String() string {
	s := fmt.Sprintf("%d aggregates, %d lookup entries added, %d removed, %d unique conflicts", r.Aggregates, r.Added, r.Removed, len(r.Conflicts))
	if len(r.Unreadable) > 0 {
		s += fmt.Sprintf("; %d unreadable blocks skipped", len(r.Unreadable))
	}
	if len(r.Native) > 0 {
		s += fmt.Sprintf("; native indexes, nothing to repair: %s", strings.Join(r.Native, ", "))
	}
	return s
}
