package runtime

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestCursorStrictEncoding: a cursor differing from a valid one in any bit
// of its text (including base64 padding bits, inserted line breaks and
// trailing characters) is ErrBadCursor.
func TestCursorStrictEncoding(t *testing.T) {
	for _, payload := range [][]byte{nil, {1}, {1, 2}, AppendString(nil, "rick"), AppendInt(nil, 42)} {
		c := EncodeCursor("q", payload)
		if _, err := DecodeCursor("q", c); err != nil {
			t.Fatalf("valid cursor rejected: %v", err)
		}
		for i := range len(c) {
			for bit := range 8 {
				m := []byte(c)
				m[i] ^= 1 << bit
				if string(m) == c {
					continue
				}
				if _, err := DecodeCursor("q", string(m)); !errors.Is(err, ErrBadCursor) {
					t.Fatalf("cursor %q with bit %d of char %d flipped (%q) accepted: %v", c, bit, i, m, err)
				}
			}
		}
		// Every other character of the alphabet in the last position
		// (whose low bits are padding when len%4 != 0).
		alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		for _, ch := range alphabet {
			m := c[:len(c)-1] + string(ch)
			if m == c {
				continue
			}
			if _, err := DecodeCursor("q", m); !errors.Is(err, ErrBadCursor) {
				t.Fatalf("cursor %q with last char %q accepted", c, ch)
			}
		}
		for _, m := range []string{c + "\n", c[:2] + "\r\n" + c[2:], c + "=", c + "==", " " + c, c + "A"} {
			if _, err := DecodeCursor("q", m); !errors.Is(err, ErrBadCursor) {
				t.Fatalf("non-canonical cursor %q accepted", m)
			}
		}
	}
	if _, err := DecodeCursor("q", strings.Repeat("A", maxCursorLen+4)); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("huge cursor: %v", err)
	}
}

// TestCursorKeyIsRandomPerProcess: the default key is not the old public
// one, so cursors cannot be forged with it.
func TestCursorKeyIsRandomPerProcess(t *testing.T) {
	k := *cursorKey.Load()
	if len(k) < 32 || string(k) == "noamgen cursor key v1" {
		t.Fatalf("default cursor key %q is not a random 32-byte key", k)
	}
	old := k
	defer SetCursorKey(old)
	SetCursorKey([]byte("noamgen cursor key v1"))
	forged := EncodeCursor("q", AppendInt(nil, 5))
	SetCursorKey(old)
	if _, err := DecodeCursor("q", forged); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor signed with the public key accepted: %v", err)
	}
}

// TestPositionAfterBounds: forged (validly signed) positions outside
// [lo, MaxPosition] are ErrBadCursor, so that no listing overflows.
func TestPositionAfterBounds(t *testing.T) {
	for _, v := range []int64{math.MaxInt64, math.MaxInt64 - 5, MaxPosition + 1, -1, math.MinInt64} {
		if _, err := PositionAfter("q", PositionCursor("q", v), 0); !errors.Is(err, ErrBadCursor) {
			t.Errorf("position %d accepted: %v", v, err)
		}
		if _, err := IndexAfter("q", PositionCursor("q", v)); !errors.Is(err, ErrBadCursor) {
			t.Errorf("index %d accepted: %v", v, err)
		}
	}
	if _, err := PositionAfter("q", PositionCursor("q", 0), 1); !errors.Is(err, ErrBadCursor) {
		t.Errorf("position 0 accepted with lo 1: %v", err)
	}
	for _, v := range []int64{0, 1, 1 << 40, MaxPosition} {
		if got, err := PositionAfter("q", PositionCursor("q", v), 0); err != nil || got != v {
			t.Errorf("PositionAfter(%d) = %d, %v", v, got, err)
		}
	}
	if _, err := PositionAfter("q", EncodeCursor("q", AppendString(nil, "x")), 0); !errors.Is(err, ErrBadCursor) {
		t.Errorf("string position accepted: %v", err)
	}
}

// TestCheckUTF8: invalid UTF-8 in ids, values and encoded keys is
// ErrInvalidValue; valid strings (NUL included) pass.
func TestCheckUTF8(t *testing.T) {
	if err := CheckUTF8("Create", "Hotel", "h1", "Wittekind", "a\x00b", "ü", ""); err != nil {
		t.Fatal(err)
	}
	err := CheckUTF8("Create", "Hotel", "h\xff", "ok", "bad\xc3")
	if !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("CheckUTF8 = %v", err)
	}
	if strings.Contains(err.Error(), "\xff") {
		t.Fatalf("error text carries the invalid bytes: %q", err)
	}
	good := AppendInt(AppendString(nil, "Dortmund"), 4)
	if err := CheckKey("Put", "Hotel", "h1", "lookup", good); err != nil {
		t.Fatal(err)
	}
	bad := AppendInt(AppendString(nil, "Dort\xffmund"), 4)
	if err := CheckKey("Put", "Hotel", "h1", "lookup", bad); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("CheckKey = %v", err)
	}
	bad2 := AppendString(AppendInt(nil, 4), "\xed\xa0\x80") // a surrogate
	if err := CheckKey("Put", "Hotel", "h1", "lookup", bad2); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("CheckKey surrogate = %v", err)
	}
}
