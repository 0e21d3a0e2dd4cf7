package dynamostore

import (
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime/bsonval"
)

// decodeAV decodes attribute value av straight into v, a pointer, with
// bsonval's plan of v's type, and reports whether it did: strings are
// taken from the attribute values as they are, where the way through BSON
// copies each twice. It decodes exactly what that way decodes, or gives
// up with v as it was: types without a plan, targets that are not zero
// values, and every attribute value whose BSON form would need one of the
// driver's conversions (a number with a fraction or an exponent into an
// int, an integer into a float, null into a struct, sets, binary, raw
// BSON) go the way through BSON.
func decodeAV(av types.AttributeValue, v any) bool {
	return bsonval.DecodeInto(v, func(p bsonval.Plan, target reflect.Value) bool { return avInto(p, av, target) })
}

// avInto decodes av into v following plan p (see decodeAV).
func avInto(p bsonval.Plan, av types.AttributeValue, v reflect.Value) bool {
	if _, ok := av.(*types.AttributeValueMemberNULL); ok {
		if p.Kind() == bsonval.PlanStruct {
			return false
		}
		v.SetZero()
		return true
	}
	switch p.Kind() {
	case bsonval.PlanString:
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return false
		}
		v.SetString(s.Value)
		return true
	case bsonval.PlanBool:
		b, ok := av.(*types.AttributeValueMemberBOOL)
		if !ok {
			return false
		}
		v.SetBool(b.Value)
		return true
	case bsonval.PlanInt, bsonval.PlanUint:
		n, ok := plainInt(av)
		if !ok {
			return false
		}
		bits := p.Bits()
		if p.Kind() == bsonval.PlanInt {
			if bits < 64 && (n < -1<<(bits-1) || n >= 1<<(bits-1)) {
				return false
			}
			v.SetInt(n)
			return true
		}
		if n < 0 || (bits < 64 && n >= 1<<bits) {
			return false
		}
		v.SetUint(uint64(n))
		return true
	case bsonval.PlanFloat, bsonval.PlanFloat32:
		num, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		if _, isInt := plainInt(av); isInt {
			return false // an int64 in BSON: the driver converts it
		}
		f, err := strconv.ParseFloat(num.Value, 64)
		if err != nil || (f == math.Trunc(f) && math.Abs(f) < 1<<53) {
			return false // an error, or an int64 in BSON
		}
		if p.Kind() == bsonval.PlanFloat32 && float64(float32(f)) != f {
			return false
		}
		v.SetFloat(f)
		return true
	case bsonval.PlanSlice:
		l, ok := av.(*types.AttributeValueMemberL)
		if !ok {
			return false
		}
		bsonval.SetLen(v, len(l.Value))
		elem := p.Elem()
		for i, x := range l.Value {
			e := v.Index(i)
			e.SetZero()
			if !avInto(elem, x, e) {
				return false
			}
		}
		return true
	case bsonval.PlanStruct:
		m, ok := av.(*types.AttributeValueMemberM)
		if !ok {
			return false
		}
		if _, raw := m.Value[rawKey]; raw && len(m.Value) == 1 {
			return false
		}
		for k, x := range m.Value {
			i, fp, ok := p.Field(k)
			if !ok || !avInto(fp, x, v.Field(i)) {
				return false
			}
		}
		return true
	}
	return false
}

// plainInt reads an N attribute written as an integer that fits an int64,
// which the way through BSON makes a BSON int64.
func plainInt(av types.AttributeValue) (int64, bool) {
	num, ok := av.(*types.AttributeValueMemberN)
	if !ok || strings.ContainsAny(num.Value, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(num.Value, 10, 64)
	return n, err == nil
}
