package boltstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
)

func TestFormatKey(t *testing.T) {
	k := runtime.AppendUint(runtime.AppendInt(runtime.AppendString(nil, "Dort\x00mund"), -4), 7)
	if got, want := FormatKey(k), `"Dort\x00mund", -4, 7`; got != want {
		t.Fatalf("FormatKey: %s, want %s", got, want)
	}
	if got := FormatKey(append(runtime.AppendString(nil, "a"), 0x7f)); got != `"a", 7f` {
		t.Fatalf("FormatKey of a bad key: %s", got)
	}
}

// TestCounterOverflow: a counted part too small for the next number fails
// the write instead of wrapping around to a key in use.
func TestCounterOverflow(t *testing.T) {
	c := testCollection(t)
	c.Counter = &counter[string]{
		Split: func(id string) ([]byte, int64) { return nil, int64(len(id)) },
		With:  func(_ string, n int64) string { return strings.Repeat("x", int(min(n, 2))) },
	}
	for want := range 3 {
		id, err := c.UpdateAlloc(ctx, "Create", "", func(b *block) error {
			b.PutMarker()
			return b.Err()
		})
		switch {
		case want < 2 && (err != nil || len(id) != want+1):
			t.Fatalf("allocation %d: %q, %v", want, id, err)
		case want == 2 && (err == nil || !strings.Contains(err.Error(), "does not fit")):
			t.Fatalf("allocation past the key's range: %q, %v", id, err)
		}
	}
}

// TestScanFieldsNames: ScanFields reads a field's own entries only, not
// those of a field whose name extends it.
func TestScanFieldsNames(t *testing.T) {
	c := testCollection(t)
	err := c.Update(ctx, "Create", "a", func(b *block) error {
		b.PutMarker()
		b.Put("tag", "one")
		b.Put("tag\x00x", "two")
		b.Put("tags", "three")
		b.Append("tag\x00", "four")
		return b.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = c.View(ctx, "Get", "a", func(b *block) error {
		return b.ScanFields(func(e blockEntry) error {
			var s string
			if e.Elem || e.Key == "tag\x00" {
				if e.Elem {
					if err := Decode(e.Value, &s); err != nil {
						return err
					}
				}
			} else if err := e.Decode(&s); err != nil {
				return err
			}
			got = append(got, e.String()+"="+s)
			return nil
		}, "tag", "tag", "tag\x00")
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "tag=one tag\x00= tag\x00[0]=four" {
		t.Fatalf("ScanFields: %q", got)
	}
	if err := c.View(ctx, "Get", "missing", func(b *block) error {
		return b.ScanFields(func(blockEntry) error { return errors.New("called") }, "tag")
	}); err != nil {
		t.Fatalf("ScanFields of a missing block: %v", err)
	}
}
