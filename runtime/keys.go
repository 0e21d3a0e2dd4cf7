package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// The key codec encodes tuples of strings and integers so that comparing
// encodings byte by byte orders them like the tuples: component by
// component, strings by bytes, integers numerically, and a tuple before any
// longer tuple it is a prefix of. Key-value stores use it for the NoAM
// major/minor key (collection, block key, entry key steps), and cursors use
// it for positions.
//
//	string: 0x02, bytes with 0x00 written as 0x00 0xFF, then 0x00
//	int64:  0x03, 8 bytes big-endian with the sign bit flipped
//	uint64: 0x04, 8 bytes big-endian
const (
	tagString = 0x02
	tagInt    = 0x03
	tagUint   = 0x04
)

// AppendString appends an encoded string component.
func AppendString(b []byte, s string) []byte {
	b = append(b, tagString)
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == 0 {
			b = append(b, 0xFF)
		}
	}
	return append(b, 0)
}

// AppendInt appends an encoded signed integer component.
func AppendInt(b []byte, v int64) []byte {
	b = append(b, tagInt)
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

// AppendUint appends an encoded unsigned integer component.
func AppendUint(b []byte, v uint64) []byte {
	b = append(b, tagUint)
	return binary.BigEndian.AppendUint64(b, v)
}

// hasZeroPart reports whether the encoded tuple k has a zero component:
// the empty string (0x02 0x00), the integer 0 or the unsigned 0. It reads
// the encoding in place, without decoding a component; a malformed tuple
// has none.
func hasZeroPart(k []byte) bool {
	for len(k) > 0 {
		switch k[0] {
		case tagString:
			end := 1
			for end < len(k) && (k[end] != 0 || end+1 < len(k) && k[end+1] == 0xFF) {
				if k[end] == 0 {
					end++ // an escaped 0 byte
				}
				end++
			}
			if end == len(k) {
				return false
			}
			if end == 1 {
				return true
			}
			k = k[end+1:]
		case tagInt, tagUint:
			if len(k) < 9 {
				return false
			}
			zero := uint64(0)
			if k[0] == tagInt {
				zero = 1 << 63
			}
			if binary.BigEndian.Uint64(k[1:9]) == zero {
				return true
			}
			k = k[9:]
		default:
			return false
		}
	}
	return false
}

// KeyReader decodes components from an encoded key, in order.
type KeyReader struct {
	b []byte
}

// NewKeyReader reads the components of b.
func NewKeyReader(b []byte) *KeyReader { return &KeyReader{b: b} }

// Done reports whether every component has been read.
func (r *KeyReader) Done() bool { return len(r.b) == 0 }

// Rest is what has not been read yet.
func (r *KeyReader) Rest() []byte { return r.b }

// String reads a string component.
func (r *KeyReader) String() (string, error) {
	if len(r.b) == 0 || r.b[0] != tagString {
		return "", r.bad("string")
	}
	out := make([]byte, 0, len(r.b))
	for i := 1; i < len(r.b); i++ {
		c := r.b[i]
		if c != 0 {
			out = append(out, c)
			continue
		}
		if i+1 < len(r.b) && r.b[i+1] == 0xFF {
			out = append(out, 0)
			i++
			continue
		}
		r.b = r.b[i+1:]
		return string(out), nil
	}
	return "", r.bad("terminated string")
}

// Int reads a signed integer component.
func (r *KeyReader) Int() (int64, error) {
	if len(r.b) < 9 || r.b[0] != tagInt {
		return 0, r.bad("int")
	}
	v := binary.BigEndian.Uint64(r.b[1:9]) ^ (1 << 63)
	r.b = r.b[9:]
	return int64(v), nil
}

// Uint reads an unsigned integer component.
func (r *KeyReader) Uint() (uint64, error) {
	if len(r.b) < 9 || r.b[0] != tagUint {
		return 0, r.bad("uint")
	}
	v := binary.BigEndian.Uint64(r.b[1:9])
	r.b = r.b[9:]
	return v, nil
}

func (r *KeyReader) bad(want string) error {
	return fmt.Errorf("key codec: want %s component at %x", want, r.b)
}

// PrefixEnd returns the smallest key greater than every key that starts
// with prefix (nil if there is none), for range scans.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// KeyCodec encodes and decodes one aggregate's block keys; generated code
// declares one per aggregate.
type KeyCodec[K any] struct {
	Append func(b []byte, k K) []byte
	Read   func(r *KeyReader) (K, error)
}

// Bytes encodes k alone.
func (c KeyCodec[K]) Bytes(k K) []byte { return c.Append(nil, k) }

// Cursor makes the opaque cursor that resumes query after key k.
func (c KeyCodec[K]) Cursor(query string, k K) string {
	return EncodeCursor(query, c.Append(nil, k))
}

// After decodes a cursor made by Cursor for the same query. Failures wrap ErrBadCursor.
func (c KeyCodec[K]) After(query, cursor string) (K, error) {
	var zero K
	p, err := DecodeCursor(query, cursor)
	if err != nil {
		return zero, err
	}
	r := NewKeyReader(p)
	k, err := c.Read(r)
	if err != nil || !r.Done() {
		return zero, fmt.Errorf("%w: bad position", ErrBadCursor)
	}
	return k, nil
}

// IndexCursor makes the cursor that resumes an element listing of one block
// (query names the block) at element index next.
func IndexCursor(query string, next int) string {
	return EncodeCursor(query, AppendInt(nil, int64(next)))
}

// IndexAfter decodes an IndexCursor cursor: an index in [0, MaxPosition]
// (see PositionAfter). Failures wrap ErrBadCursor.
func IndexAfter(query, cursor string) (int, error) {
	v, err := PositionAfter(query, cursor, 0)
	return int(v), err
}

// Ptr returns a pointer to v, for filling Update values: Ptr(42).
func Ptr[T any](v T) *T { return &v }

// ElemQuery names the element listing of one partitioned field of one block
// (blockKey is the encoded block key), so that its cursors work only there.
func ElemQuery(agg, field string, blockKey []byte) string {
	return agg + "." + field + ":" + string(blockKey)
}

// SortKeys sorts encoded keys and removes duplicates, in place.
func SortKeys(keys [][]byte) [][]byte {
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

// TupleEnd returns the end of the key range holding the tuple p and every
// longer tuple that starts with p's components: p followed by 0xFF. (A byte
// prefix is not enough: "a" encodes as a prefix of "a\x00", whose escaped
// NUL continues with 0xFF; component tags are all below 0xFF.)
func TupleEnd(p []byte) []byte {
	return append(append(make([]byte, 0, len(p)+1), p...), 0xFF)
}

// StringKeys is the key codec of a string block key type.
func StringKeys[K ~string]() KeyCodec[K] {
	return KeyCodec[K]{
		Append: func(b []byte, k K) []byte { return AppendString(b, string(k)) },
		Read: func(r *KeyReader) (K, error) {
			s, err := r.String()
			return K(s), err
		},
	}
}

// IntKeys is the key codec of a signed integer block key type.
func IntKeys[K ~int | ~int8 | ~int16 | ~int32 | ~int64]() KeyCodec[K] {
	return KeyCodec[K]{
		Append: func(b []byte, k K) []byte { return AppendInt(b, int64(k)) },
		Read: func(r *KeyReader) (K, error) {
			v, err := r.Int()
			if err == nil && int64(K(v)) != v {
				err = fmt.Errorf("key %d out of range", v)
			}
			return K(v), err
		},
	}
}

// UintKeys is the key codec of an unsigned integer block key type.
func UintKeys[K ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64]() KeyCodec[K] {
	return KeyCodec[K]{
		Append: func(b []byte, k K) []byte { return AppendUint(b, uint64(k)) },
		Read: func(r *KeyReader) (K, error) {
			v, err := r.Uint()
			if err == nil && uint64(K(v)) != v {
				err = fmt.Errorf("key %d out of range", v)
			}
			return K(v), err
		},
	}
}
