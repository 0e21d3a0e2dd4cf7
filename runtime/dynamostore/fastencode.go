package dynamostore

import (
	"math"
	"reflect"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime/bsonval"
)

// encodeAV returns v as the attribute value Encode makes through BSON,
// built straight from v with bsonval's plan of its type, and false when it
// cannot (no plan; a value the driver refuses, a double kept as raw BSON or
// a lone "$bson" key: those go through BSON).
func encodeAV(v any) (types.AttributeValue, bool) {
	if v == nil {
		return nil, false
	}
	p, ok := bsonval.PlanOf(reflect.TypeOf(v))
	if !ok {
		return nil, false
	}
	return avOf(p, reflect.ValueOf(v))
}

func avOf(p bsonval.Plan, v reflect.Value) (types.AttributeValue, bool) {
	switch p.Kind() {
	case bsonval.PlanString:
		return &types.AttributeValueMemberS{Value: v.String()}, true
	case bsonval.PlanBool:
		return &types.AttributeValueMemberBOOL{Value: v.Bool()}, true
	case bsonval.PlanInt:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v.Int(), 10)}, true
	case bsonval.PlanUint:
		n := v.Uint()
		if n > math.MaxInt64 {
			return nil, false // the driver's error
		}
		return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}, true
	case bsonval.PlanFloat, bsonval.PlanFloat32:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxNumber || (f != 0 && math.Abs(f) < minNumber) {
			return nil, false // kept as raw BSON
		}
		return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}, true
	case bsonval.PlanSlice:
		if v.IsNil() {
			return &types.AttributeValueMemberNULL{Value: true}, true
		}
		l := make([]types.AttributeValue, v.Len())
		elem := p.Elem()
		for i := range l {
			var ok bool
			if l[i], ok = avOf(elem, v.Index(i)); !ok {
				return nil, false
			}
		}
		return &types.AttributeValueMemberL{Value: l}, true
	case bsonval.PlanStruct:
		m := make(map[string]types.AttributeValue, p.NumFields())
		for i := range p.NumFields() {
			name, index, fp, omitEmpty := p.FieldAt(i)
			fv := v.Field(index)
			if omitEmpty && fp.Empty(fv) {
				continue
			}
			av, ok := avOf(fp, fv)
			if !ok {
				return nil, false
			}
			m[name] = av
		}
		if _, raw := m[rawKey]; raw && len(m) == 1 {
			return nil, false
		}
		return &types.AttributeValueMemberM{Value: m}, true
	}
	return nil, false
}
