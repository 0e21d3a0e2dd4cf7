package parser

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/noamgen/noamgen/model"
)

// structDecl is one struct type declared at package level, with the noam
// tag of each of its fields (nil where a field has none).
type structDecl struct {
	spec *ast.TypeSpec
	st   *ast.StructType
	file string
	tags []*tagSpec // parallel to st.Fields.List
}

// marker returns the index of the first field carrying the aggregate
// option, or -1 when the struct is not an aggregate.
func (d structDecl) marker() int {
	for i, t := range d.tags {
		if t != nil && t.aggregate {
			return i
		}
	}
	return -1
}

func (p *loader) schema() *model.Schema {
	s := &model.Schema{PkgPath: p.pkg.PkgPath, PkgName: p.pkg.Name}
	if len(p.pkg.GoFiles) > 0 {
		s.Dir = filepath.Dir(p.pkg.GoFiles[0])
	}
	var decls []structDecl
	for _, f := range p.pkg.Syntax {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, sp := range gd.Specs {
				ts := sp.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					d := structDecl{spec: ts, st: st, file: p.pkg.Fset.Position(f.Pos()).Filename}
					for _, fld := range st.Fields.List {
						d.tags = append(d.tags, p.fieldTag(ts.Name.Name, fld))
						p.anonymousTags(fld.Type)
					}
					decls = append(decls, d)
				}
			}
		}
	}
	for _, d := range decls {
		if m := d.marker(); m >= 0 {
			if a := p.aggregate(d, m); a != nil {
				s.Aggregates = append(s.Aggregates, a)
			}
		} else {
			p.plainStruct(d)
		}
	}
	p.checkRefs(s)
	p.checkCollections(s)
	s.Decls = p.decls(s.Dir)
	return s
}

// anonymousTags reports noam tags inside struct types written in place
// (Address struct{ City string `noam:"lookup"` }): only the fields of
// declared struct types are read, so such a tag would be ignored.
func (p *loader) anonymousTags(t ast.Expr) {
	ast.Inspect(t, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		for _, f := range st.Fields.List {
			if raw := rawTag(f); strings.Contains(raw, "noam:") {
				if v, ok, err := lookupTag(raw, "noam"); err == nil && ok {
					p.errorf(f.Tag.Pos(), "noam tag `noam:%q` in a struct type written in place would be ignored; declare the struct type (type T struct{...}) and use it", v)
				}
			}
		}
		return true
	})
}

// fieldTag returns a field's parsed noam tag, or nil when it has none. A
// malformed struct tag and the noam tag's own problems are reported at the
// tag.
func (p *loader) fieldTag(structName string, f *ast.Field) *tagSpec {
	raw := rawTag(f)
	if !strings.Contains(raw, "noam:") {
		return nil
	}
	v, ok, err := lookupTag(raw, "noam")
	if err != nil {
		p.errorf(f.Tag.Pos(), "malformed struct tag %s: %v", f.Tag.Value, err)
		return nil
	}
	if !ok {
		return nil
	}
	t, errs := parseTag(v)
	for _, e := range errs {
		if t.counter && !t.id && len(f.Names) > 0 && strings.HasPrefix(e, counterNeedsID) {
			// Name the field: the tag alone does not say which one.
			e = counterNeedsID + " on " + structName + "." + f.Names[0].Name + e[len(counterNeedsID):]
		}
		p.errorf(f.Tag.Pos(), "%s", e)
	}
	return &t
}

func (p *loader) aggregate(d structDecl, marker int) *model.Aggregate {
	name := d.spec.Name.Name
	a := &model.Aggregate{
		Name:       name,
		Collection: name,
		Strategy:   model.ETF,
		Pos:        p.position(d.spec.Name.Pos()),
		File:       d.file,
	}
	if d.spec.TypeParams != nil && len(d.spec.TypeParams.List) > 0 {
		p.errorf(d.spec.Name.Pos(), "aggregate %s: generic types cannot be aggregates", name)
		return nil
	}
	if !d.spec.Name.IsExported() {
		p.errorf(d.spec.Name.Pos(), "aggregate type %s is unexported; export it (the generated repositories, %sRepository and the others, are named after it)", name, exported(name))
	}
	obj := p.pkg.TypesInfo.Defs[d.spec.Name]
	if obj == nil {
		return nil
	}
	stype, ok := obj.Type().Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	a.StructType = obj.Type()

	// The marker.
	mf, mt := d.st.Fields.List[marker], d.tags[marker]
	if len(mf.Names) != 1 || mf.Names[0].Name != "_" {
		p.errorf(mf.Tag.Pos(), "aggregate marker %s must be on a blank field `_ struct{}`", mt.text)
	} else if tv, ok := p.pkg.TypesInfo.Types[mf.Type]; ok && !isEmptyStruct(tv.Type) {
		p.errorf(mf.Tag.Pos(), "aggregate marker %s must be on a blank field of type struct{}", mt.text)
	}
	for _, o := range mt.opts {
		if contains(fieldOptions, o) {
			p.errorf(mf.Tag.Pos(), "option %s in noam tag %s belongs on a field, not on the aggregate marker", o, mt.text)
		}
	}
	if mt.collection != "" {
		a.Collection, a.CollectionPos = mt.collection, p.position(mf.Tag.Pos())
	}
	if mt.strategy == "eao" {
		a.Strategy = model.EAO
	}
	partitionPos := mf.Tag.Pos()

	var specs []lookupSpec
	counter, counterPos := false, token.NoPos
	fieldIndex := 0
	byKey := map[string]*model.Field{}
	for fi, f := range d.st.Fields.List {
		tag := d.tags[fi]
		if fi != marker && tag != nil && tag.aggregate {
			p.errorf(f.Tag.Pos(), "aggregate %s has a second aggregate marker %s; keep one marker and put all its options in it", name, tag.text)
		}
		if len(f.Names) == 0 {
			// Embedded field.
			a.StructFields = append(a.StructFields, model.StructField{Name: embeddedName(f.Type), Type: stype.Field(fieldIndex).Type()})
			fieldIndex++
			if tag == nil || !tag.skip {
				p.errorf(f.Type.Pos(), "aggregate %s: embedded field %s is not supported; name the field or tag it `noam:\"-\"`", name, embeddedName(f.Type))
			}
			continue
		}
		if tag != nil && !tag.aggregate {
			for _, o := range tag.opts {
				if contains(markerOptions, o) {
					p.errorf(f.Tag.Pos(), "option %s in noam tag %s belongs on the aggregate marker `_ struct{} `noam:\"aggregate,...\"``", o, tag.text)
				}
			}
		}
		for _, id := range f.Names {
			ft := stype.Field(fieldIndex).Type()
			fieldIndex++
			a.StructFields = append(a.StructFields, model.StructField{Name: id.Name, Type: ft})
			if fi == marker || (tag != nil && tag.aggregate) {
				continue
			}
			if id.Name == "_" {
				if tag != nil {
					p.errorf(f.Tag.Pos(), "noam tag %s on a blank field; only the aggregate marker belongs there", tag.text)
				}
				continue
			}
			if !id.IsExported() {
				if tag != nil {
					p.errorf(f.Tag.Pos(), "noam tag %s on unexported field %s.%s: unexported fields are not persisted; export the field or remove the tag", tag.text, name, id.Name)
				}
				continue
			}
			fld := &model.Field{GoName: id.Name, Key: keyOf(f, id.Name), Type: ft, Pos: p.position(id.Pos())}
			if fld.Key == "-" {
				if tag != nil && !tag.skip {
					p.errorf(f.Tag.Pos(), "field %s.%s is left out by bson:\"-\", so noam tag %s means nothing; remove the bson tag or the noam tag", name, id.Name, tag.text)
				}
				continue
			}
			if tag == nil {
				tag = &tagSpec{}
			}
			if tag.skip {
				continue
			}
			fld.IsID, fld.IsVersion = tag.id, tag.version
			fld.IsCreated, fld.IsUpdated = tag.created, tag.updated
			stamp := tag.created || tag.updated
			if tag.counter && tag.id {
				counter, counterPos = true, f.Tag.Pos()
			}
			for _, r := range tag.refs {
				fld.Refs = append(fld.Refs, model.Ref{Path: fld.Key, GoPath: fld.GoName, Target: r, Type: ft, Pos: p.position(id.Pos()), Decl: name + "." + id.Name})
			}
			if stamp {
				p.timestamp(a, fld, tag, f.Tag.Pos())
			}
			if tag.expires {
				p.expires(a, fld, tag, f.Tag.Pos())
			}
			if tag.add {
				p.addable(a, fld, tag, f.Tag.Pos())
			}
			if tag.lookup {
				if tag.expires {
					p.errorf(f.Tag.Pos(), "field %s.%s: noam tag %s: the expiry field cannot have a lookup (lookups index strings and integers, not times)", name, id.Name, tag.text)
				} else if stamp {
					p.errorf(f.Tag.Pos(), "field %s.%s: noam tag %s: a timestamp cannot have a lookup (every write changes updated, and lookups index strings and integers, not times)", name, id.Name, tag.text)
				} else if fld.IsID || fld.IsVersion {
					p.errorf(f.Tag.Pos(), "field %s.%s: the id and version fields cannot have a lookup (the block key is its own index)", name, id.Name)
				} else {
					lk := tag.lookupSpec(f.Tag.Pos(), fld.Key, fld.GoName, ft)
					lk.field = fld
					specs = append(specs, lk)
				}
			}
			if fld.IsID && fld.IsVersion {
				p.errorf(f.Tag.Pos(), "field %s.%s cannot be both id and version", name, id.Name)
			}
			if fld.IsID {
				if a.ID != nil {
					p.errorf(id.Pos(), "aggregate %s has two id fields: %s and %s; exactly one field is the block key", name, a.ID.GoName, id.Name)
				} else {
					a.ID = fld
				}
				if parts, ok := p.keyParts(ft); ok {
					a.IDParts = parts
				} else if !isKeyType(ft) {
					p.errorf(id.Pos(), "id field %s.%s has type %s; a block key must be a string or integer type, or a struct of them (a composite key)", name, id.Name, p.typeString(ft))
				}
				if tag.uuid != "" && !tag.counter {
					p.checkUUID(a, fld, ft, tag.uuid, f.Tag.Pos())
				}
			}
			if fld.IsVersion {
				if a.Version != nil {
					p.errorf(id.Pos(), "aggregate %s has two version fields: %s and %s", name, a.Version.GoName, id.Name)
				} else {
					a.Version = fld
				}
				if b, ok := ft.Underlying().(*types.Basic); !ok || b.Kind() != types.Int64 {
					p.errorf(id.Pos(), "version field %s.%s has type %s; it must be int64", name, id.Name, p.typeString(ft))
				}
			}
			// Access paths use these characters (address.zip, rounds[3]);
			// keys a particular store cannot hold are refused by the
			// generator for that store (templates.Store.Reserved).
			if fld.Key == "" || strings.ContainsAny(fld.Key, ".[]/") {
				p.errorf(id.Pos(), "field %s.%s has entry key %q, which is not a valid entry key (it may not be empty or contain . [ ] /)", name, id.Name, fld.Key)
			}
			if prev := byKey[fld.Key]; prev != nil {
				p.errorf(id.Pos(), "fields %s and %s of %s both have entry key %q", prev.GoName, id.Name, name, fld.Key)
			}
			byKey[fld.Key] = fld
			if !fld.IsID {
				refs, nested := p.nested(ft, fld.Key, fld.GoName, map[types.Type]bool{})
				fld.Refs = append(fld.Refs, refs...)
				for _, n := range nested {
					n.field = fld
					specs = append(specs, n)
				}
			}
			a.Fields = append(a.Fields, fld)
		}
	}
	if a.ID == nil {
		p.errorf(d.spec.Name.Pos(), "aggregate %s has no id field; tag the block key field `noam:\"id\"`", name)
	}
	if counter {
		p.checkCounter(a, counterPos)
	}
	p.buildLookups(a, specs)
	p.partitions(a, mt.partitions, partitionPos)
	return a
}

// timestamp checks the created or updated field fld, tagged tag at pos,
// and records it in a.
func (p *loader) timestamp(a *model.Aggregate, fld *model.Field, tag *tagSpec, pos token.Pos) {
	what := fld.Timestamp()
	switch {
	case fld.IsCreated && fld.IsUpdated:
		p.errorf(pos, "field %s.%s cannot be both created and updated (noam tag %s): Create sets both, every later write only updated; tag two time.Time fields", a.Name, fld.GoName, tag.text)
		return
	case fld.IsID:
		p.errorf(pos, "field %s.%s cannot be both id and %s (noam tag %s)", a.Name, fld.GoName, what, tag.text)
		return
	case fld.IsVersion:
		p.errorf(pos, "field %s.%s cannot be both version and %s (noam tag %s)", a.Name, fld.GoName, what, tag.text)
		return
	}
	if !isTime(fld.Type) {
		p.errorf(pos, "%s field %s.%s has type %s; noam tag %s needs a time.Time field", what, a.Name, fld.GoName, p.typeString(fld.Type), tag.text)
	}
	if a.Strategy == model.EAO {
		p.errorf(pos, "%s field %s.%s (noam tag %s): under strategy=eao the field is inside the root entry, which entry-level writes (AppendF, SetFAt) do not rewrite and a Put replaces whole, so it cannot be written alone; timestamps need strategy=etf", what, a.Name, fld.GoName, tag.text)
	}
	prev := &a.Created
	if fld.IsUpdated {
		prev = &a.Updated
	}
	if *prev != nil {
		p.errorf(pos, "aggregate %s has two %s fields: %s and %s (noam tag %s)", a.Name, what, (*prev).GoName, fld.GoName, tag.text)
		return
	}
	*prev = fld
}

// expires checks the expiry field fld, tagged tag at pos, and records it
// in a.
func (p *loader) expires(a *model.Aggregate, fld *model.Field, tag *tagSpec, pos token.Pos) {
	fld.IsExpires = true
	switch {
	case fld.IsID, fld.IsVersion, fld.IsCreated, fld.IsUpdated:
		other := "id"
		switch {
		case fld.IsVersion:
			other = "version"
		case fld.IsCreated:
			other = "created"
		case fld.IsUpdated:
			other = "updated"
		}
		p.errorf(pos, "field %s.%s cannot be both %s and expires (noam tag %s): tag a time.Time field of its own `noam:\"expires\"`", a.Name, fld.GoName, other, tag.text)
		return
	}
	if !isTime(fld.Type) {
		p.errorf(pos, "expires field %s.%s has type %s; noam tag %s needs a time.Time field (the zero time: never expires)", a.Name, fld.GoName, p.typeString(fld.Type), tag.text)
	}
	if a.Expires != nil {
		p.errorf(pos, "aggregate %s has two expires fields: %s and %s (noam tag %s); an aggregate expires at one time", a.Name, a.Expires.GoName, fld.GoName, tag.text)
		return
	}
	a.Expires = fld
}

// addable checks the number field fld that writes add to (noam:"add"),
// tagged tag at pos.
func (p *loader) addable(a *model.Aggregate, fld *model.Field, tag *tagSpec, pos token.Pos) {
	fld.IsAdd = true
	var other string
	switch {
	case fld.IsID:
		other = "the id (the block key never changes)"
	case fld.IsVersion:
		other = "the version (every write bumps it)"
	case tag.lookup:
		other = "a lookup (an addition writes the field alone, without the index)"
	case fld.IsCreated || fld.IsUpdated || fld.IsExpires:
		other = "a time"
	}
	if other != "" {
		p.errorf(pos, "field %s.%s (noam tag %s): an add field cannot be %s; tag a field of its own `noam:\"add\"`", a.Name, fld.GoName, tag.text, other)
		return
	}
	b, ok := fld.Type.Underlying().(*types.Basic)
	if !ok || b.Info()&types.IsInteger == 0 || b.Info()&types.IsUnsigned != 0 {
		p.errorf(pos, "add field %s.%s has type %s; noam tag %s needs a signed integer field (int, int8, int16, int32, int64)", a.Name, fld.GoName, p.typeString(fld.Type), tag.text)
		return
	}
	if a.Strategy == model.EAO {
		p.errorf(pos, "add field %s.%s (noam tag %s): under strategy=eao the field is inside the root entry, which the store cannot add to alone; add fields need strategy=etf", a.Name, fld.GoName, tag.text)
	}
}

// isTime reports whether t is time.Time.
func isTime(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

// partitions marks the fields named by the marker's partition= options.
// They are named by entry key.
func (p *loader) partitions(a *model.Aggregate, names []string, pos token.Pos) {
	for _, pname := range names {
		var fld *model.Field
		var keys []string
		for _, f := range a.Fields {
			keys = append(keys, f.Key)
			if f.Key == pname {
				fld = f
			}
		}
		switch {
		case fld == nil:
			msg := fmt.Sprintf("partition=%s: %s has no persisted field %q", pname, a.Name, pname)
			var byGo *model.Field
			for _, f := range a.Fields {
				if f.GoName == pname {
					byGo = f
				}
			}
			if byGo != nil {
				msg = fmt.Sprintf("partition=%s: %s has no persisted field with entry key %q; partition= takes the entry key, not the Go name: write partition=%s", pname, a.Name, pname, byGo.Key)
			} else if s := suggest(pname, keys); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			p.errorf(pos, "%s", msg)
		case fld.Partition:
			p.errorf(pos, "partition=%s is given twice", pname)
		case fld.IsID || fld.IsVersion:
			p.errorf(pos, "partition=%s: the id and version fields cannot be partitioned", pname)
		default:
			sl, ok := fld.Type.Underlying().(*types.Slice)
			if !ok || isByteSlice(fld.Type) {
				p.errorf(pos, "partition=%s: field %s.%s has type %s; only slice fields can be partitioned", pname, a.Name, fld.GoName, p.typeString(fld.Type))
				continue
			}
			fld.Partition = true
			fld.Elem = sl.Elem()
		}
	}
}

func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return embeddedName(t.X)
	case *ast.IndexListExpr:
		return embeddedName(t.X)
	}
	return "?"
}

// plainStruct checks noam tags on a struct that is not an aggregate: only
// refs and lookups (of the aggregates holding it) belong there.
func (p *loader) plainStruct(d structDecl) {
	for i, f := range d.st.Fields.List {
		tag := d.tags[i]
		if tag == nil {
			continue
		}
		fname := embeddedName(f.Type)
		if len(f.Names) > 0 {
			fname = f.Names[0].Name
			if fname == "_" {
				p.errorf(f.Tag.Pos(), "noam tag %s on a blank field; only the aggregate marker belongs there", tag.text)
				continue
			}
			if !f.Names[0].IsExported() {
				p.errorf(f.Tag.Pos(), "noam tag %s on unexported field %s.%s: unexported fields are not persisted; export the field or remove the tag", tag.text, d.spec.Name.Name, fname)
				continue
			}
		}
		if bsonName(rawTag(f)) == "-" && !tag.skip {
			p.errorf(f.Tag.Pos(), "field %s.%s is left out by bson:\"-\", so noam tag %s means nothing; remove the bson tag or the noam tag", d.spec.Name.Name, fname, tag.text)
		}
		for _, o := range tag.opts {
			switch o {
			case "id", "version", "counter", "uuid":
				p.errorf(f.Tag.Pos(), "noam tag %s on %s.%s, but %s is not an aggregate; mark it with a field `_ struct{} `noam:\"aggregate\"``", tag.text, d.spec.Name.Name, fname, d.spec.Name.Name)
			case "add":
				p.errorf(f.Tag.Pos(), "noam tag %s on %s.%s: add belongs on a top-level integer field of an aggregate, not on a field of a plain struct (a nested value or a partition element)", tag.text, d.spec.Name.Name, fname)
			case "created", "updated", "expires":
				p.errorf(f.Tag.Pos(), "noam tag %s on %s.%s: %s belongs on a top-level time.Time field of an aggregate, not on a field of a plain struct (a nested value or a partition element)", tag.text, d.spec.Name.Name, fname, o)
			case "collection", "strategy", "partition":
				p.errorf(f.Tag.Pos(), "option %s in noam tag %s belongs on the aggregate marker `_ struct{} `noam:\"aggregate,...\"``", o, tag.text)
			}
		}
	}
}

// checkRefs verifies that every ref names an aggregate and has its id type.
func (p *loader) checkRefs(s *model.Schema) {
	reported := map[string]bool{}
	report := func(pos token.Position, msg string) {
		key := fmt.Sprintf("%s:%d:%d: %s", pos.Filename, pos.Line, pos.Column, msg)
		if !reported[key] {
			reported[key] = true
			p.errs = append(p.errs, model.Error{Pos: pos, Msg: msg})
		}
	}
	var names []string
	for _, a := range s.Aggregates {
		names = append(names, a.Name)
	}
	for _, a := range s.Aggregates {
		for _, f := range a.Fields {
			for _, r := range f.Refs {
				// A ref declared in a plain struct is reported at its own
				// field, once, whichever aggregates embed the struct.
				what := r.Decl
				target := s.Aggregate(r.Target)
				if target == nil {
					msg := fmt.Sprintf("%s: ref=%s names no aggregate in package %s", what, r.Target, s.PkgName)
					if sg := suggest(r.Target, names); sg != "" {
						msg += fmt.Sprintf("; did you mean %q?", sg)
					}
					report(r.Pos, msg)
					continue
				}
				if target.ID == nil {
					continue
				}
				rt := r.Type
				for {
					if sl, ok := rt.Underlying().(*types.Slice); ok && !isByteSlice(rt) {
						rt = sl.Elem()
						continue
					}
					if pt, ok := rt.(*types.Pointer); ok {
						rt = pt.Elem()
						continue
					}
					break
				}
				if !types.Identical(rt, target.ID.Type) {
					report(r.Pos, fmt.Sprintf("%s has type %s, but ref=%s needs %s's id type %s", what, p.typeString(r.Type), r.Target, r.Target, p.typeString(target.ID.Type)))
				}
			}
		}
	}
}

// checkCollections makes sure that no two aggregates share a collection:
// every store would mix their data. The names each store derives from a
// collection (index tables, buckets) and the names it keeps for itself are
// checked by the generator for the stores chosen (templates.Store.Names).
func (p *loader) checkCollections(s *model.Schema) {
	seen := map[string]*model.Aggregate{}
	for _, a := range s.Aggregates {
		if prev, ok := seen[a.Collection]; ok {
			pos := a.Pos
			if a.CollectionPos.IsValid() {
				pos = a.CollectionPos // the marker tag that names the collection
			}
			p.errorAt(pos, "the collection of aggregate %s is named %q, like the collection of aggregate %s; give it another name (collection=NAME on the aggregate marker)", a.Name, a.Collection, prev.Name)
			continue
		}
		seen[a.Collection] = a
	}
}
