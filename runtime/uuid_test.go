package runtime

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

var canonical = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestUUIDv7(t *testing.T) {
	before := time.Now().UnixMilli()
	var last [16]byte
	seen := map[[16]byte]bool{}
	for i := range 20000 {
		u, err := NewUUID(UUIDv7)
		if err != nil {
			t.Fatal(err)
		}
		if u[6]>>4 != 7 || u[8]>>6 != 2 {
			t.Fatalf("%s: version %d, variant bits %b", UUIDString(u), u[6]>>4, u[8]>>6)
		}
		if !canonical.MatchString(UUIDString(u)) {
			t.Fatalf("%q is not canonical", UUIDString(u))
		}
		// Time-ordered: each UUID of the process sorts after the last,
		// thousands within one millisecond included.
		if i > 0 && bytes.Compare(u[:], last[:]) <= 0 {
			t.Fatalf("UUID %d %s does not sort after %s", i, UUIDString(u), UUIDString(last))
		}
		if seen[u] {
			t.Fatalf("UUID %s made twice", UUIDString(u))
		}
		seen[u], last = true, u
	}
	var ms int64
	for i := range 6 {
		ms = ms<<8 | int64(last[i])
	}
	// The sequence may run ahead of the clock by a millisecond per 2,048
	// UUIDs of one millisecond.
	if now := time.Now().UnixMilli(); ms < before || ms > now+10 {
		t.Errorf("the last UUID's time %d is outside [%d, %d]", ms, before, now+10)
	}
}

func TestUUIDClockOverflow(t *testing.T) {
	c := &uuidSeq{ms: -1}
	ms, seq := c.next(1000, 0xffff)
	if ms != 1000 || seq != 0x7ff {
		t.Fatalf("first of a millisecond: %d/%#x, want 1000/0x7ff (the seed's low 11 bits)", ms, seq)
	}
	for range 0x801 {
		ms, seq = c.next(1000, 0)
	}
	if ms != 1001 || seq != 0 {
		t.Fatalf("past the 12-bit sequence: %d/%#x, want 1001/0", ms, seq)
	}
	// A clock that goes back keeps the order.
	if ms, seq = c.next(5, 0); ms != 1001 || seq != 1 {
		t.Fatalf("after the clock went back: %d/%#x, want 1001/1", ms, seq)
	}
}

func TestUUIDv4(t *testing.T) {
	a, err := NewUUID(UUIDv4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewUUID(UUIDv4)
	if a == b || a[6]>>4 != 4 || a[8]>>6 != 2 || !canonical.MatchString(UUIDString(a)) {
		t.Fatalf("v4 UUIDs %s, %s", UUIDString(a), UUIDString(b))
	}
	if _, err := NewUUID(5); err == nil {
		t.Fatal("NewUUID(5) made a UUID")
	}
}

func TestUUIDKey(t *testing.T) {
	s, err := UUIDKey[string](UUIDv7)()
	if err != nil || !canonical.MatchString(s) {
		t.Fatalf("string key %q, %v", s, err)
	}
	b, err := UUIDKey[[16]byte](UUIDv4)()
	if err != nil || b[6]>>4 != 4 {
		t.Fatalf("[16]byte key %x, %v", b, err)
	}
	if _, err := UUIDKey[int64](UUIDv7)(); err == nil {
		t.Fatal("an int64 UUID key was made")
	}
	if got := UUIDString([16]byte{0x01, 0x90, 0xa1, 0xb2, 0xc3, 0xd4, 0x7e, 0x5f, 0x8a, 0x9b, 0x0c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b}); got != "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" {
		t.Fatalf("UUIDString: %s", got)
	}
}
