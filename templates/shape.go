package templates

import (
	"fmt"
	"go/types"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime/access"
)

// ExampleKey is the block key explain shows for a, the same on every
// store: 2345 (the paper's game), "2345" for a string key; a composite
// key's parts are 2345, 3, 4, ... ("2345", "3", ... for strings).
func ExampleKey(a *model.Aggregate) []access.KeyValue {
	val := func(t types.Type, n int) any {
		if model.KindOf(t) == model.KeyString {
			return fmt.Sprint(n)
		}
		return int64(n)
	}
	if len(a.IDParts) == 0 {
		return []access.KeyValue{{Value: val(a.ID.Type, 2345)}}
	}
	var out []access.KeyValue
	for i, p := range a.IDParts {
		n := 2345
		if i > 0 {
			n = i + 2
		}
		out = append(out, access.KeyValue{Key: p.Key, Value: val(p.Type, n)})
	}
	return out
}

// TypeText renders a Go type for explain output: names from a's own
// package unqualified, others by package name ([]GameRef, time.Time).
func TypeText(a *model.Aggregate, t types.Type) string {
	var own *types.Package
	if n, ok := a.StructType.(*types.Named); ok {
		own = n.Obj().Pkg()
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p == own {
			return ""
		}
		return p.Name()
	})
}

// ShapeOf is aggregate a as the stores' declarations see it.
func ShapeOf(a *model.Aggregate) *access.Shape {
	s := &access.Shape{Collection: a.Collection, EAO: a.Strategy == model.EAO, Key: ExampleKey(a), Counter: a.Counter}
	for _, f := range a.Fields {
		if f.IsID {
			continue
		}
		af := access.Field{Key: f.Key, Type: TypeText(a, f.Type), Partition: f.Partition, Version: f.IsVersion, Created: f.IsCreated, Updated: f.IsUpdated, Expires: f.IsExpires}
		if f.Partition {
			af.Elem = TypeText(a, f.Elem)
		}
		s.Fields = append(s.Fields, af)
	}
	for _, l := range a.Lookups {
		al := access.Lookup{Name: l.Name, Unique: l.Unique, Table: l.Table, Multi: l.Multi(), Zeros: l.IndexZero}
		for _, p := range l.Parts {
			al.Paths = append(al.Paths, p.Path)
		}
		s.Lookups = append(s.Lookups, al)
	}
	if a.Counter {
		for _, p := range a.Scope() {
			s.Scope = append(s.Scope, p.Key)
		}
	}
	return s
}
