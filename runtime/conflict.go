package runtime

import (
	"fmt"
	"strings"
)

// UniqueConflict is a unique value that Repair found held by more than
// one aggregate (a write outside noamgen, a crash of a write on a store
// without transactions, or a Redis failover that lost an acknowledged
// claim). Repair resolves it the same way on every store: the value's
// claim (its unique index entry) stays with, or is given to, the first
// holder in block-key order (the order of List), Kept; GetByF then
// returns Kept. The other holders keep the value in their blocks: the
// application decides what they should hold and writes them.
type UniqueConflict struct {
	Lookup  string   // the lookup, as the store names it ("matches.code")
	Value   string   // the value, printed by FormatKey
	Holders []string // every aggregate holding it, block keys printed by FormatKey, in block-key order
	Kept    string   // the holder the claim stays with: Holders[0]
}

func (c UniqueConflict) String() string {
	h := strings.Join(c.Holders[:len(c.Holders)-1], ", ") + " and " + c.Holders[len(c.Holders)-1]
	return fmt.Sprintf("%s %s is held by %s: kept for %s", c.Lookup, c.Value, h, c.Kept)
}

// AddConflict records, for Repair, that the aggregate of encoded block
// key holder holds encoded value of unique lookup lookup, whose claim is
// kept for the aggregate of block key first (a holder met earlier in
// block-key order). Holders of one value are gathered in one
// UniqueConflict; Conflicts gets its String, one line per value.
func (r *RepairReport) AddConflict(lookup string, value, first, holder []byte) {
	v, f, h := FormatKey(value), FormatKey(first), FormatKey(holder)
	for j := range r.UniqueConflicts {
		c := &r.UniqueConflicts[j]
		if c.Lookup == lookup && c.Value == v && c.Kept == f {
			c.Holders = append(c.Holders, h)
			r.Conflicts[j] = c.String()
			return
		}
	}
	c := UniqueConflict{Lookup: lookup, Value: v, Holders: []string{f, h}, Kept: f}
	r.UniqueConflicts = append(r.UniqueConflicts, c)
	r.Conflicts = append(r.Conflicts, c.String())
}

// FormatKey prints an encoded block key or lookup value (KeyCodec,
// AppendString, AppendInt, AppendUint): a single component alone ("h1",
// 42), several in parentheses separated by ", " (("Dortmund", 4)),
// strings quoted, bytes it cannot read in hex (KeyParts).
func FormatKey(k []byte) string {
	parts := KeyParts(k)
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// KeyParts prints the components of an encoded key: strings quoted,
// integers in decimal, and the bytes from the first component it cannot
// read in hex.
func KeyParts(k []byte) []string {
	var parts []string
	r := NewKeyReader(k)
	for !r.Done() {
		// A component the reader cannot read is left unread.
		if s, err := r.String(); err == nil {
			parts = append(parts, fmt.Sprintf("%q", s))
		} else if i, err := r.Int(); err == nil {
			parts = append(parts, fmt.Sprint(i))
		} else if u, err := r.Uint(); err == nil {
			parts = append(parts, fmt.Sprint(u))
		} else {
			parts = append(parts, fmt.Sprintf("%x", r.Rest()))
			break
		}
	}
	return parts
}
