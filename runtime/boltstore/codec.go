package boltstore

import "github.com/noamgen/noamgen/runtime/bsonval"

// The bbolt adapter's value codec is runtime/bsonval: BSON values (a type
// byte, then the value's bytes), so that the bson struct tags of nested
// types apply as on MongoDB.

// Encode encodes a value as bsonval.Encode does.
func Encode(v any) ([]byte, error) { return bsonval.Encode(v) }

// Decode decodes a value made by Encode into v, a pointer.
func Decode(data []byte, v any) error { return bsonval.Decode(data, v) }

func encodeInt(n int64) []byte { return bsonval.EncodeInt(n) }

func decodeInt(data []byte) (int64, error) { return bsonval.DecodeInt(data) }
