// Package token makes the random tokens store adapters record with a
// write (redisstore's script runs, dynamostore's updates), so that a
// resend of a write already applied is recognized instead of applied
// twice.
package token

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a fresh random token: 12 random bytes in lower-case hex.
func New() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
