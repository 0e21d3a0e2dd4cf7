package parser

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/noamgen/noamgen/model"
)

// camel joins the steps of a path into one lower-camel identifier:
// "games[].game" -> "gamesGame", "Address.City" -> "addressCity".
func camel(path string) string {
	var out strings.Builder
	for i, step := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		if i == 0 {
			out.WriteString(lowerFirst(step))
		} else {
			out.WriteString(exported(step))
		}
	}
	return out.String()
}

// goTitle is the exported name of a Go selector path from the aggregate,
// its steps joined as written (Address.Zip -> AddressZip, SKU -> SKU,
// Games[].Game -> GamesGame): lookup methods follow the Go field names,
// initialisms included, as setters do.
func goTitle(goPath string) string {
	var out strings.Builder
	for _, step := range strings.FieldsFunc(goPath, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		out.WriteString(exported(step))
	}
	return out.String()
}

func exported(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// keyOf is the entry key of a field: its bson tag name, else the field name
// with a lower-case first word.
func keyOf(f *ast.Field, goName string) string {
	if b := bsonName(rawTag(f)); b != "" {
		return b
	}
	return lowerFirst(goName)
}

// lowerFirst lower-cases the first word of an identifier: Name -> name,
// ID -> id, URLPath -> urlPath, FirstName -> firstName.
func lowerFirst(s string) string {
	rs := []rune(s)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	switch {
	case n == 0:
		return s
	case n == 1 || n == len(rs):
		// "Name" -> "name", "ID" -> "id"
	default:
		n-- // "URLPath": keep the P of "Path"
	}
	for i := 0; i < n; i++ {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}

func (p *loader) typeString(t types.Type) string {
	return types.TypeString(t, types.RelativeTo(p.pkg.Types))
}

func isEmptyStruct(t types.Type) bool {
	st, ok := t.Underlying().(*types.Struct)
	return ok && st.NumFields() == 0
}

func isByteSlice(t types.Type) bool {
	sl, ok := t.Underlying().(*types.Slice)
	if !ok {
		return false
	}
	b, ok := sl.Elem().Underlying().(*types.Basic)
	return ok && b.Kind() == types.Byte
}

func isKeyType(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	if !ok {
		return false
	}
	return b.Info()&(types.IsString|types.IsInteger) != 0 && b.Kind() != types.UntypedInt && b.Kind() != types.Uintptr
}

// keyParts returns the parts of a composite key type: a struct whose
// fields are all exported strings or integers.
func (p *loader) keyParts(t types.Type) ([]model.KeyPart, bool) {
	st, ok := t.Underlying().(*types.Struct)
	if !ok || st.NumFields() == 0 {
		return nil, false
	}
	var parts []model.KeyPart
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() || !isKeyType(f.Type()) {
			return nil, false
		}
		key := lowerFirst(f.Name())
		if b := bsonName(st.Tag(i)); b != "" {
			key = b
		}
		parts = append(parts, model.KeyPart{GoName: f.Name(), Key: key, Type: f.Type()})
	}
	return parts, true
}

// checkUUID validates `noam:"id,uuid"` on id field fld of type t.
func (p *loader) checkUUID(a *model.Aggregate, fld *model.Field, t types.Type, version string, pos token.Pos) {
	if b, ok := t.Underlying().(*types.Basic); ok && b.Kind() == types.String {
		a.UUID = version
		return
	}
	p.errorf(pos, "uuid on %s.%s: the id has type %s; a UUID id is a string (new UUIDs are written in the canonical form, 36 characters)", a.Name, fld.GoName, p.typeString(t))
}

// checkCounter validates `noam:"id,counter"`.
func (p *loader) checkCounter(a *model.Aggregate, pos token.Pos) {
	if a.ID == nil {
		return
	}
	a.Counter = true
	last := a.ID.Type
	if len(a.IDParts) > 0 {
		last = a.IDParts[len(a.IDParts)-1].Type
	}
	if model.KindOf(last) == model.KeyString || !isKeyType(last) {
		what := "the id"
		if len(a.IDParts) > 0 {
			what = "the last part of the composite id"
		}
		p.errorf(pos, "counter on %s.%s: %s must be an integer type to be allocated from a counter", a.Name, a.ID.GoName, what)
	}
}

// decls lists the top-level names the package's own files declare (noamgen's
// generated files are overlaid empty while loading, so they declare none),
// and those of its in-package test files, which go/packages does not load:
// the generator refuses to generate a name declared there.
func (p *loader) decls(dir string) map[string]token.Position {
	out := map[string]token.Position{}
	add := func(fset *token.FileSet, f *ast.File) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name != "_" && d.Name.Name != "init" {
					out[d.Name.Name] = p.rel2(fset.Position(d.Name.Pos()))
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						out[sp.Name.Name] = p.rel2(fset.Position(sp.Name.Pos()))
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.Name != "_" {
								out[n.Name] = p.rel2(fset.Position(n.Pos()))
							}
						}
					}
				}
			}
		}
	}
	for _, f := range p.pkg.Syntax {
		add(p.pkg.Fset, f)
	}
	tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	fset := token.NewFileSet()
	for _, name := range tests {
		f, err := goparser.ParseFile(fset, name, nil, goparser.SkipObjectResolution)
		if err != nil || f.Name.Name != p.pkg.Name {
			continue // a broken or external test file: go test reports it
		}
		add(fset, f)
	}
	return out
}

// rel2 makes a position's file name relative, as errors show them.
func (p *loader) rel2(pos token.Position) token.Position {
	pos.Filename = p.rel(pos.Filename)
	return pos
}
