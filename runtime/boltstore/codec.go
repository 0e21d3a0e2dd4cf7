package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The bbolt adapter's value codec: BSON values (a type byte, then the
// value's bytes), so that the bson struct tags of nested types apply as on
// MongoDB. Other stores choose their own codec.

// Encode encodes a value with the MongoDB driver's BSON codec: the BSON
// type byte, then the value's bytes.
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

// encodeInt encodes n as Encode(n) does (a BSON int64), without
// reflection: counts and versions are written on every write.
func encodeInt(n int64) []byte {
	b := make([]byte, 9)
	b[0] = byte(bson.TypeInt64)
	binary.LittleEndian.PutUint64(b[1:], uint64(n))
	return b
}

func decodeInt(data []byte) (int64, error) {
	if len(data) != 9 || bson.Type(data[0]) != bson.TypeInt64 {
		return 0, fmt.Errorf("want a BSON int64, have %x", data)
	}
	return int64(binary.LittleEndian.Uint64(data[1:])), nil
}
