package runtime

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"sync/atomic"
)

// A cursor is opaque to callers: base64url(version | payload | mac), where
// payload is the position (an encoded key) and mac is a truncated
// HMAC-SHA256 over the query name and the payload. A cursor that was
// truncated, altered, or made by another query fails the check and is
// rejected with ErrBadCursor. A cursor of a descending page is bound to
// the query's name followed by DescQuery's mark, so that a cursor is
// rejected by a page of the other direction too.
//
// # The cursor key
//
// Cursors are signed with a key drawn at random when the process starts,
// unless SetCursorKey sets one. With the random key nobody can forge a
// cursor, but cursors are only valid in the process that made them: after
// a restart, or on another replica of a service behind a load balancer,
// every earlier cursor is rejected with ErrBadCursor (clients then start
// the listing again from the first page). To keep cursors valid across
// restarts and replicas, call SetCursorKey with the same secret (at least
// 32 random bytes, kept like a password) in every process before serving
// requests. Positions in a cursor are validated after the signature check
// too (see PositionAfter), so that even a forged cursor cannot make a
// listing overflow, allocate without bound or loop.

const (
	cursorVersion = 1
	macLen        = 12
)

var cursorKey atomic.Pointer[[]byte]

func init() {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("noam: no randomness for the cursor key: " + err.Error())
	}
	cursorKey.Store(&k)
}

// SetCursorKey sets the secret that signs cursors, replacing the random
// per-process key (see the package comment on cursor keys). Cursors signed
// with the previous key stop being accepted.
func SetCursorKey(key []byte) {
	k := append([]byte(nil), key...)
	cursorKey.Store(&k)
}

func mac(query string, payload []byte) []byte {
	h := hmac.New(sha256.New, *cursorKey.Load())
	var n [4]byte
	n[0], n[1], n[2], n[3] = byte(len(query)>>24), byte(len(query)>>16), byte(len(query)>>8), byte(len(query))
	h.Write(n[:])
	h.Write([]byte(query))
	h.Write(payload)
	return h.Sum(nil)[:macLen]
}

var cursorEncoding = base64.RawURLEncoding.Strict()

// descMark ends the name of a descending query (DescQuery): no query name
// holds a 0x00 byte.
const descMark = "\x00desc"

// DescQuery is the name cursors of query are bound to when its pages come
// in descending order (PageRequest.Desc): a cursor made for one direction
// fails DecodeCursor in the other with ErrBadCursor.
func DescQuery(query string, desc bool) string {
	if desc {
		return query + descMark
	}
	return query
}

// EncodeCursor makes the cursor for position payload in the named query.
func EncodeCursor(query string, payload []byte) string {
	b := make([]byte, 0, 1+len(payload)+macLen)
	b = append(b, cursorVersion)
	b = append(b, payload...)
	b = append(b, mac(query, payload)...)
	return cursorEncoding.EncodeToString(b)
}

// maxCursorLen bounds the length of a cursor string that is decoded at all.
const maxCursorLen = 64 << 10

// DecodeCursor checks a cursor made by EncodeCursor for the same query and
// returns its payload. Any failure wraps ErrBadCursor. Decoding is strict:
// a string that differs from a cursor EncodeCursor made in any bit
// (padding bits, line breaks and trailing characters included) is rejected.
func DecodeCursor(query, cursor string) ([]byte, error) {
	if len(cursor) > maxCursorLen {
		return nil, fmt.Errorf("%w: too long", ErrBadCursor)
	}
	b, err := cursorEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url: %v", ErrBadCursor, err)
	}
	// The decoder skips CR and LF: only the canonical form is accepted.
	if cursorEncoding.EncodedLen(len(b)) != len(cursor) {
		return nil, fmt.Errorf("%w: not canonical base64url", ErrBadCursor)
	}
	if len(b) < 1+macLen {
		return nil, fmt.Errorf("%w: too short", ErrBadCursor)
	}
	if b[0] != cursorVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadCursor, b[0])
	}
	payload, sum := b[1:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(sum, mac(query, payload)) {
		return nil, fmt.Errorf("%w: checksum mismatch (damaged, made for another query or the other direction, or signed with another cursor key)", ErrBadCursor)
	}
	return payload, nil
}

// MaxPosition is the largest position (element index or counter number)
// a cursor may hold. It leaves room for a page's arithmetic (position +
// MaxPageLimit + 1) so that no listing overflows, whatever a cursor holds.
const MaxPosition = math.MaxInt64 - 2*MaxPageLimit

// PositionAfter decodes a cursor whose payload is one encoded integer (an
// element index or a counter number) and checks that it lies in
// [lo, MaxPosition]: the one place where listings by position validate
// what a cursor holds. Failures wrap ErrBadCursor.
func PositionAfter(query, cursor string, lo int64) (int64, error) {
	p, err := DecodeCursor(query, cursor)
	if err != nil {
		return 0, err
	}
	return positionIn(p, lo, MaxPosition)
}

// positionIn reads a position payload (one encoded integer) and checks
// that it lies in [lo, hi] (hi at most MaxPosition). Failures wrap
// ErrBadCursor.
func positionIn(p []byte, lo, hi int64) (int64, error) {
	r := NewKeyReader(p)
	v, err := r.Int()
	if err != nil || !r.Done() {
		return 0, fmt.Errorf("%w: bad position", ErrBadCursor)
	}
	if v < lo || v > hi || v > MaxPosition || v > math.MaxInt {
		return 0, fmt.Errorf("%w: position %d out of range", ErrBadCursor, v)
	}
	return v, nil
}

// PositionCursor makes the cursor that PositionAfter decodes.
func PositionCursor(query string, pos int64) string {
	return EncodeCursor(query, AppendInt(nil, pos))
}
