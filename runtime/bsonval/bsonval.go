// Package bsonval is the project's value codec for stores that keep one
// value per entry and have no value types of their own (bbolt, Redis): a
// value is its BSON type byte followed by the BSON bytes of the value, so
// that the bson struct tags of nested types apply as they do on MongoDB and
// a value round-trips identically on every store.
package bsonval

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Encode encodes v with the MongoDB driver's BSON codec: the BSON type
// byte, then the value's bytes.
func Encode(v any) ([]byte, error) {
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+len(data))
	out[0] = byte(t)
	copy(out[1:], data)
	return out, nil
}

// Decode decodes a value made by Encode into v, a pointer.
func Decode(data []byte, v any) error {
	if len(data) == 0 {
		return errors.New("empty value")
	}
	return bson.UnmarshalValue(bson.Type(data[0]), data[1:], v)
}

// EncodeInt encodes n as Encode(n) does (a BSON int64), without
// reflection: counts and versions are written on every write.
func EncodeInt(n int64) []byte {
	b := make([]byte, 9)
	b[0] = byte(bson.TypeInt64)
	binary.LittleEndian.PutUint64(b[1:], uint64(n))
	return b
}

// DecodeInt decodes a value made by EncodeInt.
func DecodeInt(data []byte) (int64, error) {
	if len(data) != 9 || bson.Type(data[0]) != bson.TypeInt64 {
		return 0, fmt.Errorf("want a BSON int64, have %x", data)
	}
	return int64(binary.LittleEndian.Uint64(data[1:])), nil
}
