package dynamostore

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/noamgen/noamgen/runtime/bsonval"
)

// Values are native DynamoDB attribute values, so that an item reads
// naturally in the AWS console: a Go value is first encoded with the BSON
// codec (so that bson struct tags name nested fields, as on every store),
// then each BSON value becomes its DynamoDB counterpart: strings S,
// numbers N, booleans BOOL, documents M, arrays L, binary B, null NULL,
// times S in RFC 3339 with milliseconds (UTC). The few values DynamoDB has
// no counterpart for (NaN, infinite doubles and doubles beyond N's range
// of 1e-130 to 1e126, ObjectIDs, decimals, ...) and maps with an empty key
// (DynamoDB refuses empty attribute names) are kept as
// M {"$bson": B(type byte + BSON bytes)}. Decoding goes back to BSON and
// through the BSON decoder into the Go value, except where decodeAV
// (fastdecode.go) reads the attribute values straight into it.

// rawKey marks a value kept as raw BSON.
const rawKey = "$bson"

// The magnitudes an N attribute holds (DynamoDB's "Number" data type).
const (
	maxNumber = 9.9999999999999999999999999999999999999e125
	minNumber = 1e-130
)

// timeLayout is how times are written: what the BSON decoder parses back.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Encode returns v as a DynamoDB attribute value.
func Encode(v any) (types.AttributeValue, error) {
	if av, ok := encodeAV(v); ok {
		return av, nil
	}
	b, err := bsonval.Encode(v) // bson.MarshalValue's bytes, after the type byte
	if err != nil {
		return nil, err
	}
	return fromBSON(bsoncore.Value{Type: bsoncore.Type(b[0]), Data: b[1:]})
}

func fromBSON(v bsoncore.Value) (types.AttributeValue, error) {
	switch v.Type {
	case bsoncore.TypeString:
		s, ok := v.StringValueOK()
		if !ok {
			return nil, errors.New("malformed BSON string")
		}
		return &types.AttributeValueMemberS{Value: s}, nil
	case bsoncore.TypeInt32:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v.Int32()), 10)}, nil
	case bsoncore.TypeInt64:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v.Int64(), 10)}, nil
	case bsoncore.TypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxNumber || (f != 0 && math.Abs(f) < minNumber) {
			return raw(v), nil // outside what an N attribute holds
		}
		return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}, nil
	case bsoncore.TypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case bsoncore.TypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case bsoncore.TypeDateTime:
		ms := v.DateTime()
		return &types.AttributeValueMemberS{Value: time.UnixMilli(ms).UTC().Format(timeLayout)}, nil
	case bsoncore.TypeBinary:
		sub, b := v.Binary()
		if sub != 0 || len(b) == 0 {
			return raw(v), nil
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	case bsoncore.TypeEmbeddedDocument:
		elems, err := v.Document().Elements()
		if err != nil {
			return nil, err
		}
		m := make(map[string]types.AttributeValue, len(elems))
		for _, e := range elems {
			if e.Key() == "" || (e.Key() == rawKey && len(elems) == 1) {
				// DynamoDB refuses empty attribute names, also in maps;
				// a lone "$bson" key would read as a raw value.
				return raw(v), nil
			}
			av, err := fromBSON(e.Value())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Key(), err)
			}
			m[e.Key()] = av
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case bsoncore.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return nil, err
		}
		l := make([]types.AttributeValue, len(vals))
		for i, x := range vals {
			av, err := fromBSON(x)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return raw(v), nil
}

func raw(v bsoncore.Value) types.AttributeValue {
	b := append([]byte{byte(v.Type)}, v.Data...)
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{rawKey: &types.AttributeValueMemberB{Value: b}}}
}

// appendBSON appends the bytes of attribute value av converted back to a
// BSON value to dst, and returns the value's type. The whole value is
// built in dst (a game's rounds are one buffer, not one per string).
func appendBSON(dst []byte, av types.AttributeValue) ([]byte, bsoncore.Type, error) {
	switch a := av.(type) {
	case *types.AttributeValueMemberS:
		return bsoncore.AppendString(dst, a.Value), bsoncore.TypeString, nil
	case *types.AttributeValueMemberN:
		return appendNumber(dst, a.Value)
	case *types.AttributeValueMemberBOOL:
		return bsoncore.AppendBoolean(dst, a.Value), bsoncore.TypeBoolean, nil
	case *types.AttributeValueMemberNULL:
		return dst, bsoncore.TypeNull, nil
	case *types.AttributeValueMemberB:
		return bsoncore.AppendBinary(dst, 0, a.Value), bsoncore.TypeBinary, nil
	case *types.AttributeValueMemberM:
		if r, ok := a.Value[rawKey].(*types.AttributeValueMemberB); ok && len(a.Value) == 1 && len(r.Value) > 0 {
			return append(dst, r.Value[1:]...), bsoncore.Type(r.Value[0]), nil
		}
		var buf [16]string
		keys := buf[:0]
		for k := range a.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		idx, dst := bsoncore.AppendDocumentStart(dst)
		for _, k := range keys {
			at := len(dst)
			dst = append(append(append(dst, 0), k...), 0)
			var t bsoncore.Type
			var err error
			if dst, t, err = appendBSON(dst, a.Value[k]); err != nil {
				return dst, 0, fmt.Errorf("%s: %w", k, err)
			}
			dst[at] = byte(t)
		}
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		return dst, bsoncore.TypeEmbeddedDocument, nil
	case *types.AttributeValueMemberL:
		return appendArray(dst, len(a.Value), func(dst []byte, i int) ([]byte, bsoncore.Type, error) {
			return appendBSON(dst, a.Value[i])
		})
	case *types.AttributeValueMemberSS:
		return appendArray(dst, len(a.Value), func(dst []byte, i int) ([]byte, bsoncore.Type, error) {
			return bsoncore.AppendString(dst, a.Value[i]), bsoncore.TypeString, nil
		})
	case *types.AttributeValueMemberNS:
		return appendArray(dst, len(a.Value), func(dst []byte, i int) ([]byte, bsoncore.Type, error) {
			return appendNumber(dst, a.Value[i])
		})
	case *types.AttributeValueMemberBS:
		return appendArray(dst, len(a.Value), func(dst []byte, i int) ([]byte, bsoncore.Type, error) {
			return bsoncore.AppendBinary(dst, 0, a.Value[i]), bsoncore.TypeBinary, nil
		})
	case nil:
		return dst, 0, errors.New("no value")
	}
	return dst, 0, fmt.Errorf("unsupported attribute value %T", av)
}

func appendArray(dst []byte, n int, at func([]byte, int) ([]byte, bsoncore.Type, error)) ([]byte, bsoncore.Type, error) {
	idx, dst := bsoncore.AppendArrayStart(dst)
	for i := range n {
		at0 := len(dst)
		dst = append(strconv.AppendInt(append(dst, 0), int64(i), 10), 0)
		var t bsoncore.Type
		var err error
		if dst, t, err = at(dst, i); err != nil {
			return dst, 0, fmt.Errorf("[%d]: %w", i, err)
		}
		dst[at0] = byte(t)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst, bsoncore.TypeArray, nil
}

// appendNumber appends an integer (int64) when s has no fraction and
// fits, a double otherwise.
func appendNumber(dst []byte, s string) ([]byte, bsoncore.Type, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return bsoncore.AppendInt64(dst, n), bsoncore.TypeInt64, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return dst, 0, fmt.Errorf("number %q: %w", s, err)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return bsoncore.AppendInt64(dst, int64(f)), bsoncore.TypeInt64, nil
	}
	return bsoncore.AppendDouble(dst, f), bsoncore.TypeDouble, nil
}

// Decode decodes attribute value av into v, a pointer.
func Decode(av types.AttributeValue, v any) error {
	if decodeAV(av, v) {
		return nil
	}
	b, t, err := appendBSON(nil, av)
	if err != nil {
		return err
	}
	return bsonval.DecodeValue(bson.Type(t), b, v)
}

// decoder is the runtime.Decoder of one attribute value.
type decoder struct{ av types.AttributeValue }

func (d *decoder) Decode(v any) error {
	switch p := v.(type) {
	case *string:
		if s, ok := d.av.(*types.AttributeValueMemberS); ok {
			*p = s.Value
			return nil
		}
	case *int64:
		if n, ok := d.av.(*types.AttributeValueMemberN); ok {
			if x, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				*p = x
				return nil
			}
		}
	case *bool:
		if b, ok := d.av.(*types.AttributeValueMemberBOOL); ok {
			*p = b.Value
			return nil
		}
	}
	return Decode(d.av, v)
}

// num is an N attribute value.
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// intOf reads an N attribute value (0 when absent).
func intOf(av types.AttributeValue) (int64, error) {
	if av == nil {
		return 0, nil
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("want a number, have %T", av)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}

// itemSize is DynamoDB's size of an item: attribute names and values
// (docs: "Item sizes and formats").
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(av types.AttributeValue) int {
	switch a := av.(type) {
	case *types.AttributeValueMemberS:
		return len(a.Value)
	case *types.AttributeValueMemberN:
		return (len(a.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(a.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, v := range a.Value {
			n += len(k) + valueSize(v) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, v := range a.Value {
			n += valueSize(v) + 1
		}
		return n
	}
	return 0
}
