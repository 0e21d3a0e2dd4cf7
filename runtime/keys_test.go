package runtime

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// tuple is a key of mixed components for ordering tests.
type comp struct {
	kind int // 0 string, 1 int, 2 uint
	s    string
	i    int64
	u    uint64
}

func encode(t []comp) []byte {
	var b []byte
	for _, c := range t {
		switch c.kind {
		case 0:
			b = AppendString(b, c.s)
		case 1:
			b = AppendInt(b, c.i)
		default:
			b = AppendUint(b, c.u)
		}
	}
	return b
}

func compareTuples(a, b []comp) int {
	for k := 0; k < len(a) && k < len(b); k++ {
		x, y := a[k], b[k]
		if x.kind != y.kind {
			return cmp.Compare(x.kind, y.kind)
		}
		var c int
		switch x.kind {
		case 0:
			c = cmp.Compare(x.s, y.s)
		case 1:
			c = cmp.Compare(x.i, y.i)
		default:
			c = cmp.Compare(x.u, y.u)
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func randomTuple(r *rand.Rand) []comp {
	n := 1 + r.IntN(3)
	t := make([]comp, n)
	strs := []string{"", "a", "a\x00", "a\x00b", "\x00", "\xff", "ab", "b", "rounds", "round"}
	ints := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 10, 100, 1 << 40, math.MaxInt64}
	for i := range t {
		switch r.IntN(3) {
		case 0:
			t[i] = comp{kind: 0, s: strs[r.IntN(len(strs))]}
		case 1:
			t[i] = comp{kind: 1, i: ints[r.IntN(len(ints))]}
		default:
			t[i] = comp{kind: 2, u: uint64(ints[r.IntN(len(ints))])}
		}
	}
	return t
}

func TestKeyOrderMatchesTupleOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := randomTuple(r), randomTuple(r)
		want := compareTuples(a, b)
		got := bytes.Compare(encode(a), encode(b))
		if got != want {
			t.Fatalf("order of %q and %q: bytes say %d, tuples %d", encode(a), encode(b), got, want)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		tup := randomTuple(r)
		kr := NewKeyReader(encode(tup))
		for _, c := range tup {
			switch c.kind {
			case 0:
				s, err := kr.String()
				if err != nil || s != c.s {
					t.Fatalf("String() = %q, %v; want %q", s, err, c.s)
				}
			case 1:
				v, err := kr.Int()
				if err != nil || v != c.i {
					t.Fatalf("Int() = %d, %v; want %d", v, err, c.i)
				}
			default:
				v, err := kr.Uint()
				if err != nil || v != c.u {
					t.Fatalf("Uint() = %d, %v; want %d", v, err, c.u)
				}
			}
		}
		if !kr.Done() {
			t.Fatalf("bytes left after reading %v: %x", tup, kr.Rest())
		}
	}
}

func TestKeyReaderRejectsWrongComponents(t *testing.T) {
	if _, err := NewKeyReader(AppendInt(nil, 3)).String(); err == nil {
		t.Fatal("String() read an int component")
	}
	if _, err := NewKeyReader(AppendString(nil, "x")).Int(); err == nil {
		t.Fatal("Int() read a string component")
	}
	if _, err := NewKeyReader([]byte{tagString, 'a'}).String(); err == nil {
		t.Fatal("String() read an unterminated string")
	}
	if _, err := NewKeyReader([]byte{tagInt, 1, 2}).Int(); err == nil {
		t.Fatal("Int() read a short int")
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := map[string]string{"ab": "ac", "a\xff": "b", "\xff\xff": "", "": ""}
	for in, want := range cases {
		got := PrefixEnd([]byte(in))
		if string(got) != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
	// Every key with the prefix sorts before the end.
	p := AppendString(nil, "Game")
	end := PrefixEnd(p)
	for _, k := range [][]byte{p, AppendInt(slices.Clone(p), math.MaxInt64), append(slices.Clone(p), 0xff, 0xff)} {
		if bytes.Compare(k, end) >= 0 {
			t.Errorf("%x is not below PrefixEnd %x", k, end)
		}
	}
}

func FuzzKeyReader(f *testing.F) {
	f.Add(AppendString(AppendInt(nil, -5), "a\x00b"))
	f.Add([]byte{tagString, 0, 0xff})
	f.Add([]byte{tagUint})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Never panics; whatever decodes re-encodes to the same bytes.
		kr := NewKeyReader(b)
		var re []byte
		for !kr.Done() {
			switch kr.Rest()[0] {
			case tagString:
				s, err := kr.String()
				if err != nil {
					return
				}
				re = AppendString(re, s)
			case tagInt:
				v, err := kr.Int()
				if err != nil {
					return
				}
				re = AppendInt(re, v)
			case tagUint:
				v, err := kr.Uint()
				if err != nil {
					return
				}
				re = AppendUint(re, v)
			default:
				return
			}
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("%x decoded and re-encoded as %x", b, re)
		}
	})
}

func TestCursorRoundTripAndTampering(t *testing.T) {
	codec := KeyCodec[string]{Append: func(b []byte, k string) []byte { return AppendString(b, k) }, Read: (*KeyReader).String}
	c := codec.Cursor("Player.List", "rick")
	k, err := codec.After("Player.List", c)
	if err != nil || k != "rick" {
		t.Fatalf("After = %q, %v", k, err)
	}
	if _, err := codec.After("Game.List", c); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor accepted by another query: %v", err)
	}
	raw := []byte(c)
	for i := range raw {
		for _, d := range []byte{1, 2, 4, 32} {
			m := slices.Clone(raw)
			m[i] ^= d
			if string(m) == c {
				continue
			}
			if _, err := codec.After("Player.List", string(m)); !errors.Is(err, ErrBadCursor) {
				t.Fatalf("cursor with byte %d changed (%q) was accepted: %v", i, m, err)
			}
		}
	}
	for n := range len(c) {
		if _, err := codec.After("Player.List", c[:n]); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("cursor truncated to %d chars was accepted", n)
		}
	}
	// A validly signed cursor whose payload is not a key of this codec.
	wrong := EncodeCursor("Player.List", AppendInt(nil, 5))
	if _, err := codec.After("Player.List", wrong); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor with an int position accepted by a string codec: %v", err)
	}
	trailing := EncodeCursor("Player.List", AppendInt(AppendString(nil, "a"), 5))
	if _, err := codec.After("Player.List", trailing); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor with trailing components accepted: %v", err)
	}
}

func TestCursorKey(t *testing.T) {
	old := *cursorKey.Load()
	defer SetCursorKey(old)
	c := EncodeCursor("q", []byte("x"))
	SetCursorKey([]byte("another secret"))
	if _, err := DecodeCursor("q", c); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor signed with the old key accepted: %v", err)
	}
	c2 := EncodeCursor("q", []byte("x"))
	if p, err := DecodeCursor("q", c2); err != nil || string(p) != "x" {
		t.Fatalf("DecodeCursor = %q, %v", p, err)
	}
}

func TestIndexCursor(t *testing.T) {
	q := ElemQuery("Game", "rounds", AppendString(nil, "2345"))
	c := IndexCursor(q, 42)
	if i, err := IndexAfter(q, c); err != nil || i != 42 {
		t.Fatalf("IndexAfter = %d, %v", i, err)
	}
	other := ElemQuery("Game", "rounds", AppendString(nil, "2611"))
	if _, err := IndexAfter(other, c); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("element cursor accepted for another block: %v", err)
	}
	neg := EncodeCursor(q, AppendInt(nil, -1))
	if _, err := IndexAfter(q, neg); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("negative index accepted: %v", err)
	}
}

func FuzzDecodeCursor(f *testing.F) {
	// A fixed key, so that the corpus under testdata/fuzz holds valid
	// cursors whatever the process's random key.
	old := *cursorKey.Load()
	SetCursorKey([]byte("fuzz key"))
	f.Cleanup(func() { SetCursorKey(old) })
	f.Add(EncodeCursor("q", AppendString(nil, "k")))
	f.Add(EncodeCursor("q", AppendInt(nil, 1<<62)))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodeCursor("q", s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			return
		}
		// Only a cursor made for q decodes; it re-encodes identically.
		if EncodeCursor("q", p) != s {
			t.Fatalf("cursor %q decoded but is not canonical", s)
		}
		// A decoded position is in range or rejected, never a panic.
		if v, err := PositionAfter("q", s, 0); err == nil && (v < 0 || v > MaxPosition) {
			t.Fatalf("position %d accepted", v)
		}
	})
}

func TestErrors(t *testing.T) {
	cause := errors.New("socket closed")
	err := Fail("Get", "Game", "2345", ErrNotFound, cause)
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, cause) || errors.Is(err, ErrConflict) {
		t.Fatalf("errors.Is wrong for %v", err)
	}
	if got, want := err.Error(), "noam: Game 2345: Get: not found: socket closed"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	err = FailAt("SetRoundsAt", "Game", "1", "rounds[7]", ErrNotFound, nil)
	if got, want := err.Error(), "noam: Game 1: SetRoundsAt rounds[7]: not found"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	var re *Error
	if !errors.As(err, &re) || re.ID != "1" || re.Aggregate != "Game" {
		t.Fatalf("errors.As: %+v", re)
	}
}

func TestPageRequestSize(t *testing.T) {
	for in, want := range map[int]int{0: DefaultPageLimit, -3: DefaultPageLimit, 7: 7, MaxPageLimit + 1: MaxPageLimit} {
		if got := (PageRequest{Limit: in}).Size(); got != want {
			t.Errorf("Size(%d) = %d, want %d", in, got, want)
		}
	}
}
