// Package templates holds the registry of store templates and the jennifer
// helpers they share. Each store lives in its own sub-package
// (templates/mongo, templates/bolt, ...) and registers itself in init; a new
// store is a new folder here plus its runtime adapter.
package templates

import (
	"fmt"
	"go/token"
	"go/types"
	"sort"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
	"github.com/fatih/structtag"

	"github.com/noamgen/noamgen/model"
)

// Import paths used by generated code.
const (
	RuntimePkg = "github.com/noamgen/noamgen/runtime"
	ContextPkg = "context"
	IterPkg    = "iter"
)

// Store shapes one store's repository for one aggregate.
type Store struct {
	// Name is the -store flag value and the file name part, e.g. "mongo".
	Name string
	// Title is the name inside type names, e.g. "Mongo" in GameMongoRepository.
	Title string
	// Handle is the Go type of the handle the store's constructors take,
	// as generated docs write it, e.g. "*mongo.Database". No two stores
	// may take the same type: New<T>Repository picks the store by it.
	Handle string
	// Imports maps import paths to the package names generated code uses.
	Imports map[string]string
	// Generate adds the store's repository for a to f.
	Generate func(f *jen.File, s *model.Schema, a *model.Aggregate)
	// Reserved says why the store cannot hold a top-level entry with the
	// given key ("" when it can), so that the generator refuses it with a
	// positioned error instead of writing code that fails at run time.
	Reserved func(key string) string
	// Collection says why the store cannot name a collection name, as the
	// end of a sentence after `collection name "x" of T` ("" when it
	// can). Optional.
	Collection func(name string) string
	// Names lists what the store names after aggregate a besides its
	// collection (index tables, buckets, key prefixes), so that the
	// generator refuses a schema in which two things would share a name
	// in the store. Optional.
	Names func(a *model.Aggregate) []Name
	// Own lists the names the store keeps for itself whatever the schema
	// (e.g. the collection of counters).
	Own []Name
	// Conn lists the settings with which a program noamgen runs reaches a
	// live store of this kind (`noamgen explain -sample` reads it,
	// `noamgen migrate` writes it): each a command-line flag with an
	// environment variable as its default. The first names the store: a
	// command given it, and no -store, works on this store. Nil: the
	// commands cannot reach the store.
	Conn []Conn
	// Program says how the migration program that `noamgen migrate`
	// writes opens the store from Conn's values; nil when it cannot.
	Program *Program
	// Test says how a generated test opens an empty store of this kind
	// (the layout check of every golden case, internal/layoutcheck); nil
	// when no test can.
	Test *Test
}

// Test is how a test file that the layout check generates opens an empty
// store (see internal/layoutcheck). Setup is Go statements run once per
// test, with t (*testing.T) in scope, that declare what Open uses; Open is
// a Go expression of the store adapter with %[1]s standing for the
// descriptor variable (_gameDesc). Teardown, optional, is a Go statement
// run once after every package's check (one test binary runs them all):
// it stops a server Setup shares between the checks. Imports are the
// packages the three use. Module is "" when the test server runs in the
// main module's tests, or the module (relative to the main module's root)
// whose tests run it ("integration" for MongoDB on FerretDB), which then
// checks the store.
type Test struct {
	Imports               []string
	Setup, Open, Teardown string
	Module                string
}

// Conn is one connection setting of a store (Store.Conn): the flag -Name,
// defaulting to $Env. Read describes it for a command that only reads,
// Write for one that writes (Read when empty).
type Conn struct {
	Name, Env   string
	Read, Write string
}

// Program is how a main package that noamgen writes opens a store (see
// migrate.Program): Open is Go statements, in a function returning int,
// with ctx (context.Context) and conn (map[string]string, Conn's values
// by name) in scope, that declare what Args uses, return 2 for a missing
// or malformed setting and 1 when the store cannot be reached (writing
// why to os.Stderr, prefixed "noamgen migrate: "), and defer the close.
// Args are the arguments of the store's generated constructors, before
// the options. Imports are the packages Open and Args use besides
// context, fmt and os.
type Program struct {
	Imports []string
	Open    string
	Args    string
}

// ConnSettings lists the connection settings of the registered stores,
// in store order, each name once (the first store's words win).
func ConnSettings() []Conn {
	var out []Conn
	seen := map[string]bool{}
	for _, st := range StoreNames() {
		for _, c := range registry[st].Conn {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Name is a name a store gives to something it stores: What says what
// ("the bbolt index bucket of lookup email of Member"), Pos where the
// schema asks for it (zero for Store.Own).
type Name struct {
	Name string
	What string
	Pos  token.Position
}

var registry = map[string]Store{}

// Register makes a store available to the generator.
func Register(s Store) {
	if _, dup := registry[s.Name]; dup {
		panic("templates: store " + s.Name + " registered twice")
	}
	if s.Handle == "" {
		panic("templates: store " + s.Name + " has no Handle")
	}
	for _, o := range registry {
		if o.Handle == s.Handle {
			// New<T>Repository could not tell the two apart.
			panic("templates: stores " + o.Name + " and " + s.Name + " both take a " + s.Handle)
		}
	}
	registry[s.Name] = s
}

// Lookup finds a registered store.
func Lookup(name string) (Store, bool) {
	s, ok := registry[name]
	return s, ok
}

// StoreNames lists the registered stores, sorted.
func StoreNames() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Repo is the name of the store-independent repository interface.
func Repo(a *model.Aggregate) string { return a.Name + "Repository" }

// Update is the name of the multi-entry update type.
func Update(a *model.Aggregate) string { return a.Name + "Update" }

// StoreRepo is the name of a store's repository type, e.g. GameMongoRepository.
func StoreRepo(a *model.Aggregate, store string) string { return a.Name + store + "Repository" }

// Opener names the store-independent constructor: NewGameRepository.
func Opener(a *model.Aggregate) string { return "New" + Repo(a) }

// OpenersVar names the set of the aggregate's stores: _gameStores.
func OpenersVar(a *model.Aggregate) string { return Private(a, "Stores") }

// Var is the parameter name for an aggregate value, e.g. "game".
func Var(a *model.Aggregate) string { return ParamName(a.Name) }

// ParamName is the parameter name for a value named name (a lookup or key
// part, e.g. "City" -> "city"), kept clear of keywords, predeclared names
// and the names generated method bodies use.
func ParamName(name string) string {
	v := LowerFirst(name)
	if reserved[v] || isKeyword(v) || types.Universe.Lookup(v) != nil {
		v += "Value"
	}
	return v
}

// Private names a package-level declaration that generated code makes for
// aggregate a and that users never call: Private(a, "Desc") == "_gameDesc".
// Every such name starts with an underscore (as stringer's _Day_name does),
// so that the names a package's own files (its tests included) declare,
// such as gameRepo or gameKeys, never clash with generated ones.
func Private(a *model.Aggregate, suffix string) string { return "_" + LowerFirst(a.Name) + suffix }

// Setter, Append, SetAt and ListElems name the entry-level methods.
func Setter(f *model.Field) string    { return "Set" + f.GoName }
func Append(f *model.Field) string    { return "Append" + f.GoName }
func SetAt(f *model.Field) string     { return "Set" + f.GoName + "At" }
func ListElems(f *model.Field) string { return "List" + f.GoName }

// Adder names the method, and the TUpdate field, that add to a number
// field (noam:"add").
func Adder(f *model.Field) string { return "Add" + f.GoName }

// AtField is the GoUpdate field that sets partition elements by index.
func AtField(f *model.Field) string { return f.GoName + "At" }

// KeyAppender names the generated function that appends a block key to a
// byte slice with the order-preserving key codec.
func KeyAppender(a *model.Aggregate) string { return "_append" + a.Name + "Key" }

// KeyReader names the generated function that reads a block key back.
func KeyReader(a *model.Aggregate) string { return "_read" + a.Name + "Key" }

// KeyCodecVar names the generated runtime.KeyCodec variable of an aggregate.
func KeyCodecVar(a *model.Aggregate) string { return Private(a, "Keys") }

// IDType renders the block key type.
func IDType(a *model.Aggregate) jen.Code { return Type(a.ID.Type) }

// Ctx is the `ctx context.Context` parameter.
func Ctx() jen.Code { return jen.Id("ctx").Qual(ContextPkg, "Context") }

// RT is a qualified name from the runtime package.
func RT(name string) *jen.Statement { return jen.Qual(RuntimePkg, name) }

// Page renders runtime.Page[T].
func Page(t jen.Code) *jen.Statement { return RT("Page").Types(t) }

// Type renders a go/types type as jennifer code, qualifying names from other packages.
func Type(t types.Type) *jen.Statement {
	switch u := t.(type) {
	case *types.Basic:
		return jen.Id(u.Name())
	case *types.Alias:
		return qualName(u.Obj(), nil)
	case *types.Named:
		var args []jen.Code
		if ta := u.TypeArgs(); ta != nil {
			for i := 0; i < ta.Len(); i++ {
				args = append(args, Type(ta.At(i)))
			}
		}
		return qualName(u.Obj(), args)
	case *types.Pointer:
		return jen.Op("*").Add(Type(u.Elem()))
	case *types.Slice:
		return jen.Index().Add(Type(u.Elem()))
	case *types.Array:
		return jen.Index(jen.Lit(int(u.Len()))).Add(Type(u.Elem()))
	case *types.Map:
		return jen.Map(Type(u.Key())).Add(Type(u.Elem()))
	case *types.Struct:
		var fields []jen.Code
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			var st *jen.Statement
			if f.Embedded() {
				st = Type(f.Type())
			} else {
				st = jen.Id(f.Name()).Add(Type(f.Type()))
			}
			if m := tagMap(u.Tag(i)); len(m) > 0 {
				st = st.Tag(m)
			}
			fields = append(fields, st)
		}
		return jen.Struct(fields...)
	case *types.Interface:
		if u.Empty() {
			return jen.Any()
		}
		return jen.Id(types.TypeString(u, nil))
	case *types.TypeParam:
		return jen.Id(u.Obj().Name())
	}
	return jen.Id(types.TypeString(t, nil))
}

func qualName(obj *types.TypeName, args []jen.Code) *jen.Statement {
	var s *jen.Statement
	if obj.Pkg() == nil {
		s = jen.Id(obj.Name())
	} else {
		s = jen.Qual(obj.Pkg().Path(), obj.Name())
	}
	if len(args) > 0 {
		s = s.Types(args...)
	}
	return s
}

func tagMap(tag string) map[string]string {
	if tag == "" {
		return nil
	}
	tags, err := structtag.Parse(tag)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, t := range tags.Tags() {
		m[t.Key] = strings.TrimPrefix(t.String(), t.Key+":")
		m[t.Key] = strings.Trim(m[t.Key], `"`)
	}
	return m
}

// KeyEncode renders an expression that appends the block key expression id
// to the byte slice b with the runtime key codec; a composite key appends
// its parts in order.
func KeyEncode(a *model.Aggregate, b, id jen.Code) *jen.Statement {
	if len(a.IDParts) == 0 {
		return EncodeValue(a.ID.Type, b, id)
	}
	out := jen.Add(b)
	for _, p := range a.IDParts {
		out = EncodeValue(p.Type, out, jen.Add(id).Dot(p.GoName))
	}
	return out
}

// LowerFirst lower-cases the leading upper-case run of an identifier
// (GameRound -> gameRound, ID -> id, URLPath -> urlPath).
func LowerFirst(s string) string {
	rs := []rune(s)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) {
		n--
	}
	for i := 0; i < n; i++ {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}

// Snake turns a Go identifier into snake_case (GameRound -> game_round).
func Snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reserved are the names generated function bodies use for parameters,
// locals and imported packages of the store-independent file (store files
// hold only a constructor): a parameter named after a lookup or key part
// must not shadow them. Store templates add no names here.
var reserved = map[string]bool{
	"ctx": true, "id": true, "ids": true, "r": true, "u": true, "e": true, "i": true, "v": true, "q": true,
	"req": true, "c": true, "b": true, "s": true, "keys": true, "root": true,
	"runtime": true, "maps": true, "slices": true, "iter": true, "context": true,
}

func isKeyword(s string) bool {
	switch s {
	case "break", "case", "chan", "const", "continue", "default", "defer", "else",
		"fallthrough", "for", "func", "go", "goto", "if", "import", "interface",
		"map", "package", "range", "return", "select", "struct", "switch", "type", "var":
		return true
	}
	return false
}

// Doc wraps words into // comment lines of at most 76 columns.
func Doc(format string, args ...any) *jen.Statement {
	text := fmt.Sprintf(format, args...)
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > 76 {
				lines = append(lines, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		lines = append(lines, line)
	}
	s := jen.Null()
	for i, l := range lines {
		if i > 0 {
			s = s.Line()
		}
		s = s.Comment(l)
	}
	return s.Line()
}

// EntryList describes an aggregate's entries for doc comments, e.g.
// "firstPlayer, secondPlayer, rounds[i]".
func EntryList(a *model.Aggregate) string {
	var parts []string
	for _, e := range a.Entries() {
		switch {
		case e.Partition:
			parts = append(parts, e.ElemNotation())
		case e.Key == "":
			parts = append(parts, "ε (the root entry)")
		default:
			parts = append(parts, e.Key)
		}
	}
	return strings.Join(parts, ", ")
}

// Multi renders a composite literal's braces with one element a line.
func Multi(items ...jen.Code) *jen.Statement {
	return jen.CustomFunc(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, func(g *jen.Group) {
		for _, it := range items {
			g.Add(it)
		}
	})
}
