package parser

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"

	"github.com/noamgen/noamgen/model"
)

// lookupSpec is one field's lookup tag, before lookups are grouped by name.
type lookupSpec struct {
	pos          token.Pos
	tag          string
	named        bool
	name         string
	unique       bool
	zeros        bool
	table        bool
	path, goPath string
	typ          types.Type
	field        *model.Field
	multi        bool
}

// lookupSpec is the lookup the tag asks for on the value at path (of type
// t). A lookup on a slice of scalars indexes every element.
func (t *tagSpec) lookupSpec(pos token.Pos, path, goPath string, typ types.Type) lookupSpec {
	lk := lookupSpec{pos: pos, tag: t.text, named: t.lookupName != "", name: t.lookupName, unique: t.unique, zeros: t.zeros, table: t.table,
		path: path, goPath: goPath, typ: typ}
	if sl, ok := typ.Underlying().(*types.Slice); ok && !isByteSlice(typ) {
		lk.typ, lk.path, lk.goPath, lk.multi = sl.Elem(), lk.path+"[]", lk.goPath+"[]", true
	}
	return lk
}

// nested finds `noam:"ref=T"` and `noam:"lookup"` fields inside the value
// type t (struct types declared in this package, through slices, arrays and
// pointers). path and goPath lead to t from the aggregate. The tags'
// problems are reported where the struct type is declared, not here.
func (p *loader) nested(t types.Type, path, goPath string, seen map[types.Type]bool) ([]model.Ref, []lookupSpec) {
	if seen[t] {
		return nil, nil
	}
	seen[t] = true
	defer delete(seen, t)
	switch u := t.(type) {
	case *types.Pointer:
		return p.nested(u.Elem(), path, goPath, seen)
	case *types.Slice:
		refs, specs := p.nested(u.Elem(), path+"[]", goPath+"[]", seen)
		for i := range specs {
			specs[i].multi = true
		}
		return refs, specs
	case *types.Array:
		refs, specs := p.nested(u.Elem(), path+"[]", goPath+"[]", seen)
		for i := range specs {
			specs[i].multi = true
		}
		return refs, specs
	case *types.Map:
		// Values inside a map cannot be indexed, nor their refs followed:
		// a tag there would be ignored, so it is an error.
		refs, specs := p.nested(u.Elem(), path+"{}", goPath+"{}", seen)
		for _, r := range refs {
			p.inMap(r.Pos, "ref="+r.Target, r.GoPath, goPath)
		}
		for _, sp := range specs {
			p.inMap(p.position(sp.pos), "lookup", sp.goPath, goPath)
		}
		return nil, nil
	case *types.Named:
		if u.Obj().Pkg() == nil || u.Obj().Pkg().Path() != p.pkg.PkgPath {
			return nil, nil
		}
		st, ok := u.Underlying().(*types.Struct)
		if !ok {
			return nil, nil
		}
		var refs []model.Ref
		var specs []lookupSpec
		for i := 0; i < st.NumFields(); i++ {
			fv := st.Field(i)
			raw := st.Tag(i)
			if !fv.Exported() {
				continue
			}
			if _, _, err := lookupTag(raw, "noam"); err != nil {
				continue
			}
			bname := bsonName(raw)
			if bname == "-" {
				continue
			}
			key := lowerFirst(fv.Name())
			if bname != "" {
				key = bname
			}
			fpath, fgo := path+"."+key, goPath+"."+fv.Name()
			if v, ok, _ := lookupTag(raw, "noam"); ok {
				nt, _ := parseTag(v)
				if nt.skip {
					continue
				}
				for _, r := range nt.refs {
					refs = append(refs, model.Ref{Path: fpath, GoPath: fgo, Target: r, Type: fv.Type(), Pos: p.position(fv.Pos()), Decl: u.Obj().Name() + "." + fv.Name()})
				}
				if nt.lookup {
					specs = append(specs, nt.lookupSpec(fv.Pos(), fpath, fgo, fv.Type()))
				}
			}
			r, s := p.nested(fv.Type(), fpath, fgo, seen)
			refs = append(refs, r...)
			specs = append(specs, s...)
		}
		return refs, specs
	}
	return nil, nil
}

// buildLookups groups lookup tags by name into the aggregate's lookups:
// fields sharing a name are the parts of one composite lookup, in field order.
func (p *loader) buildLookups(a *model.Aggregate, specs []lookupSpec) {
	byName := map[string]*model.Lookup{}
	first := map[string]lookupSpec{}
	for _, sp := range specs {
		name, title := sp.name, exported(sp.name)
		if !sp.named {
			name, title = camel(sp.path), goTitle(sp.goPath)
		}
		if !isKeyType(sp.typ) {
			p.errorf(sp.pos, "lookup on %s.%s (type %s): lookup values must be strings or integers", a.Name, strings.ReplaceAll(sp.goPath, "[]", ""), p.typeString(sp.typ))
			continue
		}
		l := byName[name]
		if l == nil {
			l = &model.Lookup{Name: name, Title: title, Pos: p.position(sp.pos), Unique: sp.unique, IndexZero: sp.zeros, Table: sp.table}
			byName[name] = l
			first[name] = sp
			a.Lookups = append(a.Lookups, l)
		} else {
			// A composite lookup is unique (or indexes zero values) as a
			// whole: every part says so, or none.
			f := first[name]
			part := func(s lookupSpec) string { return a.Name + "." + strings.ReplaceAll(s.goPath, "[]", "") }
			for _, opt := range []struct {
				name      string
				was, this bool
			}{{"unique", f.unique, sp.unique}, {"zeros", f.zeros, sp.zeros}, {"table", f.table, sp.table}} {
				if opt.was != opt.this {
					with, without := f, sp
					if opt.this {
						with, without = sp, f
					}
					p.errorf(sp.pos, "lookup %s of %s has %s on %s but not on %s; a composite lookup is %s as a whole: tag every part `noam:\"lookup=%s,%s\"` or none", name, a.Name, opt.name, part(with), part(without), map[string]string{"unique": "unique", "zeros": "indexing zero values", "table": "kept in an index table"}[opt.name], name, map[string]string{"unique": "unique", "zeros": "unique,zeros", "table": "table"}[opt.name])
				}
			}
		}
		l.Parts = append(l.Parts, model.LookupPart{
			Path: sp.path, GoPath: sp.goPath, Name: exported(camel(sp.goPath)), Type: sp.typ, Field: sp.field, Multi: sp.multi,
		})
	}
	titles := map[string]*model.Lookup{}
	for _, l := range a.Lookups {
		if prev := titles[l.Title]; prev != nil {
			methods := "ListBy" + l.Title
			if prev.Unique || l.Unique {
				methods += ", GetBy" + l.Title
			}
			p.errs = append(p.errs, model.Error{Pos: l.Pos, Msg: fmt.Sprintf("lookups %s and %s of %s would both generate %s; name one of them (lookup=NAME)", prev.Name, l.Name, a.Name, methods)})
		}
		titles[l.Title] = l
		if len(l.Parts) > 1 {
			// The query type has a field per part and a method per part
			// and condition (StarsGte): neither may shadow the other.
			fields := map[string]bool{}
			for _, pt := range l.Parts {
				fields[pt.Name] = true
			}
			for _, pt := range l.Parts {
				for _, op := range []string{"Eq", "Gt", "Gte", "Lt", "Lte", "Between"} {
					if fields[pt.Name+op] {
						p.errs = append(p.errs, model.Error{Pos: l.Pos, Msg: fmt.Sprintf("lookup %s of %s has parts %s and %s: the query's method %s%s would clash with the field %s%s; rename one of the fields", l.Name, a.Name, pt.Name, pt.Name+op, pt.Name, op, pt.Name, op)})
					}
				}
			}
		}
		if len(l.Parts) > 1 && l.Multi() {
			p.errs = append(p.errs, model.Error{Pos: l.Pos, Msg: fmt.Sprintf("lookup %s of %s has several parts and one of them is inside a slice; a composite lookup needs one value per part", l.Name, a.Name)})
		}
		if !token.IsIdentifier(l.Name) {
			p.errs = append(p.errs, model.Error{Pos: l.Pos, Msg: fmt.Sprintf("lookup name %q of %s is not a valid identifier", l.Name, a.Name)})
		}
	}
}

// inMap reports a ref or lookup reached through a map, once per position.
func (p *loader) inMap(pos token.Position, what, goPath, mapPath string) {
	strip := strings.NewReplacer("{}", "", "[]", "")
	msg := fmt.Sprintf("%s on %s is inside the values of the map %s, which are neither indexed nor checked as refs; hold them in a slice, or remove the tag", what, strip.Replace(goPath), strip.Replace(mapPath))
	key := pos.String() + msg
	if p.inMapSeen == nil {
		p.inMapSeen = map[string]bool{}
	}
	if !p.inMapSeen[key] {
		p.inMapSeen[key] = true
		p.errs = append(p.errs, model.Error{Pos: pos, Msg: msg})
	}
}
