package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// UUID keys (`noam:"id,uuid"`): Create and CreateMany give an aggregate
// whose id is the zero value a new UUID (RFC 9562) and set it, before the
// write, so that a Create retried after ErrUnknownOutcome writes the same
// block (and fails with ErrDuplicate if the first one got through).

// UUIDVersion is the version of the UUIDs a `noam:"id,uuid"` id gets.
type UUIDVersion int

const (
	// UUIDv7 (the default) is time-ordered: the first 48 bits are the Unix
	// time in milliseconds, and the UUIDs one process makes are
	// increasing (a 12-bit sequence orders those of one millisecond), so
	// new blocks land at the end of the key order: List returns them in
	// creation order on stores that list in key order.
	UUIDv7 UUIDVersion = 7
	// UUIDv4 is random: new blocks spread over the key space.
	UUIDv4 UUIDVersion = 4
)

// NewUUID returns a new UUID of version v.
func NewUUID(v UUIDVersion) ([16]byte, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return u, fmt.Errorf("a random UUID: %w", err)
	}
	switch v {
	case UUIDv4:
		u[6] = u[6]&0x0f | 0x40
	case UUIDv7:
		ms, seq := uuidClock.next(time.Now().UnixMilli(), uint16(u[6])<<8|uint16(u[7]))
		for i := range 6 {
			u[i] = byte(ms >> (40 - 8*i))
		}
		u[6] = 0x70 | byte(seq>>8)&0x0f
		u[7] = byte(seq)
	default:
		return u, fmt.Errorf("UUID version %d: want 4 or 7", v)
	}
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	return u, nil
}

// uuidClock orders the version 7 UUIDs of the process (RFC 9562, 6.2,
// method 1: a 12-bit counter in rand_a, seeded at random each millisecond):
// a UUID made in the same millisecond as the last one, or on a clock that
// went back, takes the last one's time and the next sequence number; when
// the sequence overflows, the time moves on by a millisecond.
var uuidClock = &uuidSeq{ms: -1}

type uuidSeq struct {
	sync.Mutex
	ms  int64
	seq uint16
}

// next returns the time and sequence of the next version 7 UUID at now
// (ms), seed a random number seeding the sequence of a new millisecond.
func (c *uuidSeq) next(now int64, seed uint16) (int64, uint16) {
	c.Lock()
	defer c.Unlock()
	if now > c.ms {
		// Half the sequence space is left for the UUIDs that follow in
		// this millisecond.
		c.ms, c.seq = now, seed&0x7ff
		return c.ms, c.seq
	}
	c.seq++
	if c.seq > 0xfff {
		c.ms, c.seq = c.ms+1, 0
	}
	return c.ms, c.seq
}

// UUIDString is u in the canonical form, lower case
// ("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").
func UUIDString(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// UUIDKey returns what makes the UUID ids of an aggregate whose id type
// K is a string (the canonical form) or a [16]byte: generated code sets
// it as Desc.NewID.
func UUIDKey[K comparable](v UUIDVersion) func() (K, error) {
	return func() (K, error) {
		var k K
		u, err := NewUUID(v)
		if err != nil {
			return k, err
		}
		switch p := any(&k).(type) {
		case *string:
			*p = UUIDString(u)
		case *[16]byte:
			*p = u
		default:
			return k, fmt.Errorf("a UUID id of type %T: want a string or a [16]byte", k)
		}
		return k, nil
	}
}

// newIDs gives the aggregates of ts (nil ones left out) whose id is the
// zero value a new one from Desc.NewID.
func (r Repo[T, K]) newIDs(op string, ts ...*T) error {
	if r.D.NewID == nil {
		return nil
	}
	var zero K
	for _, t := range ts {
		if t == nil || *r.D.ID(t) != zero {
			continue
		}
		id, err := r.D.NewID()
		if err != nil {
			return Fail(op, r.D.Aggregate, nil, nil, err)
		}
		*r.D.ID(t) = id
	}
	return nil
}
