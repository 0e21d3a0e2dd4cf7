package index

import (
	"bytes"
	"fmt"
	"testing"
)

// TestBatches: batched commands name at most Limits.Keys keys and
// Limits.Bytes bytes (one larger key alone), so that 50 keys of 1 MiB
// never make one 50 MiB command; every key is in exactly one batch, in
// order.
func TestBatches(t *testing.T) {
	lim := Limits{Keys: 500, Bytes: 2 << 20}
	big := bytes.Repeat([]byte("ab"), 1<<19)
	for _, keys := range [][][]byte{
		nil,
		{[]byte("a")},
		func() [][]byte {
			var ks [][]byte
			for i := range 50 {
				ks = append(ks, append(bytes.Clone(big), fmt.Sprint(i)...))
			}
			return ks
		}(),
		func() [][]byte {
			var ks [][]byte
			for i := range 1234 {
				ks = append(ks, fmt.Appendf(nil, "%08x", i))
			}
			return ks
		}(),
		{bytes.Repeat([]byte("x"), 3<<20), []byte("a"), bytes.Repeat([]byte("y"), 3<<20)},
	} {
		var all [][]byte
		for _, b := range batches(keys, lim) {
			size := 0
			for _, k := range b {
				size += len(k)
			}
			if len(b) == 0 || len(b) > lim.Keys || (size > lim.Bytes && len(b) > 1) {
				t.Fatalf("batch of %d keys, %d bytes", len(b), size)
			}
			all = append(all, b...)
		}
		if len(all) != len(keys) {
			t.Fatalf("%d keys in batches, want %d", len(all), len(keys))
		}
		for i := range all {
			if !bytes.Equal(all[i], keys[i]) {
				t.Fatalf("key %d out of order", i)
			}
		}
	}
}
