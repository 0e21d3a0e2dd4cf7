package bsonval

import (
	"reflect"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// The depth check of stores whose values do not all go through a
// ValueEncoder before they are sent (MongoDB's bson.D commands, DynamoDB's
// attribute values): CheckBlock, CheckUpdate and CheckElem check every
// entry value of a write against the store's Caps.MaxDepth before
// anything is sent. A value whose type bounds its depth (no recursion, no
// interface, no marshaller: most types) is not encoded for it.

// typeDepths caches typeDepth: an int bound, or -1 for none.
var typeDepths sync.Map

var timeType = reflect.TypeFor[time.Time]()

// boundOf returns the deepest nesting a value of type t can have, and
// false when the type does not bound it.
func boundOf(t reflect.Type) (int, bool) {
	if d, ok := typeDepths.Load(t); ok {
		return d.(int), d.(int) >= 0
	}
	d, ok := typeDepth(t, map[reflect.Type]bool{})
	if !ok {
		d = -1
	}
	typeDepths.Store(t, d)
	return d, ok
}

func typeDepth(t reflect.Type, seen map[reflect.Type]bool) (int, bool) {
	if p := planOf(t); p != nil {
		return p.depth, true
	}
	if t == timeType {
		return 0, true
	}
	for _, i := range []reflect.Type{tMarshaler, tValueMarshaler} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return 0, false
		}
	}
	bsonPkg := t.PkgPath() == reflect.TypeFor[bson.D]().PkgPath()
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64, reflect.String:
		return 0, true
	case reflect.Pointer:
		return typeDepth(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && !bsonPkg {
			return 0, true // binary
		}
		if t.Kind() == reflect.Array && bsonPkg && t.Elem().Kind() == reflect.Uint8 {
			return 0, true // bson.ObjectID, ...
		}
		if bsonPkg {
			return 0, false // bson.A, bson.D, bson.Raw: any depth
		}
		d, ok := typeDepth(t.Elem(), seen)
		return 1 + d, ok
	case reflect.Map:
		d, ok := typeDepth(t.Elem(), seen)
		return 1 + d, ok
	case reflect.Struct:
		if seen[t] || bsonPkg {
			return 0, false
		}
		seen[t] = true
		defer delete(seen, t)
		d := 1
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			_, opts, skip, ok := structKey(sf)
			if !ok || sf.Anonymous || opts["inline"] {
				return 0, false
			}
			if skip {
				continue
			}
			fd, ok := typeDepth(sf.Type, seen)
			if !ok {
				return 0, false
			}
			d = max(d, 1+fd)
		}
		return d, true
	}
	return 0, false
}

// nilEmpty encodes values as MongoDB's collections do (a nil slice as an
// empty array, one level more than null), for the check.
var nilEmpty = sync.Pool{New: func() any { return NewValueEncoder(true) }}

// CheckValue fails with a *DepthError when v nests deeper than max
// documents and arrays (a nil slice counted as an empty array): without
// encoding v when its type bounds its depth to max or less.
func CheckValue(v any, max int) error {
	if v == nil {
		return nil
	}
	if d, ok := boundOf(reflect.TypeOf(v)); ok && d <= max {
		return nil
	}
	e := nilEmpty.Get().(*ValueEncoder)
	e.SetMaxDepth(max)
	_, _, err := e.Encode(v)
	if err == nil && !e.Large() {
		nilEmpty.Put(e)
	}
	if _, deep := err.(*DepthError); deep {
		return err
	}
	return nil // not a depth problem: the write's own encoding reports it
}

// tooDeep is the error of a write whose entry nests too deep.
func tooDeep(op, agg string, id any, entry string, err error) error {
	return runtime.FailAt(op, agg, id, "entry "+entry, runtime.ErrTooLarge, err)
}

// CheckBlock fails with a *runtime.Error of kind runtime.ErrTooLarge,
// naming the entry and the limit, when an entry of block t (a top-level
// field, an element of a partition, the EAO root) nests deeper than max.
func CheckBlock[T any, K comparable](op string, d *runtime.Desc[T, K], t *T, max int) error {
	id := *d.ID(t)
	if d.EAO && d.Root != nil {
		if err := CheckValue(d.Root.Value(t), max); err != nil {
			return tooDeep(op, d.Aggregate, id, "(root)", err)
		}
	}
	for _, f := range d.Fields {
		switch {
		case f.Kind == runtime.KindPartition:
			for i := range f.Len(t) {
				if err := CheckValue(f.Elem(t, i), max); err != nil {
					return tooDeep(op, d.Aggregate, id, f.ElemKey(i), err)
				}
			}
		case !d.EAO:
			if err := CheckValue(f.Value(t), max); err != nil {
				return tooDeep(op, d.Aggregate, id, f.Key, err)
			}
		}
	}
	return nil
}

// CheckUpdate is CheckBlock for the changes of an update of block id: a
// whole partition's value is checked one level deeper (its array).
func CheckUpdate[T any, K comparable](op string, d *runtime.Desc[T, K], id K, u runtime.Update[T], max int) error {
	for _, c := range u.Changes {
		if c.Add {
			continue // an integer
		}
		limit, entry := max, c.Field.Key
		switch {
		case c.Elem:
			entry = c.Entry()
		case c.Field.Kind == runtime.KindPartition:
			limit++
		case c.Field.Kind == runtime.KindRoot:
			entry = "(root)"
		}
		if err := CheckValue(c.Value, limit); err != nil {
			return tooDeep(op, d.Aggregate, id, entry, err)
		}
	}
	return nil
}

// CheckElem is CheckBlock for an element appended to partition f.
func CheckElem[T any, K comparable](op string, d *runtime.Desc[T, K], id K, f *runtime.Field[T], elem any, max int) error {
	if err := CheckValue(elem, max); err != nil {
		return tooDeep(op, d.Aggregate, id, f.Key, err)
	}
	return nil
}
