package runtime

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync/atomic"
)

// A cursor is opaque to callers: base64url(version | payload | mac), where
// payload is the position (an encoded key) and mac is a truncated
// HMAC-SHA256 over the query name and the payload. A cursor that was
// truncated, altered, or made by another query fails the check and is
// rejected with ErrBadCursor.

const (
	cursorVersion = 1
	macLen        = 12
)

var cursorKey atomic.Pointer[[]byte]

func init() {
	k := []byte("noamgen cursor key v1")
	cursorKey.Store(&k)
}

// SetCursorKey sets the secret that signs cursors. With the default key,
// cursors are checked for accidental damage and misuse across queries; set a
// private key to keep clients from forging positions. Cursors signed with
// the previous key stop being accepted.
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

// EncodeCursor makes the cursor for position payload in the named query.
func EncodeCursor(query string, payload []byte) string {
	b := make([]byte, 0, 1+len(payload)+macLen)
	b = append(b, cursorVersion)
	b = append(b, payload...)
	b = append(b, mac(query, payload)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor checks a cursor made by EncodeCursor for the same query and
// returns its payload. Any failure wraps ErrBadCursor.
func DecodeCursor(query, cursor string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url: %v", ErrBadCursor, err)
	}
	if len(b) < 1+macLen {
		return nil, fmt.Errorf("%w: too short", ErrBadCursor)
	}
	if b[0] != cursorVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadCursor, b[0])
	}
	payload, sum := b[1:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(sum, mac(query, payload)) {
		return nil, fmt.Errorf("%w: checksum mismatch (damaged, or made for another query)", ErrBadCursor)
	}
	return payload, nil
}
