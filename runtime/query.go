package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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
	// invalid is the first encoded value of the range that holds a string
	// that is not valid UTF-8 (no stored value can match it): reads refuse
	// the query with ErrInvalidValue (Repo.ListBy).
	invalid []byte
}

// NewKeyRange starts a range that selects every key with the given prefix
// (e.g. nothing for a whole lookup).
func NewKeyRange(prefix []byte) *KeyRange {
	r := &KeyRange{From: append([]byte(nil), prefix...), To: TupleEnd(prefix)}
	r.check(r.From)
	return r
}

// check records key (a tuple made by the key codec) if a string in it is
// not valid UTF-8 and no other value was recorded before.
func (r *KeyRange) check(key []byte) {
	if r.invalid == nil {
		if _, bad := invalidString(key); bad {
			r.invalid = key
		}
	}
}

// invalidString returns the first string component of key (a tuple made by
// the key codec) that is not valid UTF-8; a key that is not such a tuple
// has none.
func invalidString(key []byte) (string, bool) {
	r := NewKeyReader(key)
	for !r.Done() {
		if len(r.Rest()) > 0 && r.Rest()[0] == tagString {
			s, err := r.String()
			if err != nil {
				return "", false // not a tuple of this codec: nothing to say
			}
			if !utf8.ValidString(s) {
				return s, true
			}
			continue
		}
		if _, err := r.Int(); err == nil {
			continue
		}
		if _, err := r.Uint(); err != nil {
			return "", false
		}
	}
	return "", false
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
		r.check(key)
		r.From, r.To = key, TupleEnd(key)
		return r
	}
	prefix := r.From
	from, to := append([]byte(nil), prefix...), TupleEnd(prefix)
	if c.hasLo {
		k := enc(append([]byte(nil), prefix...), c.lo)
		r.check(k)
		if c.loIn {
			from = k
		} else {
			from = TupleEnd(k)
		}
	}
	if c.hasHi {
		k := enc(append([]byte(nil), prefix...), c.hi)
		r.check(k)
		if c.hiIn {
			to = TupleEnd(k)
		} else {
			to = k
		}
	}
	r.From, r.To, r.ranged, r.done = from, to, true, true
	return r
}

// Within returns the range of the keys of r that are at most n bytes long,
// with bounds of at most n bytes (but see below), for a store that holds no longer key
// and refuses longer bounds (DynamoDB's 1024-byte sort key, a Redis
// argument): a bound over n bytes is replaced by the first key of at most
// n bytes after everything that starts with its first n bytes, so that the
// store finds the same keys. r itself is returned when both bounds fit.
func (r *KeyRange) Within(n int) *KeyRange {
	if n <= 0 || (len(r.From) <= n && len(r.To) <= n) {
		return r
	}
	c := *r
	clamp := func(b []byte) []byte {
		if len(b) <= n {
			return b
		}
		if e := PrefixEnd(b[:n]); e != nil {
			return e
		}
		// b[:n] is all 0xFF (never the start of an encoded key): the
		// bound just above it takes n+1 bytes.
		return append(bytes.Clone(b[:n]), 0)
	}
	c.From, c.To = clamp(r.From), clamp(r.To)
	return &c
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
	// only a write outside noamgen, a crash during a write on a store
	// without transactions, or a Redis failover losing an acknowledged
	// claim can cause), one line per value (UniqueConflict.String); each
	// keeps its first holder in block-key order.
	Conflicts []string
	// UniqueConflicts are the same conflicts, structured: every holder of
	// each value and the one kept (UniqueConflict).
	UniqueConflicts []UniqueConflict
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
