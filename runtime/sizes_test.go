package runtime

import (
	"bytes"
	"testing"
)

// TestKeyRangeWithin: narrowing a range to keys of at most n bytes keeps
// exactly the keys of at most n bytes the range holds, with bounds of at
// most n bytes (n+1 past a run of 0xFF bytes): every key and bound over a
// small alphabet.
func TestKeyRangeWithin(t *testing.T) {
	const n = 2
	alphabet := []byte{0x00, 0x7F, 0xFE, 0xFF}
	var all [][]byte // every string of length 1..n+2 over the alphabet
	var grow func(prefix []byte)
	grow = func(prefix []byte) {
		if len(prefix) > 0 {
			all = append(all, prefix)
		}
		if len(prefix) == n+2 {
			return
		}
		for _, c := range alphabet {
			grow(append(bytes.Clone(prefix), c))
		}
	}
	grow(nil)
	var keys [][]byte
	for _, k := range all {
		if len(k) <= n {
			keys = append(keys, k)
		}
	}
	checked := 0
	for _, from := range all {
		for _, to := range all {
			r := &KeyRange{From: from, To: to}
			w := r.Within(n)
			if (len(w.From) > n && !allFF(from[:n])) || (len(w.To) > n && !allFF(to[:n])) || len(w.From) > n+1 || len(w.To) > n+1 {
				t.Fatalf("Within(%d) of [%x, %x) has bounds [%x, %x)", n, from, to, w.From, w.To)
			}
			for _, k := range keys {
				if r.Contains(k) != w.Contains(k) {
					t.Fatalf("key %x: in [%x, %x) %v, in the narrowed [%x, %x) %v", k, from, to, r.Contains(k), w.From, w.To, w.Contains(k))
				}
			}
			checked++
		}
	}
	if checked < 100000 {
		t.Fatalf("only %d ranges checked", checked)
	}
	r := &KeyRange{From: []byte{1}, To: []byte{2}}
	if r.Within(n) != r {
		t.Fatal("a range whose bounds fit was copied")
	}
}

func allFF(b []byte) bool { return len(bytes.Trim(b, "\xff")) == 0 }
